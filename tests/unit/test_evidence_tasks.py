"""Training tasks on real evidence (training/evidence_tasks.py), with the real tokenizer, contracts and novels: the
oracle's memory stays empty until the chunk that holds the evidence and keeps it after; clauses answer Yes with
the clause as evidence and No with nothing; the groups are drawn equally often; the clauses suite's contracts and
Little Women are never read."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from inference.agent import AgentConfig, extract_boxed
from inference.chunking import split_into_chunks
from inference.dates import as_date
from training.config import load_config
from training.data import TaskSource
from training.evidence_tasks import (
    CONTRACTS_TRAIN_DIR,
    GROUPS,
    EvidenceTasks,
    book_questions,
    clause_excerpt,
    cut_out,
)
from training.tasks import (
    ABSENT,
    BOOKS_DIR,
    HELD_OUT_BOOKS,
    KINDS,
    NO_EVIDENCE_MEMORY,
    TRAIN_BOOKS,
    Task,
    count_tokens,
    load_book,
    oracle_answer,
    oracle_memories,
    passage_memory,
    with_answer_evidence,
)

CHUNK, WINDOW = 1024, 4096
CASES = {r["id"]: r for r in map(json.loads, (CONTRACTS_TRAIN_DIR / "cases.jsonl").read_text().splitlines())}
#: A stand-in for the clauses suite's contracts: every seventh id.
EXCLUDED = frozenset(sorted(CASES)[::7])
CONFIG = Path(__file__).resolve().parents[2] / "training" / "configs" / "small-sft-real.toml"


@pytest.fixture(scope="module")
def source(tokenizer):
    return EvidenceTasks(tokenizer, CHUNK, memory_tokens=128, answer_tokens=32, exclude_contracts=EXCLUDED)


def group_of(task: Task) -> str:
    if task.id.endswith(":twin"):
        return "clause-twin"
    if task.kind.startswith("contract:"):
        return "contract-extract"
    if task.kind.startswith("clause:") or (task.kind == ABSENT and task.id.startswith("cuad-train-")):
        return "contract-clause"
    if task.kind.startswith("book:"):
        return "book"
    return "planted" if task.kind in KINDS else "absent" if task.kind == ABSENT else task.kind


def _squash(text: str) -> str:
    return " ".join(text.split())


def _draw(source: EvidenceTasks, group: str, n: int, seed: int = 0) -> list[Task]:
    return source.draw([group], 0, n, random.Random(seed), WINDOW)


@pytest.mark.parametrize("group", ["contract-extract", "contract-clause", "book"])
def test_the_evidence_lies_in_the_chunk_where_the_memory_first_fills_and_stays(source, tokenizer, group):
    first_chunks = Counter()
    for task in _draw(source, group, 24, seed=1):
        if not task.evidence:  # a No clause: test_no_clause_tasks_...
            continue
        assert task.doc_tokens <= WINDOW
        chunks = split_into_chunks(task.document, tokenizer, CHUNK)
        memories = oracle_memories(task, [c.text(task.document) for c in chunks])
        k = next(i for i, m in enumerate(memories) if m != NO_EVIDENCE_MEMORY)
        assert set(memories[:k]) <= {NO_EVIDENCE_MEMORY}
        first = min(task.evidence, key=lambda e: task.document.find(e) + len(e))  # the evidence read first
        at = task.document.find(first)
        assert chunks[k].start_char <= at and at + len(first) <= chunks[k].end_char, (task.id, k)
        for memory in memories[k:]:  # held from its chunk to the end
            assert _squash(first) in memory
        for e in task.evidence:  # every evidence is in the window and in the final memory
            assert e in task.document and _squash(e) in memories[-1]
        first_chunks[k] += 1
    # Not always the first chunk: a novel's evidence lands in any of the window's four; a contract's title and
    # parties come first in it, where only the window's first chunk can hold them.
    assert len(first_chunks) >= (WINDOW // CHUNK if group == "book" else 2), first_chunks


def test_yes_clause_tasks_answer_yes_with_the_marked_clause_as_evidence(source):
    yes = [q for q in source.questions["contract-clause"] if q.answers == ("Yes",)]
    assert len(yes) > 2000
    for q in yes:
        category = q.kind.removeprefix("clause:")
        qa = next(qa for qa in CASES[q.source]["qa"] if qa["category"] == category)
        assert qa["kind"] == "yes-no" and qa["answer"] == "Yes"
        (evidence,) = q.evidence
        assert evidence in {clause_excerpt(e) for e in qa["evidence"]} and evidence in source.texts[q.source]
    drawn = [t for t in _draw(source, "contract-clause", 40, seed=2) if t.answers == ("Yes",)]
    assert drawn
    for t in drawn:
        assert oracle_answer(t) == "\\boxed{Yes}"
        assert _squash(t.evidence[0]) in oracle_memories(t, [t.document])[-1]


def test_no_clause_tasks_answer_no_and_the_memory_stays_empty(source, tokenizer):
    drawn = [t for t in _draw(source, "contract-clause", 40, seed=3) if t.answers == ("No",)]
    assert drawn
    for t in drawn:
        contract, slug = t.id.split(":")
        qa = next(qa for qa in CASES[contract]["qa"] if re.sub(r"[^a-z0-9]+", "-", qa["category"].lower()) == slug)
        assert (qa["kind"], qa["answer"], t.evidence) == ("yes-no", "No", ())
        assert with_answer_evidence(t) is t  # the trainer does not take the word "No" in the text as evidence
        chunks = [c.text(t.document) for c in split_into_chunks(t.document, tokenizer, CHUNK)]
        assert set(oracle_memories(t, chunks)) == {NO_EVIDENCE_MEMORY}
        assert oracle_answer(t) == "\\boxed{No}"


def test_no_clause_windows_lie_anywhere_in_their_contract_not_only_at_its_start(source):
    drawn = [t for t in _draw(source, "contract-clause", 60, seed=10) if t.answers == ("No",)]
    starts = [source.texts[t.id.split(":")[0]].find(t.document[:300]) for t in drawn]
    assert min(starts) >= 0 and sum(at > 0 for at in starts) > len(drawn) // 2, starts  # cut from the contract


def test_a_clause_twin_is_a_yes_window_with_the_clause_cut_out_answered_no(source, tokenizer):
    twins = _draw(source, "clause-twin", 20, seed=11)
    yes = {q.id: q for q in source.questions["contract-clause"] if q.answers == ("Yes",)}
    for t in twins:
        q = yes[t.id.removesuffix(":twin")]
        assert (t.answers, t.evidence, t.kind) == (("No",), (), ABSENT) and t.doc_tokens <= WINDOW
        text = source.texts[q.source]
        assert q.evidence[0] in text and not any(_squash(m) in _squash(t.document) for m in q.marked)
        assert t.document[:50] in text or t.document[-50:] in text  # what is left is the contract's own text
        chunks = [c.text(t.document) for c in split_into_chunks(t.document, tokenizer, CHUNK)]
        assert set(oracle_memories(t, chunks)) == {NO_EVIDENCE_MEMORY} and oracle_answer(t) == "\\boxed{No}"
    assert len({t.id for t in twins}) > 15


def test_clause_twins_are_drawn_without_the_clause_group(tokenizer):
    only = EvidenceTasks(tokenizer, CHUNK, 128, 32, exclude_contracts=EXCLUDED, groups=("clause-twin",))
    twins = _draw(only, "clause-twin", 3, seed=5)
    assert [t.id.endswith(":twin") and t.answers == ("No",) for t in twins] == [True] * 3


def test_a_date_is_taught_as_its_contract_writes_it(source):
    dated = [q for q in source.questions["contract-extract"] if as_date(q.answers[0])]
    written = 0
    for q in dated[:60]:
        text = source.texts[q.source]
        answer = extract_boxed(oracle_answer(Task(q.id, text, q.question, q.answers, q.evidence, q.kind)))
        assert as_date(answer) == as_date(q.answers[0]) or answer == q.answers[0]  # the same day, or CUAD's
        written += answer != q.answers[0] and answer in text
    assert written > 30, written  # most CUAD dates ("5/14/99") are written otherwise in the contract


def test_cut_out_removes_every_occurrence_whatever_the_spacing_and_across_the_window_edge():
    text = "1. Exclusivity. Licensee shall buy only from Licensor.\n2. Fees. Licensee shall\nbuy only from Licensor."
    assert cut_out(text, 0, len(text), ["Licensee shall buy only from Licensor."]) == "1. Exclusivity. \n2. Fees. "
    assert cut_out(text, 30, len(text), ["Licensee shall buy"]) == " only from Licensor.\n2. Fees.  only from Licensor."
    assert cut_out(text, 0, 10, []) == text[:10]


def test_groups_are_drawn_equally_often_and_clauses_yes_and_no_alike(source):
    counts = source.counts()
    assert counts["contract-clause:Yes"] + counts["contract-clause:No"] == counts["contract-clause"]
    assert counts["contract-extract"] > 1400 and counts["contract-clause:Yes"] > 2000 and counts["book"] > 100
    tasks = source.draw(GROUPS, 0, 36, random.Random(4), WINDOW)
    assert Counter(map(group_of, tasks)) == {g: 6 for g in GROUPS}
    answers = Counter(t.answers[0] for t in _draw(source, "contract-clause", 60, seed=5))
    assert set(answers) == {"Yes", "No"} and 18 <= answers["Yes"] <= 42  # half and half, not one in five


def test_excluded_contracts_are_never_read(source):
    held = [cid for cid in EXCLUDED if any(qa["kind"] == "yes-no" for qa in CASES[cid]["qa"])]
    assert len(held) == len(EXCLUDED) > 50  # each has questions that could have been drawn
    assert not EXCLUDED & source.texts.keys()
    assert not {q.source for g in GROUPS for q in source.questions[g]} & EXCLUDED
    drawn = source.draw(["contract-extract", "contract-clause"], 0, 120, random.Random(6), WINDOW)
    assert not {t.id.split(":")[0] for t in drawn} & EXCLUDED


def test_by_default_the_clauses_suites_contracts_are_never_read(tokenizer):
    from training.suites import CLAUSES_DEV, CLAUSES_HELD_OUT

    default = EvidenceTasks(tokenizer, CHUNK, memory_tokens=128, answer_tokens=32)
    assert len(set(CLAUSES_DEV + CLAUSES_HELD_OUT) & CASES.keys()) == 60
    assert not set(CLAUSES_DEV + CLAUSES_HELD_OUT) & default.texts.keys()
    drawn = default.draw(["contract-extract", "contract-clause"], 0, 60, random.Random(9), WINDOW)
    assert not {t.id.split(":")[0] for t in drawn} & set(CLAUSES_DEV + CLAUSES_HELD_OUT)


def test_the_held_out_book_is_never_read(source):
    with pytest.raises(ValueError, match="held out"):
        book_questions(HELD_OUT_BOOKS)
    assert {q.source for q in source.questions["book"]} == set(TRAIN_BOOKS)
    held_out = load_book(BOOKS_DIR / f"{HELD_OUT_BOOKS[0]}.txt")
    for t in _draw(source, "book", 20, seed=7):
        assert not t.id.startswith(HELD_OUT_BOOKS[0]) and t.document[:2000] not in held_out


def test_books_train_on_made_questions_never_on_those_the_books_suite_scores(source):
    from training.suites import suite_documents

    scored = [t for split in ("dev", "held-out") for d in suite_documents("books", split) for t in d.tasks]
    trained = source.questions["book"]
    assert trained and {q.kind for q in trained} == {"book:speaker"}
    assert not {t.id for t in scored} & {q.id for q in trained}
    for q in trained:  # nor the passage of a scored question
        assert not any(
            _squash(t.evidence[0]) in _squash(q.evidence[0]) or _squash(q.evidence[0]) in _squash(t.evidence[0])
            for t in scored
        )


def test_only_the_groups_asked_for_are_loaded(tokenizer):
    books = EvidenceTasks(tokenizer, CHUNK, memory_tokens=128, answer_tokens=32, groups=["book", "planted"])
    assert books.questions["book"] and not books.questions["contract-extract"] + books.questions["contract-clause"]
    assert set(books.texts) == set(TRAIN_BOOKS)  # no contract read


def test_the_real_config_draws_every_group_each_step_the_same_way_twice(tokenizer):
    config = load_config(CONFIG)
    data = TaskSource(config.data, tokenizer, config.seed, reading=AgentConfig.of(config))
    groups = config.data.evidence_groups
    step = data.draw(3, config.sft_samples_per_step)
    assert Counter(map(group_of, step)) == {g: config.sft_samples_per_step // len(groups) for g in groups}
    assert [t.id for t in data.draw(3, config.sft_samples_per_step)] == [t.id for t in step]
    with pytest.raises(ValueError, match="reading sizes"):
        TaskSource(config.data, tokenizer, config.seed)


def test_kept_questions_fit_what_the_reader_may_write_and_parties_are_taught_by_name(source, tokenizer):
    extract = source.questions["contract-extract"]
    for q in random.Random(8).sample(extract, 200) + source.questions["book"]:
        task = Task(q.id, source.texts[q.source], q.question, q.answers, q.evidence, q.kind)
        assert count_tokens(tokenizer, oracle_memories(task, [task.document])[-1]) <= 128
        assert count_tokens(tokenizer, oracle_answer(task)) <= 32
    assert sum(source.dropped.values()) > 0  # the filter does leave some out
    parties = [q for q in extract if q.kind == "contract:Parties" and len(q.answers) == 2]
    assert len(parties) > 200
    for q in parties:
        taught, gold = q.answers
        gold_qa = next(qa for qa in CASES[q.source]["qa"] if qa["category"] == "Parties")
        alias = r"\([^()]*[\"\u201c]"  # a bracket that quotes a defined name: (the "Agent"), (\u201cFCE\u201d)
        assert gold == gold_qa["answer"] and re.search(alias, gold) and not re.search(alias, taught)


def test_an_answer_is_also_taught_from_the_evidence_as_the_reader_keeps_it(source, tokenizer):
    preamble = (
        'This ENDORSEMENT AGREEMENT (the "Agreement") is made this 1st day of November, 2003 by and between '
        + "Bruce Jenner, an individual with offices in California, " * 8
        + "and The Right Solution, a Nevada corporation."
    )
    doc = f"Exhibit 10.1\n\nENDORSEMENT AGREEMENT\n\n{preamble} Other terms follow."
    name = "ENDORSEMENT AGREEMENT"
    title = Task("t", doc, "What is the title of this agreement?", (name,), (name,))
    oracle = oracle_memories(title, [doc])[-1]
    passage = passage_memory(title, oracle, tokenizer, 128, random.Random(0))
    assert oracle == "ENDORSEMENT AGREEMENT"  # the heading: the oracle keeps the evidence alone
    assert passage.startswith("ENDORSEMENT AGREEMENT This ENDORSEMENT AGREEMENT") and "Exhibit" not in passage
    assert count_tokens(tokenizer, passage) == 128 and "Bruce Jenner" in passage  # the reader's capped preamble
    # a gold the passage cannot support is not taught from it
    assert passage_memory(replace(title, answers=("11/1/04",)), oracle, tokenizer, 128, random.Random(0)) is None
    # a question the document does not answer: a passage from a sentence drawn at random (answered as its gold)
    nothing = replace(title, question="Which law governs it?", answers=("The document does not say.",), evidence=())
    drawn = {
        passage_memory(replace(nothing, kind=ABSENT), NO_EVIDENCE_MEMORY, tokenizer, 128, random.Random(seed))
        for seed in range(6)
    }
    assert len(drawn) > 1 and all(" ".join(doc.split()).find(p[:40]) >= 0 for p in drawn)
    assert passage_memory(nothing, oracle, tokenizer, 128, random.Random(0)) is None  # no evidence, not ABSENT
    # on drawn contract questions: most get one, each holds the oracle's memory and names the gold
    tasks = _draw(source, "contract-extract", 40, seed=3)
    taught = 0
    for task in tasks:
        memory = oracle_memories(task, [task.document])[-1]
        if (passage := passage_memory(task, memory, tokenizer, 128, random.Random(1))) is not None:
            taught += 1
            assert all(line in passage for line in memory.split("\n"))
            assert count_tokens(tokenizer, passage) <= 128
    assert taught >= 25, taught
