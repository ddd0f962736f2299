"""The evaluation suites and their dev / held-out split, fixed by document id.

Dev sets choose between readers; held-out sets are reported once per shipped reader (DESIGN.md). Every
split is by document, written out rather than computed, so that a change to a data file cannot move a
document across it, and `tests/unit/test_suites.py` pins it. The contract ids are owned by `training.tasks`
(base.py), whose training draws exclude every one of them (`NOT_FOR_TRAINING`).

- `contracts`: the 60 CUAD contracts with PDFs (`contracts/`), their 8 extraction categories. Held out: the
  20 of `HELD_OUT_CONTRACTS` (every third id), the only ones no reader was trained on; dev 30 of the other 40
  (every reader of the shipped lineage was trained on all 40, `CONTRACTS_TRAINED_ON`). The upload is the PDF.
  `held-out-v1`, the held-out split until 2026-12-05, adds the other 10 (every sixth id from cuad-001) to the
  20: a reader reported before then can be read again on the set its record used
  (docs/experiments/2026-12-05-clean-held-out.md).
- `clauses`: the 33 yes/no clause categories of `contracts-train/cases.jsonl` (each question carries CUAD's
  description of its category), on 30 dev and 30 held-out contracts of that set (a seeded sample of 60,
  alternately dev and held-out), none of them ever read by training (the same in `held-out-v1`).
- `books`: the hand-written questions on the four novels (`training/questions/<stem>.jsonl`, loaded by
  `training.book_questions`), Little Women held out. Dev is the training novels, so training draws none of
  these questions, only those made from dialogue tags (`training.evidence_tasks.book_questions`).
- `synthetic`: planted facts (`training.tasks.synthetic_tasks`): held out in Little Women; dev in the
  training novels at `DEV_SEED`, a seed training never uses (it draws seeds from [0, 2**31)).

A suite is a list of `EvalDocument`s: what a person would upload (`data()`: the file's bytes, or the
built text as a .txt file) and the questions asked of it, as `Task`s on the text training reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from inference.contract_review import YES_NO
from training.book_questions import QUESTIONS_DIR, load_questions
from training.tasks import (
    BOOKS_DIR,
    CLAUSES_DEV,
    CLAUSES_HELD_OUT,
    CONTRACTS_DEV,
    CONTRACTS_HELD_OUT,
    CONTRACTS_HELD_OUT_V1,
    CONTRACTS_TRAIN_DIR,
    DATA_DIR,
    HELD_OUT_BOOKS,
    TRAIN_BOOKS,
    Task,
    case_rows,
    category_slug,
    contract_cases,
    contract_tasks,
    load_book,
    synthetic_tasks,
)

EvalSplit = Literal["dev", "held-out", "held-out-v1"]
#: `held-out-v1` is the held-out split of 2026-11-28 to 2026-12-05 (its contracts include 10 trained on)
SPLITS: tuple[EvalSplit, ...] = ("dev", "held-out", "held-out-v1")
SUITES: tuple[str, ...] = ("contracts", "clauses", "books", "synthetic")

BOOKS_HELD_OUT: tuple[str, ...] = HELD_OUT_BOOKS  # Little Women
BOOKS_DEV: tuple[str, ...] = TRAIN_BOOKS

#: the synthetic dev seed: training draws its seeds from [0, 2**31) and its configs name small positive ones
DEV_SEED = -38
#: planted-fact lengths (None: the whole book); the dev novels are shorter than Little Women, so no 128K
SYNTHETIC_LENGTHS: dict[EvalSplit, tuple[int | None, ...]] = {
    "held-out": (2048, 8192, 32768, 131072, None),
    "held-out-v1": (2048, 8192, 32768, 131072, None),
    "dev": (2048, 8192, 32768, None),
}

_HELD_OUT = {
    "contracts": CONTRACTS_HELD_OUT,
    "clauses": CLAUSES_HELD_OUT,
    "books": BOOKS_HELD_OUT,
    "synthetic": BOOKS_HELD_OUT,
}
_SPLIT_IDS: dict[EvalSplit, dict[str, tuple[str, ...]]] = {
    "dev": {"contracts": CONTRACTS_DEV, "clauses": CLAUSES_DEV, "books": BOOKS_DEV, "synthetic": BOOKS_DEV},
    "held-out": _HELD_OUT,
    "held-out-v1": {**_HELD_OUT, "contracts": CONTRACTS_HELD_OUT_V1},
}


def split_ids(suite: str, split: EvalSplit) -> tuple[str, ...]:
    """The documents of a suite's split: contract ids, or book stems for books and synthetic."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose from {', '.join(SUITES)}")
    return _SPLIT_IDS[split][suite]


