"""CUAD contracts with expert answers and evidence clauses, and governing-law variants with another
contract's clause planted."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Sequence

from inference.contract_review import EXTRACT
from training.tasks.base import (
    CONTRACTS_DIR,
    CONTRACTS_TRAIN_DIR,
    HELD_OUT_CONTRACTS,
    Split,
    Task,
    count_tokens,
    trainable_contract,
)
from training.tasks.oracle import _END, _is_end, _sentence_span
from training.verifier import US_STATES


# --- contracts ----------------------------------------------------------------------------------
def contract_cases(contracts_dir: Path) -> list[dict]:
    """A contracts folder's cases, one dict a contract: `cases.json` (contracts/) or `cases.jsonl`
    (contracts-train/, one contract a line)."""
    contracts_dir = Path(contracts_dir)
    if (contracts_dir / "cases.json").is_file():
        return json.loads((contracts_dir / "cases.json").read_text(encoding="utf-8"))
    lines = (contracts_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def category_slug(category: str) -> str:
    """A CUAD category as a task id's part: `cuad-000:governing-law`.

    >>> category_slug("Notice Period To Terminate Renewal"), category_slug("Rofr/Rofo/Rofn")
    ('notice-period-to-terminate-renewal', 'rofr-rofo-rofn')
    """
    return re.sub(r"[^a-z0-9]+", "-", category.lower()).strip("-")


def _folder(split: Split | Literal["all"], contracts_dir: Path | None) -> Path:
    """Training reads contracts-train (less the suites' contracts); evaluation the contracts with PDFs."""
    return Path(contracts_dir or (CONTRACTS_TRAIN_DIR if split == "train" else CONTRACTS_DIR))


def contract_ids(split: Split | Literal["all"], contracts_dir: Path | None = None) -> list[str]:
    """The contracts of a split: `train`, those of contracts-train that no evaluation suite reads (never one
    of `NOT_FOR_TRAINING`, whatever the folder); `held-out`, `HELD_OUT_CONTRACTS`; `all`, every one of
    contracts/."""
    ids = [c["id"] for c in contract_cases(_folder(split, contracts_dir))]
    if split == "all":
        return ids
    if split == "held-out":
        return [i for i in ids if i in HELD_OUT_CONTRACTS]
    if split == "train":
        return [i for i in ids if trainable_contract(i)]
    raise ValueError(f"unknown split {split!r}; choose 'train', 'held-out' or 'all'")


def contract_tasks(
    split: Split | Literal["all"],
    categories: Sequence[str] | None = None,
    contracts_dir: Path | None = None,
    tokenizer: Any = None,
    ids: Sequence[str] | None = None,
) -> list[Task]:
    """CUAD's extraction questions of the split's contracts (only `categories` if given, e.g.
    ["Governing Law"]; only the contracts `ids` of the split if given); the yes/no clause questions of
    contracts-train are not among them. Evidence clauses that are not verbatim in the text (10 of 595 in
    contracts/) are dropped (a date answer is matched in any form, training/verifier.py). `doc_tokens` is
    counted when a tokenizer is given."""
    contracts_dir = _folder(split, contracts_dir)
    cases = contract_cases(contracts_dir)
    wanted = set(contract_ids(split, contracts_dir)) & (set(ids) if ids is not None else {c["id"] for c in cases})
    known = {q["category"] for c in cases for q in c["qa"]}
    for c in categories or ():
        if c not in known:
            raise ValueError(f"unknown category {c!r}; choose from {', '.join(sorted(known))}")
    tasks = []
    for case in cases:
        if case["id"] not in wanted:
            continue
        document = (contracts_dir / case["txt"]).read_text(encoding="utf-8")
        tokens = count_tokens(tokenizer, document) if tokenizer is not None else 0
        for qa in case["qa"]:
            if qa.get("kind", EXTRACT) != EXTRACT or (categories and qa["category"] not in categories):
                continue
            evidence = tuple(e for e in qa["evidence"] if e and e in document)
            tasks.append(
                Task(
                    f"{case['id']}:{category_slug(qa['category'])}",
                    document,
                    qa["question"],
                    (qa["answer"],),
                    evidence,
                    f"contract:{qa['category']}",
                    tokens,
                )
            )
    return tasks


_OTHER_JURISDICTIONS = (
    "England",
    "Scotland",
    "Ireland",
    "Germany",
    "France",
    "Italy",
    "Spain",
    "the Netherlands",
    "Switzerland",
    "Sweden",
    "Singapore",
    "Hong Kong",
    "Japan",
    "Israel",
    "Ontario",
    "British Columbia",
    "New South Wales",
    "India",
    "Brazil",
    "Mexico",
    "the People's Republic of China",
)


def governing_law_variant(host: Task, donor: Task, rng: random.Random) -> Task | None:
    """`host`'s governing-law question on its contract with its own clause taken out and `donor`'s clause
    sentence planted at a random sentence end, the jurisdiction in it swapped for another (a US state
    after "State of" or "Commonwealth of", else any state or country). The training contracts' clauses are
    few next to the places a clause may sit in; variants put each in new company and with a new answer,
    so that it learns to find the clause rather than its training contracts' answers. None when the
    donor's answer is not in its clause, the host's clause cannot be taken out whole or the donor's sentence
    does not read as one sentence where it is planted.

    >>> host = Task("h", "Parties agree. This Agreement is governed by Texas law. Fees are due.", "Which law?",
    ...             ("Texas",), ("This Agreement is governed by Texas law.",), "contract:Governing Law")
    >>> donor = Task("d", "Intro. The laws of the State of Ohio govern this Agreement. End.", "Which law?",
    ...              ("Ohio",), ("laws of the State of Ohio govern",), "contract:Governing Law")
    >>> v = governing_law_variant(host, donor, random.Random(1))
    >>> v.answers, v.evidence
    (('Florida',), ('The laws of the State of Florida govern this Agreement.',))
    >>> v.document
    'Parties agree. The laws of the State of Florida govern this Agreement. Fees are due.'
    """
    answer = donor.answers[0]
    clause = next((e for e in donor.evidence if answer in e), None)
    if clause is None or len(donor.answers) > 1 or not host.evidence:
        return None
    at = donor.document.find(clause)
    left, right = _sentence_span(donor.document, at, at + len(clause))
    sentence = " ".join(donor.document[left:right].split())
    state = re.search(rf"(State|Commonwealth) of (the )?{re.escape(answer)}", sentence, re.IGNORECASE)
    jurisdiction = rng.choice([j for j in (US_STATES if state else US_STATES + _OTHER_JURISDICTIONS) if j != answer])
    sentence = sentence.replace(answer, jurisdiction)
    document = host.document
    for e in host.evidence:
        a = document.find(e)
        if a < 0:
            return None
        start, end = _sentence_span(document, a, a + len(e))
        document = document[:start] + document[end:].lstrip(" ")
    ends = [m.end() for m in _END.finditer(document) if _is_end(document, m)]
    if not ends:
        return None
    p = rng.choice(ends)
    document = document[:p] + " " + sentence + " " + document[p:].lstrip(" ")  # a blank line's end has no space after
    if _sentence_span(document, p + 1, p + 1 + len(sentence)) != (p + 1, p + 1 + len(sentence)):
        return None  # not a whole sentence where planted (a bare answer, no end): the memory would keep more
    return replace(
        host,
        id=f"{host.id}+{donor.id.split(':')[0]}:{jurisdiction}",
        document=document,
        answers=(jurisdiction,),
        evidence=(sentence,),
    )
