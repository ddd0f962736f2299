"""Training/evaluation data: the synthetic generator (real tokenizer, real novels), the splits,
contracts, feedback and cases files, and the oracle memory traces that SFT learns from."""

from __future__ import annotations

import json
import re

import pytest

from inference.chunking import split_into_chunks
from inference.contract_review import normalize
from training.tasks import (
    ABSENT,
    BOOKS_DIR,
    HELD_OUT_BOOKS,
    HELD_OUT_CONTRACTS,
    KINDS,
    NO_EVIDENCE_MEMORY,
    NOT_FOR_TRAINING,
    NOT_IN_DOCUMENT,
    OPEN,
    TRAIN_BOOKS,
    Task,
    cases_tasks,
    contract_ids,
    contract_tasks,
    count_tokens,
    curriculum_tasks,
    feedback_tasks,
    load_book,
    load_tasks,
    oracle_answer,
    oracle_memories,
    save_tasks,
    synthetic_tasks,
)
from training.tasks.synthetic import _OPEN


@pytest.fixture(scope="module")
def mixed(tokenizer):
    return synthetic_tasks(tokenizer, "train", 2048, 12, seed=3, kinds=KINDS, facts_per_doc=2)


def test_same_seed_same_tasks_other_seed_other_tasks(tokenizer, mixed):
    again = synthetic_tasks(tokenizer, "train", 2048, 12, seed=3, kinds=KINDS, facts_per_doc=2)
    assert [(t.id, t.document, t.question, t.answers, t.evidence) for t in again] == [
        (t.id, t.document, t.question, t.answers, t.evidence) for t in mixed
    ]
    other = synthetic_tasks(tokenizer, "train", 2048, 12, seed=4, kinds=KINDS, facts_per_doc=2)
    assert [t.question for t in other] != [t.question for t in mixed]


@pytest.mark.parametrize("doc_tokens", [300, 1024, 4096])
def test_documents_are_token_exact_with_the_real_tokenizer(tokenizer, doc_tokens):
    tasks = synthetic_tasks(tokenizer, "held-out", doc_tokens, 8, seed=1, kinds=KINDS)
    for t in tasks:
        assert t.doc_tokens == doc_tokens == count_tokens(tokenizer, t.document)


def test_every_kind_is_generated_with_evidence_in_the_document(mixed):
    assert {t.kind for t in mixed} == set(KINDS)
    for t in mixed:
        assert t.evidence and all(e in t.document for e in t.evidence)
        # the question never gives the answer away
        assert not any(normalize(a) in normalize(t.question) for a in t.answers)
        # the answer is found only in the evidence: neither the novel nor a distractor holds it
        rest = t.document
        for e in t.evidence:
            rest = rest.replace(e, " ")
        assert normalize(t.answers[0].split(",")[0]) not in normalize(rest)


def test_multi_needle_and_multi_hop_need_every_evidence_sentence(mixed):
    for t in mixed:
        if t.kind == "multi-needle":
            values = t.answers[0].split(", ")
            assert len(t.evidence) == len(values) >= 2
            assert all(v in e for v, e in zip(values, t.evidence))  # in document order
        if t.kind == "multi-hop":
            first, second = t.evidence
            box = re.search(r"is in the (\w+ \w+)\.", first)[1]
            assert box in second and t.answers[0] in second and t.answers[0] not in first
            assert t.document.index(first) < t.document.index(second)
        if t.kind == "variable-tracking":
            assert t.answers[0] in t.evidence[0] and t.question.split()[-1].rstrip("?") in t.evidence[-1]


def _skeleton(sentence: str) -> str:
    """The template a planted sentence came from: invented names and values become wildcards."""
    return re.sub(r"\b[A-Z][a-z]+\b|\b\d+\b", lambda m: r"\w+", re.escape(sentence))


