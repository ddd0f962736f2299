"""The dev / held-out split of every evaluation suite (training/suites.py), on the shared data."""

from __future__ import annotations

import json

import pytest

from training import suites as s
from training.tasks import (
    CONTRACTS_TRAINED_ON,
    DATA_DIR,
    HELD_OUT_CONTRACTS,
    contract_ids,
    contract_tasks,
    trainable_contract,
)

#: the first split's held-out contracts that readers had been trained on (every sixth id from cuad-001)
TRAINED_BEFORE_THE_SPLIT = {f"cuad-{i:03d}" for i in range(1, 60, 6)}


def test_contract_split_sizes_disjoint_and_holds_out_only_untrained_contracts():
    dev, held = set(s.CONTRACTS_DEV), set(s.CONTRACTS_HELD_OUT)
    assert len(dev) == len(s.CONTRACTS_DEV) == 30 and len(held) == len(s.CONTRACTS_HELD_OUT) == 20
    assert not dev & held
    assert held == set(HELD_OUT_CONTRACTS)  # every third id: the only contracts no reader was trained on
    assert dev | held | TRAINED_BEFORE_THE_SPLIT == set(contract_ids("all"))  # all 60 contracts with PDFs


def test_no_held_out_contract_was_ever_trained_on():
    """Until commit 5365ec0 training's contracts were every contracts/ id outside HELD_OUT_CONTRACTS: the 30 dev
    contracts and 10 that the first split held out. The clauses suite's contracts were never trainable."""
    assert CONTRACTS_TRAINED_ON == set(contract_ids("all")) - set(HELD_OUT_CONTRACTS)
    assert CONTRACTS_TRAINED_ON == set(s.CONTRACTS_DEV) | TRAINED_BEFORE_THE_SPLIT
    for suite in ("contracts", "clauses"):
        held = set(s.split_ids(suite, "held-out"))
        assert not held & CONTRACTS_TRAINED_ON and not any(trainable_contract(i) for i in held)


def test_the_first_held_out_split_stays_addressable():
    old = s.split_ids("contracts", "held-out-v1")
    assert old == s.CONTRACTS_HELD_OUT_V1 and len(old) == len(set(old)) == 30
    assert set(old) == set(HELD_OUT_CONTRACTS) | TRAINED_BEFORE_THE_SPLIT
    assert set(old) & CONTRACTS_TRAINED_ON == TRAINED_BEFORE_THE_SPLIT
    assert not any(trainable_contract(i) for i in old)
    for suite in ("clauses", "books", "synthetic"):
        assert s.split_ids(suite, "held-out-v1") == s.split_ids(suite, "held-out")


@pytest.mark.parametrize("split", s.SPLITS)
def test_longread_eval_takes_every_split(split):
    from app.cli import build_parser

    assert build_parser().parse_args(["eval", "--split", split]).split == split


def test_clause_split_sizes_disjoint_and_in_contracts_train():
    dev, held = set(s.CLAUSES_DEV), set(s.CLAUSES_HELD_OUT)
    assert len(dev) == 30 and len(held) == 30 and not dev & held
    assert dev | held <= set(s.clause_rows())


def test_training_never_draws_a_clause_suite_contract():
    rows = s.clause_rows()
    trainable = [cid for cid in rows if trainable_contract(cid)]
    assert len(trainable) == len(rows) - 60
    assert not set(trainable) & (set(s.CLAUSES_DEV) | set(s.CLAUSES_HELD_OUT))


def test_training_contracts_are_no_suites_dev_or_held_out_contracts():
    evaluated = {cid for suite in ("contracts", "clauses") for split in s.SPLITS for cid in s.split_ids(suite, split)}
    train = contract_ids("train")
    assert train and not set(train) & evaluated
    assert {t.id.split(":")[0] for t in contract_tasks("train", ["Governing Law"])} <= set(train)


def test_books_and_synthetic_hold_out_little_women_only():
    for suite in ("books", "synthetic"):
        assert s.split_ids(suite, "held-out") == ("pg37106",)
        assert set(s.split_ids(suite, "dev")) == {"pg2641", "pg64317", "pg84"}


