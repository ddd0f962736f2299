"""Training and evaluation tasks: (document, question, gold answers, evidence) from four sources.

- **synthetic** RULER-style facts planted in real novels (`synthetic_tasks`): single needle, several
  needles of one key, multi-hop (two facts to combine) and variable tracking, each with distractors
  built from the same template with another entity, so a reader must keep the right one; and `absent`,
  a question of any of those kinds whose facts the document does not hold (only the look-alikes about
  others), which a reader should answer with `NOT_IN_DOCUMENT` rather than invent; and `open`, an open question
  about the story (the weather, what is eaten) asked of a window that never mentions its subject, answered
  by one planted sentence or by nothing. Entities and values
  are invented (pseudo-words, long numbers) and checked absent from the book window, so the answer is
  never guessable or findable elsewhere; documents are token-exact and seeded.
- **contracts** of CUAD with expert answers and `evidence` clauses (`contract_tasks`; training reads the
  extraction questions of contracts-train), and variants of their governing-law questions with another
  contract's clause planted, jurisdiction swapped (`governing_law_variant`).
- **feedback** exported by `longread feedback export` (`feedback_tasks`).
- **a user's cases** file (`cases_tasks`).

Splits are by document, never by question (`TRAIN_BOOKS`/`HELD_OUT_BOOKS`; training contracts are those of
contracts-train that no evaluation suite reads, `NOT_FOR_TRAINING`), so a dev or held-out score never benefits
from having read the same text in training. Until 2026-11-28 training read the 40 contracts/ contracts outside
`HELD_OUT_CONTRACTS` (`CONTRACTS_TRAINED_ON`), so the held-out contracts are those 20 alone.

`evidence` are exact substrings of `document`; `oracle_memories` turns them into the memory a perfect
reader would hold after each chunk, and `oracle_answer` into its answer: the SFT warm-start targets.

The package, by source: base.py (the data's place, the splits, `Task`), books.py, synthetic.py,
contracts.py, feedback.py (users' cases and feedback) and oracle.py (oracle traces); every public name
is importable from here.
"""

from __future__ import annotations

from inference.templates import NO_EVIDENCE_MEMORY, NOT_IN_DOCUMENT
from training.tasks.base import (
    ABSENT,
    BOOKS_DIR,
    CLAUSES_DEV,
    CLAUSES_HELD_OUT,
    CONTRACTS_DEV,
    CONTRACTS_DIR,
    CONTRACTS_HELD_OUT,
    CONTRACTS_HELD_OUT_V1,
    CONTRACTS_TRAIN_DIR,
    CONTRACTS_TRAINED_ON,
    DATA_DIR,
    DEFAULT_CURRICULUM,
    HELD_OUT_BOOKS,
    HELD_OUT_CONTRACTS,
    KINDS,
    NOT_FOR_TRAINING,
    OPEN,
    SYNTHETIC_KINDS,
    TRAIN_BOOKS,
    Split,
    Task,
    count_tokens,
    load_tasks,
    save_tasks,
    trainable_contract,
)
from training.tasks.books import load_book, split_books
from training.tasks.contracts import category_slug, contract_cases, contract_ids, contract_tasks, governing_law_variant
from training.tasks.feedback import case_documents, case_rows, cases_tasks, feedback_answer, feedback_tasks
from training.tasks.oracle import (
    corrections,
    evidence_gains,
    oracle_answer,
    oracle_memories,
    passage_memory,
    question_echo,
    with_answer_evidence,
    with_doc_tokens,
)
from training.tasks.synthetic import curriculum_tasks, synthetic_tasks

__all__ = [
    "ABSENT",
    "BOOKS_DIR",
    "CLAUSES_DEV",
    "CLAUSES_HELD_OUT",
    "CONTRACTS_DEV",
    "CONTRACTS_DIR",
    "CONTRACTS_HELD_OUT",
    "CONTRACTS_HELD_OUT_V1",
    "CONTRACTS_TRAIN_DIR",
    "CONTRACTS_TRAINED_ON",
    "DATA_DIR",
    "DEFAULT_CURRICULUM",
    "HELD_OUT_BOOKS",
    "HELD_OUT_CONTRACTS",
    "KINDS",
    "NOT_FOR_TRAINING",
    "NOT_IN_DOCUMENT",
    "NO_EVIDENCE_MEMORY",
    "OPEN",
    "SYNTHETIC_KINDS",
    "Split",
    "TRAIN_BOOKS",
    "Task",
    "case_documents",
    "case_rows",
    "cases_tasks",
    "category_slug",
    "contract_cases",
    "contract_ids",
    "contract_tasks",
    "corrections",
    "count_tokens",
    "curriculum_tasks",
    "evidence_gains",
    "feedback_answer",
    "feedback_tasks",
    "governing_law_variant",
    "load_book",
    "load_tasks",
    "oracle_answer",
    "oracle_memories",
    "passage_memory",
    "question_echo",
    "save_tasks",
    "split_books",
    "synthetic_tasks",
    "trainable_contract",
    "with_answer_evidence",
    "with_doc_tokens",
]