@pytest.mark.parametrize("distractors", [0, 2])
def test_distractors_resemble_the_needle(tokenizer, distractors):
    tasks = synthetic_tasks(tokenizer, "train", 1024, 6, seed=5, kinds=["single-needle"], distractors=distractors)
    for t in tasks:
        (needle,) = t.evidence
        assert len(re.findall(_skeleton(needle), t.document)) == 1 + distractors


def test_absent_tasks_plant_only_look_alikes_and_their_oracle_finds_nothing(tokenizer):
    # Each kind's question, what names its subject, and a phrase that its look-alikes (2 here) plant;
    # the specific shapes first ("vault codes of X" is also a single needle's "vault code of X").
    who = r"[A-Z][a-z]+ ([A-Z][a-z]+)"
    shapes = {
        "multi-needle": (rf"^What are all \d vault codes of {who}|^Which \d towns did {who}", r"One of the"),
        "multi-hop": (rf"^In which town is {who}'s", r"The \w+ \w+ is in the town of"),
        "variable-tracking": (r"^What is the value of (VAR [A-Z]{5})\?", r"VAR [A-Z]{5} = "),
        "single-needle": (
            rf"(?:of|to|does) {who}|^What was {who}'s",
            r"vault code|spare key|password|ship|ticket number",
        ),
    }
    tasks = synthetic_tasks(tokenizer, "train", 2048, 16, seed=7, kinds=[ABSENT], distractors=2)
    seen = set()
    for t in tasks:
        assert t.kind == ABSENT and t.evidence == () and t.answers == (NOT_IN_DOCUMENT,)
        kind = next(k for k, (asks, _) in shapes.items() if re.search(asks, t.question))
        seen.add(kind)
        asks, plants = shapes[kind]
        subject = next(g for g in re.search(asks, t.question).groups() if g)
        assert subject not in t.document  # the person (or variable) asked about is never mentioned
        assert len(re.findall(plants, t.document)) >= 2  # the look-alikes, about others
        chunks = [c.text(t.document) for c in split_into_chunks(t.document, tokenizer, 1024)]
        assert oracle_memories(t, chunks) == [NO_EVIDENCE_MEMORY] * len(chunks) == [NO_EVIDENCE_MEMORY] * 2
        assert oracle_answer(t) == r"\boxed{The document does not say.}"
    assert len(seen) >= 3  # the questions of several kinds, not one template
    with pytest.raises(ValueError, match="absent"):
        synthetic_tasks(tokenizer, "train", 2048, 1, kinds=["absnet"])


def test_open_questions_are_asked_of_windows_that_never_mention_their_subject(tokenizer):
    tasks = synthetic_tasks(tokenizer, "train", 2048, 16, seed=3, kinds=[OPEN])
    assert {t.kind for t in tasks} == {OPEN, ABSENT}  # both halves turn up in 16
    assert len({t.question for t in tasks}) >= 4
    openings = [load_book(BOOKS_DIR / f"{b}.txt")[:200] for b in TRAIN_BOOKS]
    at_opening = [t for t in tasks if t.document.startswith(tuple(openings))]
    assert at_opening and all(t.kind == ABSENT for t in at_opening)  # only questions it does not answer
    for i, t in enumerate(tasks):
        subject = next(words for question, words, _, _ in _OPEN if question == t.question)
        chunks = [c.text(t.document) for c in split_into_chunks(t.document, tokenizer, 1024)]
        if t.kind == ABSENT:
            assert not subject.search(t.document)
            assert oracle_memories(t, chunks) == [NO_EVIDENCE_MEMORY] * 2 and t.answers == (NOT_IN_DOCUMENT,)
        else:  # the one mention of the subject is the planted sentence that answers it
            (sentence,) = t.evidence
            assert subject.findall(t.document) == subject.findall(sentence)
            assert t.answers[0] in sentence and oracle_memories(t, chunks)[-1] == sentence
            twin = tasks[i + 1 : i + 2]  # the same window without the sentence (unless cut at n)
            assert twin or t is tasks[-1]
            for w in twin:
                assert w.kind == ABSENT and w.question == t.question
                assert w.document == t.document.replace(" " + sentence, "", 1) != t.document