@pytest.mark.parametrize("suite", ["contracts", "clauses"])
def test_suite_documents_follow_the_split(suite):
    for split in s.SPLITS:
        docs = s.suite_documents(suite, split)
        assert [d.id for d in docs] == list(s.split_ids(suite, split))
        assert all(d.tasks and d.source is not None and d.source.is_file() for d in docs)
        assert all(t.document is d.text and t.id.startswith(d.id + ":") for d in docs for t in d.tasks)


def test_contracts_suite_uploads_the_pdf_and_asks_the_eight_categories():
    doc = s.suite_documents("contracts", "held-out", limit=1)[0]
    assert doc.id == "cuad-000" and doc.data().startswith(b"%PDF")
    assert {t.kind for t in doc.tasks} <= {
        f"contract:{c}"
        for c in (
            "Document Name",
            "Parties",
            "Agreement Date",
            "Effective Date",
            "Expiration Date",
            "Renewal Term",
            "Notice Period To Terminate Renewal",
            "Governing Law",
        )
    }


def test_clauses_suite_asks_the_33_yes_no_categories_with_their_descriptions():
    docs = s.suite_documents("clauses", "dev", limit=2)
    for d in docs:
        assert len(d.tasks) == 33 and {t.answers for t in d.tasks} <= {("Yes",), ("No",)}
        assert all(t.question.startswith("Does this agreement contain a clause on") for t in d.tasks)
    assert any(t.evidence for d in docs for t in d.tasks if t.answers == ("Yes",))


def test_book_questions_are_read_from_their_file(tmp_path):
    row = {
        "id": "pg84-q1",
        "book": "pg84",
        "question": "Who made the creature?",
        "answers": ["Victor"],
        "evidence": "my dear Victor",
        "kind": "character",
    }
    (tmp_path / "pg84.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    docs = s._books(["pg84", "pg2641"], questions_dir=tmp_path)  # no questions on pg2641: no document
    assert [d.id for d in docs] == ["pg84"]
    (t,) = docs[0].tasks
    assert (t.id, t.answers, t.kind) == ("pg84-q1", ("Victor",), "book:character")
    assert t.evidence == ("my dear Victor",) and t.document is docs[0].text
    assert docs[0].source == DATA_DIR / "books" / "pg84.txt"


def test_books_suite_asks_the_hand_written_questions():
    held, dev = s.suite_documents("books", "held-out"), s.suite_documents("books", "dev")
    assert [d.id for d in held] == ["pg37106"] and {d.id for d in dev} == {"pg2641", "pg64317", "pg84"}
    for d in held + dev:
        assert len(d.tasks) >= 40 and all(t.id.startswith(d.id) and t.kind.startswith("book:") for t in d.tasks)


def test_synthetic_dev_reads_training_novels_at_a_seed_training_never_draws(tokenizer):
    dev = s.suite_documents("synthetic", "dev", tokenizer, limit=1, lengths=(2048,), n=2)
    held = s.suite_documents("synthetic", "held-out", tokenizer, limit=1, lengths=(2048,), n=2)
    assert s.DEV_SEED < 0  # training draws seeds from [0, 2**31)
    assert len(dev) == len(held) == 1 and dev[0].source is None and dev[0].data() == dev[0].text.encode()
    assert "-train-" in dev[0].id and "-held-out-" in held[0].id
    assert {s.group_of(t) for t in dev[0].tasks + held[0].tasks} == {"2K"}


def test_a_cases_file_becomes_documents_to_upload_with_their_questions(tmp_path):
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4 made up")
    (tmp_path / "b.docx").write_bytes(b"PK made up")
    rows = [
        {"document": "a.pdf", "question": "Title?", "answers": ["X"]},
        {"document": "b.docx", "question": "Law?", "answers": "Ohio"},
        {"document": str(tmp_path / "a.pdf"), "question": "Parties?", "answers": ["Y", "Z"]},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    a, b = s.cases_documents(tmp_path / "cases.jsonl")
    assert (a.source, a.data()) == (tmp_path / "a.pdf", b"%PDF-1.4 made up")
    assert [(t.id, t.question, t.answers) for t in a.tasks] == [
        ("case-0", "Title?", ("X",)),
        ("case-2", "Parties?", ("Y", "Z")),
    ]
    assert b.filename == "b.docx" and b.tasks[0].answers == ("Ohio",) and s.group_of(b.tasks[0]) == "cases"
