"""Which source a training sample comes from: readers' feedback has a share of its own, however many
contract or QA questions there are beside it."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from training.config import DataConfig
from training.data import TaskSource
from training.evidence_tasks import EvidenceTasks
from training.tasks import Task


def _files(tmp_path: Path, feedback: int, cases: int) -> tuple[Path, Path]:
    (tmp_path / "doc.txt").write_text("The rent is 59 crowns, due on the first day of the month.")
    fb = tmp_path / "feedback.jsonl"
    fb.write_text(
        "".join(
            json.dumps(
                {
                    "reading_id": i,
                    "question": f"feedback question {i}?",
                    "verdict": "correct",
                    "answer": "59 crowns",
                    "document_path": "doc.txt",
                }
            )
            + "\n"
            for i in range(feedback)
        )
    )
    qa = tmp_path / "qa.jsonl"
    qa.write_text(
        "".join(
            json.dumps({"document": "doc.txt", "question": f"qa question {i}?", "answers": ["59"]}) + "\n"
            for i in range(cases)
        )
    )
    return fb, qa


def test_two_feedback_questions_beside_two_hundred_qa_ones_get_their_share(tmp_path: Path) -> None:
    fb, qa = _files(tmp_path, feedback=2, cases=200)
    data = DataConfig(
        synthetic_kinds=[], contracts=False, qa_files=[qa], feedback=[fb], mix_feedback=0.2, mix_contracts=0.8
    )
    source = TaskSource(data, tokenizer=None, seed=0)
    assert source.shares() == pytest.approx((0.2, 0.8, 0.0))
    drawn = [t for step in range(100) for t in source.draw(step, 8)]
    from_feedback = sum(t.kind == "feedback" for t in drawn) / len(drawn)
    assert 0.15 < from_feedback < 0.25  # pooled with the QA questions it would be 2/202, about 1%
    assert source.draw(7, 8) == source.draw(7, 8)  # the same step draws the same tasks (resumable)


def test_a_source_that_is_empty_or_off_gives_its_share_to_the_others(tmp_path: Path) -> None:
    fb, qa = _files(tmp_path, feedback=3, cases=3)
    only_qa = TaskSource(DataConfig(synthetic_kinds=[], contracts=False, qa_files=[qa]), tokenizer=None, seed=0)
    assert only_qa.shares() == (0.0, 1.0, 0.0)
    # without synthetic tasks, feedback and QA split the samples in proportion to their shares
    both = TaskSource(
        DataConfig(
            synthetic_kinds=[], contracts=False, qa_files=[qa], feedback=[fb], mix_feedback=0.25, mix_contracts=0.25
        ),
        tokenizer=None,
        seed=0,
    )
    assert both.shares() == pytest.approx((0.5, 0.5, 0.0))
    # synthetic tasks take what the sources there are leave
    with_synthetic = TaskSource(DataConfig(contracts=False, feedback=[fb], mix_feedback=0.9), tokenizer=None, seed=0)
    assert with_synthetic.shares() == pytest.approx((0.9, 0.0, 0.1))
    # shares of 0 for the only sources there are: they split the samples evenly
    zero = TaskSource(
        DataConfig(synthetic_kinds=[], contracts=False, feedback=[fb], mix_feedback=0.0), tokenizer=None, seed=0
    )
    assert zero.shares() == (1.0, 0.0, 0.0)
    assert {t.kind for t in zero.draw(0, 5)} == {"feedback"}


def test_governing_law_variants_take_their_share_and_plant_one_whole_clause() -> None:
    from training.tasks import oracle_memories

    data = DataConfig(
        synthetic_kinds=[], contract_categories=["Governing Law"], contract_max_tokens=10**7, mix_contracts=1.0
    )
    plain = TaskSource(data, tokenizer=None, seed=0)
    half = TaskSource(data.model_copy(update={"governing_law_variants": 0.5}), tokenizer=None, seed=0)
    pairs = [(a, b) for step in range(30) for a, b in zip(plain.draw(step, 8), half.draw(step, 8))]
    variants = [(a, b) for a, b in pairs if a.id != b.id]
    assert 0.35 < len(variants) / len(pairs) < 0.65
    assert all(b.id.startswith(a.id + "+") for a, b in variants)  # same host: the other draws are unchanged
    assert len({b.answers for _, b in variants}) > 20  # far more answers than the training contracts' dozen
    for a, b in variants:
        (clause,) = b.evidence
        assert b.document.count(clause) == 1 and b.answers[0] in clause
        assert not any(e in b.document for e in a.evidence if a.answers[0] in e)  # the host's own clause is out
        assert oracle_memories(b, [b.document]) == [clause]  # a whole sentence: the SFT target is the clause
    assert half.draw(3, 8) == half.draw(3, 8)  # resumable


def test_facts_per_doc_plants_several_questions_in_one_synthetic_document(tokenizer) -> None:
    data = DataConfig(synthetic_kinds=["single-needle"], contracts=False, curriculum=[(2048, 10)], facts_per_doc=4)
    tasks = TaskSource(data, tokenizer, seed=0).draw(0, 4)
    (document,) = {t.document for t in tasks}  # one document, read for four questions
    assert len({t.question for t in tasks}) == 4
    for t in tasks:  # each question's fact is in it, and the other three are its look-alikes
        assert all(e in document for e in t.evidence) and t.answers[0] in document
    one = TaskSource(data.model_copy(update={"facts_per_doc": 1}), tokenizer, seed=0).draw(0, 4)
    assert len({t.document for t in one}) == 4


class _Groups(EvidenceTasks):
    """EvidenceTasks' turn order, without its questions: a task names its group."""

    def __init__(self) -> None:
        pass

    def task(self, group: str, rng: random.Random, doc_tokens: int) -> Task:
        return Task(f"{group}-{rng.random()}", "", "", ("x",), kind=group)


def test_evidence_groups_are_drawn_equally_often_at_a_share_below_one(tmp_path: Path) -> None:
    _, qa = _files(tmp_path, feedback=0, cases=3)
    groups = ["contract-extract", "contract-clause", "book", "planted"]
    data = DataConfig(synthetic_kinds=[], contracts=False, qa_files=[qa], evidence_groups=groups, mix_evidence=0.25)
    source = TaskSource(data.model_copy(update={"evidence_groups": []}), tokenizer=None, seed=0)
    source.data, source.evidence = data, _Groups()
    drawn = Counter(t.kind for step in range(400) for t in source.draw(step, 8))
    evidence = [drawn[g] for g in groups]
    assert 0.2 < sum(evidence) / drawn.total() < 0.3
    assert min(evidence) > 0.85 * max(evidence), drawn  # the turn did not restart at the first group each step
