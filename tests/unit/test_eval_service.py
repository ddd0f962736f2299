"""The evaluation service's reading logic (app/services/evaluation.py) with a scripted engine: it reads the text
an upload parses to (not CUAD's text version), all of a document's questions in one pass, and moves the chunk
boundaries when asked. tests/integration/test_eval_path.py holds it to the app with the real model."""

from __future__ import annotations

from app.documents.parsing import parse
from app.services.evaluation import read_documents, uploaded_text
from inference.agent import AgentConfig, MemoryAgent
from inference.chunking import split_into_chunks
from tests.fakes import FakeEngine
from training.suites import suite_documents
from training.tasks import count_tokens


def _respond(message: str) -> str:
    return r"\boxed{Delaware}" if "boxed" in message else "Governed by Delaware law."


def test_reads_the_uploaded_pdf_all_questions_in_one_pass(tokenizer):
    doc = suite_documents("contracts", "held-out", limit=1)[0]  # cuad-000: a PDF, eight questions
    text = uploaded_text(doc)
    assert text == parse(doc.data()).text and text != doc.text  # the upload's text, not CUAD's .txt
    engine = FakeEngine(tokenizer, _respond)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=1024, memory_tokens=16, answer_tokens=8))
    results = read_documents(agent, [doc])
    chunks = split_into_chunks(text, tokenizer, 1024)
    assert len(engine.calls) == len(chunks) + 1
    assert all(len(messages) == len(doc.tasks) for messages, _ in engine.calls)  # every question, every step
    assert all(chunks[0].text(text) in m for m in engine.calls[0][0])
    assert [r.task_id for r in results] == [t.id for t in doc.tasks]
    assert {r.doc_tokens for r in results} == {count_tokens(tokenizer, text)}
    assert all(r.chunks == len(chunks) and r.memories[-1] == "Governed by Delaware law." for r in results)
    law = next(r for r in results if r.group == "Governing Law")
    assert law.where == ("correct" if law.sub_em else "never-entered")


def test_shift_tokens_moves_the_first_boundary(tokenizer):
    doc = suite_documents("contracts", "dev", limit=1)[0]
    text = uploaded_text(doc)
    engine = FakeEngine(tokenizer, _respond)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=512, memory_tokens=16, answer_tokens=8), shift_tokens=100)
    read_documents(agent, [doc], batch=3)  # at most 3 questions at once
    first = split_into_chunks(text, tokenizer, 512, 100)[0]
    assert first.end_token == 100
    assert first.text(text) in engine.calls[0][0][0] and len(engine.calls[0][0]) == 3