@dataclass(frozen=True)
class EvalDocument:
    """One document as a person would upload it, and the questions asked of it together."""

    id: str
    suite: str
    #: the upload's file name (a label: the bytes decide the format, as for any upload)
    filename: str
    #: the file uploaded; None: `text` is uploaded as a UTF-8 text file (built documents)
    source: Path | None
    #: the text training code reads (the tasks' `document`)
    text: str
    tasks: tuple[Task, ...]

    def data(self) -> bytes:
        return self.source.read_bytes() if self.source is not None else self.text.encode("utf-8")


def suite_documents(
    suite: str,
    split: EvalSplit,
    tokenizer: Any = None,
    limit: int | None = None,
    lengths: Sequence[int | None] | None = None,
    n: int = 16,
    kinds: Sequence[str] = ("single-needle",),
) -> list[EvalDocument]:
    """A suite's documents of one split, in a fixed order, the first `limit` of them when given. Synthetic
    needs the serving tokenizer (documents are token-exact) and makes `n` questions of `kinds` at each of
    `lengths` (default `SYNTHETIC_LENGTHS[split]`), `limit` documents at each."""
    ids = split_ids(suite, split)
    if suite == "contracts":
        docs = _contracts(ids)
    elif suite == "clauses":
        docs = _clauses(ids)
    elif suite == "books":
        docs = _books(ids)
    else:
        if tokenizer is None:
            raise ValueError("the synthetic suite needs the serving model's tokenizer")
        return _synthetic(split, tokenizer, lengths or SYNTHETIC_LENGTHS[split], n, limit, kinds)
    return docs[:limit] if limit is not None else docs


def _contracts(ids: Sequence[str], contracts_dir: Path | None = None) -> list[EvalDocument]:
    contracts_dir = Path(contracts_dir or DATA_DIR / "contracts")
    cases = {c["id"]: c for c in json.loads((contracts_dir / "cases.json").read_text(encoding="utf-8"))}
    tasks = contract_tasks("all", contracts_dir=contracts_dir, ids=ids)
    docs = []
    for cid in ids:
        mine = tuple(t for t in tasks if t.id.split(":")[0] == cid)
        pdf = contracts_dir / cases[cid]["pdf"]
        docs.append(EvalDocument(cid, "contracts", pdf.name, pdf, mine[0].document, mine))
    return docs


def clause_rows(contracts_dir: Path | None = None) -> dict[str, dict]:
    """contracts-train/cases.jsonl by contract id."""
    return {r["id"]: r for r in contract_cases(Path(contracts_dir or CONTRACTS_TRAIN_DIR))}


def _clauses(ids: Sequence[str], contracts_dir: Path | None = None) -> list[EvalDocument]:
    contracts_dir = Path(contracts_dir or CONTRACTS_TRAIN_DIR)
    rows = clause_rows(contracts_dir)
    docs = []
    for cid in ids:
        path = contracts_dir / rows[cid]["txt"]
        text = path.read_text(encoding="utf-8")
        tasks = tuple(
            Task(
                f"{cid}:{category_slug(qa['category'])}",
                text,
                qa["question"],
                (qa["answer"],),
                tuple(e for e in qa["evidence"] if e and e in text),
                f"clause:{qa['category']}",
            )
            for qa in rows[cid]["qa"]
            if qa["kind"] == YES_NO
        )
        docs.append(EvalDocument(cid, "clauses", path.name, path, text, tasks))
    return docs


