"""The capture probe's judging (benchmarks/capture_probe.py) on a hand-made scored document: the memory streamed
chunk by chunk, evidence recall, false keeps of "No" questions and the evidence's rank inside its chunk."""

from __future__ import annotations

import doctest

import numpy as np

from benchmarks import capture_probe
from benchmarks.capture_probe import chunk_rank, final_memory, judge, table
from training.tasks import Task

SENTENCES = ["The sun shone.", "Ohio law governs this Agreement.", "Fees are due monthly.", "Nothing here."]
TEXT = " ".join(SENTENCES)


def _read(scores: list[list[float]], tasks: list[Task]) -> dict:
    spans, at = [], 0
    for s in SENTENCES:
        spans.append((at, at + len(s)))
        at += len(s) + 1
    return {
        "text": TEXT,
        "tasks": tasks,
        "spans": spans,
        "chunk_of": np.array([0, 0, 1, 1]),
        "chunks": 2,
        "tokens": [5, 8, 6, 4],
        "scores": np.array(scores, dtype=float),
    }


LAW = Task(
    "c:law", TEXT, "Which law governs?", ("Ohio",), ("Ohio law governs this Agreement.",), "contract:Governing Law"
)
CAP = Task("c:cap", TEXT, "Is there a cap?", ("No",), (), "clause:Cap On Liability")


def test_doctests():
    assert doctest.testmod(capture_probe).failed == 0


def test_a_later_chunk_can_push_the_evidence_out_of_a_small_memory():
    read = _read([[0.0, 2.0, 3.0, 1.0], [0.0, 0.0, 0.0, 0.0]], [LAW, CAP])
    assert [s.text for s in final_memory(read, 0, 10, -np.inf)] == ["Fees are due monthly."]
    assert [s.text for s in final_memory(read, 0, 20, -np.inf)] == SENTENCES[1:3]
    law, cap = judge(read, 20, -np.inf)
    assert law["held"] and law["overlap"] and cap["kept"]
    law, cap = judge(read, 10, -np.inf)
    assert not law["held"] and not law["overlap"]
    # a threshold above every score keeps nothing: no false keep for the "No" question
    assert not judge(read, 20, 0.5)[1]["kept"]


def test_the_evidence_rank_counts_only_its_own_chunk_and_ties_go_to_the_earlier():
    read = _read([[5.0, 2.0, 9.0, 9.0]], [LAW])
    assert chunk_rank(read, 0, [(15, 47)]) == 2
    read = _read([[2.0, 2.0, 0.0, 0.0]], [LAW])
    assert chunk_rank(read, 0, [(15, 47)]) == 2
    assert chunk_rank(read, 0, []) is None


def test_table_counts_false_keeps_for_no_and_recall_otherwise():
    read = _read([[0.0, 2.0, 3.0, 1.0], [0.0, 0.0, 0.0, 0.0]], [LAW, CAP])
    rows = {r["group"]: r for r in table(judge(read, 20, -np.inf), "clauses")}
    assert rows["Governing Law"]["measure"] == "held" and rows["Governing Law"]["k"] == 1
    assert rows["gold No"]["measure"] == "kept" and rows["gold No"]["rate"] == 1.0


def test_the_margin_keeps_only_sentences_near_the_memorys_best_as_the_product_does():
    """`--keep/--margin` judges the agent's own rule: after each chunk, a kept sentence far below the best goes."""
    read = _read([[0.0, 2.0, 3.0, 1.0], [0.0, 0.0, 0.0, 0.0]], [LAW, CAP])
    assert [s.text for s in final_memory(read, 0, 100, -np.inf)] == SENTENCES
    assert [s.text for s in final_memory(read, 0, 100, 0.5, margin=1.5)] == SENTENCES[1:3]
    assert [s.text for s in final_memory(read, 0, 100, 0.5, margin=0.5)] == ["Fees are due monthly."]