def test_facts_of_one_document_share_the_string_object(tokenizer):
    tasks = synthetic_tasks(tokenizer, "held-out", 8192, 6, seed=2, facts_per_doc=3)
    assert tasks[0].document is tasks[1].document is tasks[2].document
    assert tasks[3].document is not tasks[0].document
    assert len({t.question for t in tasks}) == 6


def test_book_splits_are_disjoint_and_windows_come_from_their_split(tokenizer):
    assert not set(TRAIN_BOOKS) & set(HELD_OUT_BOOKS)
    held_out_text = load_book(BOOKS_DIR / f"{HELD_OUT_BOOKS[0]}.txt")
    train_texts = [load_book(BOOKS_DIR / f"{b}.txt") for b in TRAIN_BOOKS]
    for body in (held_out_text, *train_texts):  # the Gutenberg header and licence are gone
        assert "*** START OF" not in body and "This ebook is for the use of anyone" not in body
        assert "Project Gutenberg License" not in body and "*** END OF" not in body
    for split, own, others in (("held-out", [held_out_text], train_texts), ("train", train_texts, [held_out_text])):
        for t in synthetic_tasks(tokenizer, split, 1024, 4, seed=0):
            probe = t.document[:120]
            assert any(probe in b for b in own) and not any(probe in b for b in others)


def test_contract_splits_are_by_document():
    held, train = contract_ids("held-out"), contract_ids("train")
    assert len(held) == 20 and len(train) == 379 - 60 and not set(held) & set(train)
    assert set(held) == set(HELD_OUT_CONTRACTS) and not set(train) & set(contract_ids("all"))
    assert not set(train) & NOT_FOR_TRAINING  # no evaluation suite's contract, dev or held out
    held_docs = {t.document for t in contract_tasks("held-out")}
    train_tasks = contract_tasks("train")
    assert not held_docs & {t.document for t in train_tasks}
    assert all(t.kind.startswith("contract:") for t in train_tasks)  # extraction questions, no yes/no clause


def test_contract_tasks_filter_categories_and_keep_verbatim_evidence():
    tasks = contract_tasks("held-out", ["Governing Law"])
    assert len(tasks) == 20 and {t.kind for t in tasks} == {"contract:Governing Law"}
    assert all(t.evidence and all(e in t.document for e in t.evidence) for t in tasks)
    dates = {t.id: t.answers for t in contract_tasks("held-out", ["Agreement Date"])}
    assert dates["cuad-000:agreement-date"] == ("10/30/17",)
    with pytest.raises(ValueError, match="unknown category"):
        contract_tasks("held-out", ["Governing Lore"])


def test_oracle_memories_keep_whole_evidence_sentences_in_order():
    doc = "It rained. Nobody came. Ada's key is in the red box. The cat slept. The red box is in Oslo. The end came."
    task = Task("t", doc, "Where is Ada's key?", ("Oslo",), ("Ada's key is in the red box.", "The red box is in Oslo."))
    chunks = [doc[:24], doc[24:40], doc[40:70], doc[70:]]
    assert "".join(chunks) == doc
    assert oracle_memories(task, chunks) == [
        NO_EVIDENCE_MEMORY,
        NO_EVIDENCE_MEMORY,  # the first fact is only half read
        "Ada's key is in the red box.",
        "Ada's key is in the red box.\nThe red box is in Oslo.",
    ]
    assert oracle_answer(task) == r"\boxed{Oslo}"