def _books(
    stems: Sequence[str], books_dir: Path = BOOKS_DIR, questions_dir: Path = QUESTIONS_DIR
) -> list[EvalDocument]:
    """The novels that have hand-written questions (`training/book_questions.py`), each with its questions."""
    docs = []
    for stem in stems:
        path = Path(questions_dir) / f"{stem}.jsonl"
        if not path.is_file():
            continue
        book = Path(books_dir) / f"{stem}.txt"
        text = load_book(book)
        tasks = tuple(
            Task(q.id, text, q.question, q.answers, (q.evidence,), f"book:{q.kind}") for q in load_questions(path)
        )
        docs.append(EvalDocument(stem, "books", book.name, book, text, tasks))
    return docs


def _synthetic(
    split: EvalSplit, tokenizer: Any, lengths: Sequence[int | None], n: int, limit: int | None, kinds: Sequence[str]
) -> list[EvalDocument]:
    """Held out: `synthetic_tasks` of Little Women at seed 0 (the suite `longread eval` always read);
    dev: of the training novels at DEV_SEED. One question per 4K tokens of a document."""
    from training.evaluate import facts_per_doc

    book_split, seed = ("train", DEV_SEED) if split == "dev" else ("held-out", 0)
    docs: list[EvalDocument] = []
    for doc_tokens in lengths:
        tasks = synthetic_tasks(
            tokenizer, book_split, doc_tokens, n, seed=seed, kinds=kinds, facts_per_doc=facts_per_doc(doc_tokens, n)
        )
        by_doc: dict[int, list[Task]] = {}
        for t in tasks:
            by_doc.setdefault(id(t.document), []).append(t)
        for group in list(by_doc.values())[:limit]:
            doc_id = _SYNTHETIC_DOC.match(group[0].id)[0]
            docs.append(EvalDocument(doc_id, "synthetic", f"{doc_id}.txt", None, group[0].document, tuple(group)))
    return docs


# a synthetic task's id: syn-{split}-{length or book}-s{seed}-d{document}-{q0, q1, ..., or twin}
_SYNTHETIC_DOC = re.compile(r"syn-.+?-(\d+|book)-s-?\d+-d\d+")


def group_of(task: Task) -> str:
    """The row a task counts in: a contract's category, a clause question's gold answer, a book question's
    kind, a planted fact's document length.

    >>> group_of(Task("cuad-001:parties", "", "", ("X",), kind="contract:Parties"))
    'Parties'
    >>> group_of(Task("syn-held-out-2048-s0-d3-q1", "", "", ("X",), kind="single-needle"))
    '2K'
    >>> group_of(Task("syn-train-book-s-38-d0-twin", "", "", ("X",), kind="absent"))
    'book'
    """
    from training.evaluate import length_label

    if task.kind.startswith("contract:"):
        return task.kind.removeprefix("contract:")
    if task.kind.startswith("clause:"):
        return f"gold {task.answers[0]}"
    if task.kind.startswith("book:"):
        return task.kind.removeprefix("book:") or "book"
    if m := _SYNTHETIC_DOC.match(task.id):
        return length_label(None if m[1] == "book" else int(m[1]))
    return task.kind or "cases"


def cases_documents(path: Path) -> list[EvalDocument]:
    """A user's cases file (`longread eval --cases`: one `{"document": "path", "question", "answers"}` a line)
    as documents to upload, each with its questions, in the file's order; a document's text is what its
    upload parses to, so `text` is left empty here."""
    by_file: dict[Path, list[Task]] = {}
    for i, doc, question, answers in case_rows(path):
        by_file.setdefault(doc, []).append(Task(f"case-{i}", "", question, answers, kind="cases"))
    return [EvalDocument(str(doc), "cases", doc.name, doc, "", tuple(tasks)) for doc, tasks in by_file.items()]
