"""Evaluation logic against a scripted engine: batching by document, scoring, the report files."""

from __future__ import annotations

import json

import pytest

from inference.agent import AgentConfig, MemoryAgent
from tests.fakes import FakeEngine
from training.evaluate import batches, cases_json, evaluate, parse_lengths, summarize, write
from training.tasks import Task


def test_parse_lengths():
    assert parse_lengths("2048, 8K,book") == [2048, 8192, None]
    with pytest.raises(ValueError, match="bad length"):
        parse_lengths("2048,lots")


def test_batches_keep_a_documents_questions_together_and_sort_by_length():
    long, short, mid = "x" * 900, "y" * 10, "z" * 300
    tasks = [Task(f"{d[0]}{i}", d, "q", ("a",)) for d, k in ((long, 3), (short, 2), (mid, 2)) for i in range(k)]
    got = [[t.id for t in b] for b in batches(tasks, 4)]
    assert got == [["y0", "y1", "z0", "z1"], ["x0", "x1", "x2"]]
    # a document with more questions than a batch holds is split, never merged out of order
    assert [[t.id for t in b] for b in batches(tasks[:3], 2)] == [["x0", "x1"], ["x2"]]


def _answer_oslo(message: str) -> str:
    return r"It is \boxed{Oslo, Norway}" if "Your answer" in message else "The box is in Oslo."


def test_evaluate_scores_with_the_verifier_and_reads_one_document_once_per_chunk(tokenizer):
    doc = "The red box is in Oslo. " * 40
    tasks = [
        Task("a", doc, "Where is the box?", ("Oslo, Norway",), doc_tokens=1, kind="k"),
        Task("b", doc, "Where is the cat?", ("Paris",), doc_tokens=1, kind="k"),
        Task("c", doc, "Which city?", ("Oslo",), doc_tokens=1, kind="k"),
    ]
    engine = FakeEngine(tokenizer, _answer_oslo)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=64, memory_tokens=16, answer_tokens=8))
    results = evaluate(agent, tasks, "cases", lambda t: "g")
    assert [(r.task_id, r.answer, r.sub_em, r.exact_match) for r in results] == [
        ("a", "Oslo, Norway", True, True),
        ("b", "Oslo, Norway", False, False),
        ("c", "Oslo, Norway", True, False),
    ]
    chunks = len(agent.chunks(doc))
    assert len(engine.calls) == chunks + 1 and all(len(m) == 3 for m, _ in engine.calls)  # all three together
    assert results[0].final_memory == "The box is in Oslo." and results[0].chunks == chunks

    (row,) = summarize(results)
    assert row["n"] == 3 and row["sub_em"] == pytest.approx(2 / 3) and row["exact_match"] == pytest.approx(1 / 3)
    out = cases_json(results, ["d.txt"] * 3)
    assert out == {
        "cases": [
            {"document": "d.txt", "question": t.question, "answer": "Oslo, Norway", "correct": c}
            for t, c in zip(tasks, (True, False, True))
        ],
        "sub_em": pytest.approx(2 / 3),
        "exact_match": pytest.approx(1 / 3),
    }


def test_evaluate_reports_the_parties_named_of_a_parties_question(tokenizer):
    doc = "The red box is in Oslo. " * 5
    parties = 'Oslo Shipping AS ("Oslo"); Bergen Lines Ltd. ("Bergen")'
    tasks = [
        Task("p", doc, "Who are the parties?", (parties,), kind="contract:Parties"),
        Task("l", doc, "Which law?", ("Oslo",), kind="contract:Governing Law"),
    ]
    agent = MemoryAgent(FakeEngine(tokenizer, _answer_oslo), AgentConfig(chunk_tokens=64))
    results = evaluate(agent, tasks, "contracts", lambda t: t.kind)
    assert [(r.sub_em, r.party_recall) for r in results] == [(False, 0.5), (True, None)]  # one of two parties
    rows = {r["group"]: r for r in summarize(results)}
    assert rows["contract:Parties"]["party_recall"] == 0.5 and "party_recall" not in rows["contract:Governing Law"]


def test_write_makes_table_plot_and_json(tmp_path, tokenizer):
    doc = "The red box is in Oslo. " * 5
    tasks = [
        Task(f"t{i}", doc, "Where?", ("Oslo",) if i % 2 else ("Rome",), kind="single-needle", doc_tokens=2048)
        for i in range(4)
    ]
    agent = MemoryAgent(FakeEngine(tokenizer, _answer_oslo), AgentConfig(chunk_tokens=64))
    results = evaluate(agent, tasks, "synthetic", lambda t: "2K")
    contract = evaluate(
        agent,
        [Task("c", doc, "Law?", ("Oslo",), kind="contract:Governing Law")],
        "contracts",
        lambda t: "Governing Law",
    )
    out = {
        "config": {
            "label": "fake",
            "agent": {"template_set": "memagent", "chunk_tokens": 64, "memory_tokens": 9},
            "engine": "fake",
        },
        "summary": summarize(results + contract),
        "timing": [],
        "cases": [],
    }
    write(out, tmp_path)
    table = (tmp_path / "table.md").read_text()
    assert "| synthetic | 2K | single-needle | 2,048 | 4 | 50.0% | 0.0% |" in table  # "Oslo, Norway": sub-EM only
    assert "| contracts | Governing Law | contract:Governing Law | 0 | 1 | 100.0% | 0.0% |" in table
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "results.json").read_text())["summary"][0]["n"] == 4