def test_oracle_memory_widens_a_clause_to_its_sentence_across_abbreviations():
    doc = (
        "1. Parties.\n\nThis Agreement is made by Acme Co. and Bolt Inc. on May 1, 2020 in Paris. "
        "Other terms follow here.\n\n2. Law. This Agreement is governed by the laws of Ohio. Fin."
    )
    task = Task("c", doc, "Who are the parties?", ("Acme",), ("Acme Co.", "Bolt Inc", "laws of Ohio"))
    (memory,) = oracle_memories(task, [doc])
    assert memory == (
        "This Agreement is made by Acme Co. and Bolt Inc. on May 1, 2020 in Paris.\n"
        "This Agreement is governed by the laws of Ohio."
    )


def test_oracle_memories_of_a_real_task_grow_to_all_evidence(tokenizer, mixed):
    t = next(t for t in mixed if t.kind == "multi-hop")
    chunks = [c.text(t.document) for c in split_into_chunks(t.document, tokenizer, 256)]
    memories = oracle_memories(t, chunks)
    assert len(memories) == len(chunks) and memories[-1] == "\n".join(t.evidence)
    first = next(i for i, c in enumerate(chunks) if t.evidence[0] in "".join(chunks[: i + 1]))
    assert memories[first - 1] == NO_EVIDENCE_MEMORY if first else True
    assert t.evidence[0] in memories[first]


def test_tasks_round_trip_through_jsonl_sharing_documents(tmp_path, mixed):
    path = tmp_path / "tasks.jsonl"
    save_tasks(mixed, path)
    back = load_tasks(path)
    assert back == mixed
    assert back[0].document is back[1].document  # facts_per_doc=2: one document, one object again


def test_curriculum_is_shortest_first(tokenizer):
    tasks = curriculum_tasks(tokenizer, [(1024, 2), (512, 3)], kinds=["single-needle"])
    assert [t.doc_tokens for t in tasks] == [512] * 3 + [1024] * 2


def test_cases_file_paths_are_relative_to_the_file(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("The key is under the mat.")
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"document": "docs/a.txt", "question": "Where is the key?", "answers": ["under the mat"]})
        + "\n\n"
        + json.dumps({"document": str(tmp_path / "docs" / "a.txt"), "question": "What?", "answers": "mat"})
        + "\n"
    )
    a, b = cases_tasks(tmp_path / "cases.jsonl")
    assert a.document == "The key is under the mat." and a.document is b.document
    assert a.answers == ("under the mat",) and b.answers == ("mat",)
    (tmp_path / "bad.jsonl").write_text(json.dumps({"document": "nope.txt", "question": "q", "answers": ["a"]}))
    with pytest.raises(ValueError, match="no such document"):
        cases_tasks(tmp_path / "bad.jsonl")


def test_feedback_makes_tasks_only_from_right_answers_and_corrections(tmp_path):
    (tmp_path / "d.txt").write_text("Some contract text.")
    rows = [
        {"document_id": 7, "question": "Law?", "answer": "Ohio", "verdict": "correct", "corrected_answer": None},
        {
            "document_id": 7,
            "question": "Term?",
            "answer": "1 year",
            "verdict": "incorrect",
            "corrected_answer": "2 years",
        },
        {"document_id": 7, "question": "Who?", "answer": "Acme", "verdict": "incorrect", "corrected_answer": ""},
        {
            "document_path": "d.txt",
            "question": "Where?",
            "answer": "x",
            "verdict": "wrong-with-correction",
            "corrected_answer": "Paris",
        },
        {"document_text": "inline", "question": "Q?", "answer": "y", "verdict": "unsure"},
    ]
    path = tmp_path / "feedback.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = feedback_tasks(path, documents=lambda i: f"document {i}")
    assert [(t.question, t.answers, t.document) for t in tasks] == [
        ("Law?", ("Ohio",), "document 7"),
        ("Term?", ("2 years",), "document 7"),
        ("Where?", ("Paris",), "Some contract text."),
    ]
    assert tasks[0].document is tasks[1].document and {t.kind for t in tasks} == {"feedback"}
    with pytest.raises(ValueError, match="document_id"):
        feedback_tasks(path)  # ids but no way to look them up
