"""Training rows for the extractive memory's scorer (issue 51, item 1): every sentence of every chunk labelled for
every question asked of its document, so one prefill of a chunk teaches dozens of keep decisions, not one
rewritten memory.

A row is one chunk of one document, split as the reader splits it (`inference.capture`: the document's sentence
spans clipped to the chunk, long ones cut), with the questions of the document and, per question, which sentences
are evidence. Positives: a sentence that overlaps a marked passage by at least half of the shorter of the two
(a short answer inside a long sentence, or a sentence inside a marked paragraph; not a sentence that only touches
a passage's edge); every occurrence of a passage counts. Negatives: every other sentence, including look-alikes
of the same contract, and every sentence for a question with no passage ("No" clauses).

Sources: the 41 CUAD categories of the training contracts (never `NOT_FOR_TRAINING`: dev and held-out contracts),
and any `Task`s with evidence (planted facts, book questions of the training novels).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.capture import chunk_spans, document_spans
from inference.chunking import split_into_chunks


@dataclass(frozen=True)
class CaptureRow:
    source: str
    chunk: int
    #: the chunk's sentences as character spans of the document
    spans: tuple[tuple[int, int], ...]
    questions: tuple[str, ...]
    #: labels[q][i]: 1 when sentence i is evidence for question q
    labels: tuple[tuple[int, ...], ...]

    def sentences(self, document: str) -> list[str]:
        return [document[a:b] for a, b in self.spans]


def passage_spans(text: str, passages: Iterable[str], first: bool = False) -> list[tuple[int, int]]:
    """Every place each passage occurs in `text`, whatever whitespace stands between its words; with `first`, only
    where each first occurs (a party's name marked as evidence is where it is defined, not its every mention).

    >>> passage_spans("Law: Ohio.  Also Ohio\\nlaw.", ["Ohio law", "Ohio"])
    [(5, 9), (17, 21), (17, 25)]
    >>> passage_spans("Law: Ohio.  Also Ohio\\nlaw.", ["Ohio law", "Ohio"], first=True)
    [(5, 9), (17, 25)]
    """
    out = set()
    for p in passages:
        if words := p.split():
            found = [m.span() for m in re.finditer(r"\s+".join(map(re.escape, words)), text)]
            out |= set(found[:1] if first else found)
    return sorted(out)


def labels(spans: Sequence[tuple[int, int]], evidence: Sequence[tuple[int, int]]) -> tuple[int, ...]:
    """1 for a sentence that overlaps an evidence span by at least half of the shorter of the two.

    >>> labels([(0, 10), (10, 40), (40, 50)], [(12, 18), (38, 41)])
    (0, 1, 0)
    """

    def hit(a: int, b: int) -> bool:
        return any(min(b, d) - max(a, c) >= 0.5 * min(b - a, d - c) > 0 for c, d in evidence)

    return tuple(int(hit(a, b)) for a, b in spans)


def best_rank(scores: Sequence[float], labels: Sequence[int]) -> int | None:
    """The best rank (1 = first) of a labelled sentence among `scores`, ties to the earlier sentence as the memory
    breaks them; None when none is labelled.

    >>> best_rank([0.1, 0.5, 0.5, 0.2], [0, 0, 1, 1]), best_rank([1.0, 2.0], [0, 0])
    (2, None)
    """
    ranks = [
        sum(x > scores[i] for x in scores) + sum(x == scores[i] for x in scores[:i]) + 1
        for i, on in enumerate(labels)
        if on
    ]
    return min(ranks) if ranks else None


def document_rows(
    source: str,
    text: str,
    questions: Sequence[tuple[str, Sequence[str]]],
    tokenizer: Any,
    chunk_tokens: int = 1024,
    shift_tokens: int = 0,
) -> list[CaptureRow]:
    """One row per chunk of `text` (the app's chunking), each question (question, marked passages) labelled."""
    spans = document_spans(text)
    evidence = [passage_spans(text, passages) for _, passages in questions]
    rows = []
    for c in split_into_chunks(text, tokenizer, chunk_tokens, shift_tokens):
        here = tuple(chunk_spans(spans, c.start_char, c.end_char))
        rows.append(
            CaptureRow(
                source, c.index, here, tuple(q for q, _ in questions), tuple(labels(here, ev) for ev in evidence)
            )
        )
    return rows


def contract_rows(
    tokenizer: Any,
    contracts_dir: Path | None = None,
    exclude: Iterable[str] | None = None,
    chunk_tokens: int = 1024,
    limit: int | None = None,
) -> Iterable[tuple[str, CaptureRow]]:
    """(text, row) for every chunk of the training contracts, all 41 categories as questions."""
    from training.tasks import CONTRACTS_TRAIN_DIR, NOT_FOR_TRAINING, contract_cases

    contracts_dir = Path(contracts_dir or CONTRACTS_TRAIN_DIR)
    skip = frozenset(NOT_FOR_TRAINING if exclude is None else exclude) | NOT_FOR_TRAINING
    cases = [c for c in contract_cases(contracts_dir) if c["id"] not in skip][:limit]
    for case in cases:
        text = (contracts_dir / case["txt"]).read_text(encoding="utf-8")
        questions = [(qa["question"], [e for e in qa["evidence"] if e]) for qa in case["qa"]]
        for row in document_rows(case["id"], text, questions, tokenizer, chunk_tokens):
            yield text, row


def task_rows(tasks: Iterable[Any], tokenizer: Any, chunk_tokens: int = 1024) -> Iterable[tuple[str, CaptureRow]]:
    """(text, row) for `Task`s (planted facts, book questions): the tasks of one document share its rows."""
    by_doc: dict[int, list[Any]] = {}
    for t in tasks:
        by_doc.setdefault(id(t.document), []).append(t)
    for group in by_doc.values():
        text = group[0].document
        for row in document_rows(group[0].id, text, [(t.question, t.evidence) for t in group], tokenizer, chunk_tokens):
            yield text, row


def pointer_loss(logp: Any, labels: Sequence[int]) -> Any:
    """The loss of one (chunk, question) for the pointer scorer, from `inference.capture_scorer.label_log_probs`
    (log P of labels 0..n): -log of the probability of pointing at any evidence sentence, or at 0 (none) when the
    chunk holds none. Several positives share the mass: the scorer need not pick one of them.

    >>> import torch
    >>> round(float(pointer_loss(torch.log(torch.tensor([0.5, 0.2, 0.2, 0.1])), [1, 0, 1])), 4)  # -log 0.3
    1.204
    >>> round(float(pointer_loss(torch.log(torch.tensor([0.5, 0.2, 0.2, 0.1])), [0, 0, 0])), 4)  # -log 0.5
    0.6931
    """
    import torch

    positive = [i + 1 for i, on in enumerate(labels) if on]
    return -torch.logsumexp(logp[positive], 0) if positive else -logp[0]
