"""The pieces the reading benchmarks stand on: planted-fact documents, and MemAgent's reference
loop run against the real vLLM server (the benchmark's figures mean nothing if these are wrong)."""

from __future__ import annotations

import time

import pytest

from benchmarks.planted_facts import BOOKS, build_documents, load_book, normalize
from benchmarks.reference_loop import read_reference
from benchmarks.run import HELD_OUT_BOOK_QUESTIONS, LONG_BOOK, cpu_seconds, held_out_questions, table
from tests.conftest import LIGHTHOUSE
from training.book_questions import load_questions, squash
from training.tasks import HELD_OUT_BOOKS


def test_planted_documents_hold_every_fact_once_and_nothing_else_answers(tokenizer):
    docs = build_documents(tokenizer, BOOKS, n=3, facts_per_doc=4, doc_tokens=1024, seed=1)
    assert len(docs) == 3
    for doc in docs:
        assert len(doc.facts) == 4 and abs(doc.doc_tokens - 1024) <= 8
        positions = [doc.text.index(f.sentence) for f in doc.facts]
        assert positions == sorted(positions) and all(doc.text.count(f.sentence) == 1 for f in doc.facts)
        window = doc.text
        for f in doc.facts:
            window = window.replace(" " + f.sentence, "")
        for f in doc.facts:  # the planted sentence is the only way to each answer
            assert normalize(f.gold) not in normalize(window) and normalize(f.gold) not in normalize(f.question)
        # spread over the document, not bunched at one end
        assert positions[-1] - positions[0] > len(doc.text) / 3


@pytest.mark.integration
@pytest.mark.model
def test_reference_loop_makes_one_request_per_chunk_per_question(vllm_engine, tokenizer):
    chunk_tokens, max_new = 64, 16
    chunks = -(-len(tokenizer.encode(LIGHTHOUSE.strip(), add_special_tokens=False)) // chunk_tokens)
    assert chunks >= 2
    items = [("Who keeps the lighthouse?", LIGHTHOUSE), ("What colour is the door?", LIGHTHOUSE)]
    results = read_reference(
        vllm_engine.base_url, vllm_engine.model_name(), tokenizer, items, chunk_tokens, max_new, concurrency=2
    )
    assert len(results) == 2
    for r in results:
        assert r.output.strip() and r.memory.strip()
        # every update prompt holds a whole chunk: more prompt tokens than the chunks themselves
        assert r.prompt_tokens > chunks * chunk_tokens
        # one reply per chunk plus the answer, none longer than max_new
        assert chunks + 1 <= r.completion_tokens <= (chunks + 1) * max_new


def test_markdown_table():
    assert table(["a", "b"], [[1, "x"], [2, "y"]]).splitlines() == ["| a | b |", "|---|---|", "| 1 | x |", "| 2 | y |"]


def test_cpu_seconds_count_work_not_waiting():
    # the benchmarks' CPU clock (/proc) grows with work, not with waiting
    before = cpu_seconds("self")
    time.sleep(0.5)
    slept = cpu_seconds("self") - before
    started = time.process_time()
    while time.process_time() - started < 0.5:
        pass
    worked = cpu_seconds("self") - before - slept
    assert slept < 0.25
    assert 0.4 <= worked < 1.0


def test_the_throughput_questions_are_held_out_and_answered_inside_the_excerpt():
    text = load_book(BOOKS / LONG_BOOK)
    excerpt = text[: len(text) // 40]
    questions = held_out_questions(excerpt, 3)
    assert [q.book for q in questions] == [LONG_BOOK] * 3 and LONG_BOOK.removesuffix(".txt") in HELD_OUT_BOOKS
    assert all(squash(q.evidence) in squash(excerpt) for q in questions)
    in_file_order = [q for q in load_questions(HELD_OUT_BOOK_QUESTIONS) if squash(q.evidence) in squash(excerpt)]
    assert questions == in_file_order[:3]
    with pytest.raises(SystemExit, match="read more tokens"):  # too short an excerpt for 8
        held_out_questions(text[:20_000], 8)
