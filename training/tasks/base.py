"""What every source of tasks shares: where the shared data is, the splits, the task kinds, `Task` and
its JSON Lines form."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Literal


def _data_dir() -> Path:
    """The shared books and contracts: LONGREAD_SHARED_DATA, else `../shared/data` beside the checkout."""
    if os.environ.get("LONGREAD_SHARED_DATA"):
        return Path(os.environ["LONGREAD_SHARED_DATA"])
    return Path(__file__).resolve().parents[3] / "shared" / "data"


DATA_DIR = _data_dir()
BOOKS_DIR = DATA_DIR / "books"
CONTRACTS_DIR = DATA_DIR / "contracts"
CONTRACTS_TRAIN_DIR = DATA_DIR / "contracts-train"

Split = Literal["train", "held-out"]

#: Books by Gutenberg id. The held-out book is the longest (Little Women, ~260K tokens), so held-out
#: windows of every evaluated length (2K .. 128K) and the whole book exist.
TRAIN_BOOKS: tuple[str, ...] = ("pg2641", "pg64317", "pg84")  # A Room with a View, Gatsby, Frankenstein
HELD_OUT_BOOKS: tuple[str, ...] = ("pg37106",)  # Little Women

#: Held-out contracts: every third id of cases.json (cuad-000, cuad-003, ..., cuad-057), 20 of 60.
#: Fixed here, not computed, so that a change to the data file cannot move a contract across the split.
HELD_OUT_CONTRACTS: tuple[str, ...] = tuple(f"cuad-{i:03d}" for i in range(0, 60, 3))

# The evaluation suites' contracts (training/suites.py), owned here so that training's draws exclude them.
#: contracts/: held out, the 20 of HELD_OUT_CONTRACTS (every third id), the only contracts with PDFs that no
#: reader was trained on (`CONTRACTS_TRAINED_ON`); since 2026-12-05 (docs/experiments/2026-12-05-clean-held-out.md)
CONTRACTS_HELD_OUT: tuple[str, ...] = (
    "cuad-000",
    "cuad-003",
    "cuad-006",
    "cuad-009",
    "cuad-012",
    "cuad-015",
    "cuad-018",
    "cuad-021",
    "cuad-024",
    "cuad-027",
    "cuad-030",
    "cuad-033",
    "cuad-036",
    "cuad-039",
    "cuad-042",
    "cuad-045",
    "cuad-048",
    "cuad-051",
    "cuad-054",
    "cuad-057",
)
#: contracts/: held out from 2026-11-28 to 2026-12-05, the 20 above and every sixth id from cuad-001, 10 that
#: readers had been trained on; kept so that a reader can be reported on the set its record used
CONTRACTS_HELD_OUT_V1: tuple[str, ...] = (
    "cuad-000",
    "cuad-001",
    "cuad-003",
    "cuad-006",
    "cuad-007",
    "cuad-009",
    "cuad-012",
    "cuad-013",
    "cuad-015",
    "cuad-018",
    "cuad-019",
    "cuad-021",
    "cuad-024",
    "cuad-025",
    "cuad-027",
    "cuad-030",
    "cuad-031",
    "cuad-033",
    "cuad-036",
    "cuad-037",
    "cuad-039",
    "cuad-042",
    "cuad-043",
    "cuad-045",
    "cuad-048",
    "cuad-049",
    "cuad-051",
    "cuad-054",
    "cuad-055",
    "cuad-057",
)
CONTRACTS_DEV: tuple[str, ...] = (
    "cuad-002",
    "cuad-004",
    "cuad-005",
    "cuad-008",
    "cuad-010",
    "cuad-011",
    "cuad-014",
    "cuad-016",
    "cuad-017",
    "cuad-020",
    "cuad-022",
    "cuad-023",
    "cuad-026",
    "cuad-028",
    "cuad-029",
    "cuad-032",
    "cuad-034",
    "cuad-035",
    "cuad-038",
    "cuad-040",
    "cuad-041",
    "cuad-044",
    "cuad-046",
    "cuad-047",
    "cuad-050",
    "cuad-052",
    "cuad-053",
    "cuad-056",
    "cuad-058",
    "cuad-059",
)
#: contracts/ ids that readers were trained on: every one outside HELD_OUT_CONTRACTS. Until 2026-11-28 (commit
#: 5365ec0) `contract_ids("train")` returned those 40, and the first round of the shipped reader's lineage (run
#: `sft`, 23f0ac4: five extraction categories, contracts up to 65,536 tokens) drew from all of them.
CONTRACTS_TRAINED_ON: frozenset[str] = frozenset(CONTRACTS_DEV + CONTRACTS_HELD_OUT_V1) - frozenset(CONTRACTS_HELD_OUT)
#: contracts-train/: sorted(random.Random(38).sample(all 379 ids, 60)), alternately dev and held out
CLAUSES_DEV: tuple[str, ...] = tuple(
    f"cuad-train-{i:03d}"
    for i in (
        6,
        23,
        44,
        53,
        61,
        73,
        88,
        115,
        129,
        148,
        158,
        169,
        183,
        192,
        202,
        215,
        220,
        233,
        238,
        244,
        259,
        271,
        299,
        312,
        315,
        327,
        341,
        352,
        364,
        371,
    )
)
CLAUSES_HELD_OUT: tuple[str, ...] = tuple(
    f"cuad-train-{i:03d}"
    for i in (
        13,
        34,
        45,
        59,
        66,
        75,
        94,
        127,
        137,
        151,
        168,
        177,
        188,
        195,
        206,
        216,
        224,
        235,
        243,
        251,
        270,
        275,
        303,
        314,
        319,
        328,
        347,
        358,
        370,
        373,
    )
)
#: contract ids that training must never read: every suite's dev and held-out contracts, old and clean (all 60 of
#: contracts/)
NOT_FOR_TRAINING: frozenset[str] = frozenset(
    CONTRACTS_DEV + CONTRACTS_HELD_OUT + CONTRACTS_HELD_OUT_V1 + CLAUSES_DEV + CLAUSES_HELD_OUT
)


def trainable_contract(contract_id: str) -> bool:
    """Whether training may read this contract (no suite's dev or held-out contract may).

    >>> trainable_contract("cuad-train-001"), trainable_contract("cuad-train-013"), trainable_contract("cuad-002")
    (True, False, False)
    """
    return contract_id not in NOT_FOR_TRAINING


KINDS: tuple[str, ...] = ("single-needle", "multi-needle", "multi-hop", "variable-tracking")
#: An open question about the story (what is eaten, which animals appear), asked of a window that never
#: mentions its subject: half the time one planted sentence answers it, half the time nothing does and the
#: task is `ABSENT`. A planted answer comes with its twin, the same window without the sentence (`ABSENT`),
#: so that what tells writing from keeping nothing is the sentence, not the window (or a title page).
#: What a user asks of a novel is mostly open; a reader that invents an answer to it also decodes the
#: invention at every chunk. Not among KINDS: its answers are lessons, not a measure.
OPEN = "open"
#: The question's fact is not in the document: its oracle keeps NO_EVIDENCE_MEMORY throughout and answers
#: NOT_IN_DOCUMENT. Not among KINDS (the held-out accuracy sets): it measures abstaining, not reading.
ABSENT = "absent"
SYNTHETIC_KINDS: tuple[str, ...] = (*KINDS, ABSENT, OPEN)

#: (doc_tokens, number of tasks) stages, shortest first: a model first learns to keep a fact across
#: a few chunks, then across many (MemAgent trains at one length and extrapolates; a 135M model
#: needs the short stages to get any reward at all).
DEFAULT_CURRICULUM: tuple[tuple[int, int], ...] = ((1024, 128), (2048, 128), (4096, 96), (8192, 64))


@dataclass(frozen=True)
class Task:
    """One question on one document. Tasks planted in the same document share the same `document`
    string object, so a batched reading (`MemoryAgent.read_batch`) chunks it once and the engine can
    share the chunk prefix between its questions."""

    id: str
    document: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[str, ...] = ()  # exact substrings of `document` that a perfect reader must keep
    kind: str = ""
    doc_tokens: int = 0


# --- JSON Lines ---------------------------------------------------------------------------------
def save_tasks(tasks: Iterable[Task], path: Path) -> None:
    """One task a line, every field, the document in full (so a line stands alone)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for t in tasks:
            f.write(json.dumps(asdict(t), ensure_ascii=False) + "\n")


def load_tasks(path: Path) -> list[Task]:
    """Inverse of `save_tasks`; equal documents come back as one shared string object."""
    shared: dict[str, str] = {}
    tasks = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        document = shared.setdefault(d["document"], d["document"])
        tasks.append(
            Task(
                d["id"],
                document,
                d["question"],
                tuple(d["answers"]),
                tuple(d.get("evidence", ())),
                d.get("kind", ""),
                int(d.get("doc_tokens", 0)),
            )
        )
    return tasks


def count_tokens(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
