"""A learned sentence scorer for the extractive memory (issue 51): a linear model over hashed features of a
(question, sentence) pair, trained on every sentence of the training contracts (training/relevance_train.py).

Why not the 135M model: as a pointer over numbered sentences it learned a first-sentence prior in 84 steps of
6 s and kept less evidence than word overlap (docs/experiments/2026-12-05-pointer-round1.md). A linear model
sees all 14,599 training questions against every sentence in minutes on 2 cores, scores a 1M-token document in
seconds, and its scores are log-odds, comparable across chunks as the memory needs (`inference.capture`).

Features, each a hashed index with value 1 unless said:
- the question itself (its normalised text): a bias per question, and the question crossed with each sentence word
  (the 41 review questions each learn their own words: "governed", "laws", "state" for Governing Law);
- the sentence's shape (short, upper case, a date, an amount, a defined term), crossed with the question;
- how much of the question the sentence holds (`LexicalScorer`'s share), as a value and in buckets, alone and
  crossed with the question: what carries to a question never trained on;
- the same share with each question word weighed by how few of the document's sentences hold it (its inverse
  document frequency, `DocumentWords`), likewise: in a novel, "Lucy" is in a thousand sentences and "pension" in a
  few. Alone it keeps the dev book questions' evidence for 60.3% against plain overlap's 48.7%, and contracts'
  for 57.5% against 61.5% (a 256-token memory; docs/experiments/2026-12-06-document-words.md): the model learns
  which share a question goes by.

No feature of the sentence alone, and no cross of the question's words with the sentence's: both learn what
contract evidence looks like and say nothing of a novel's (with them, the dev book questions' evidence was kept for
3.5% and 10.6%; word overlap keeps 41.7%, this model 41.2%: docs/experiments/2026-12-06-relevance-scorer.md).

A sentence's score depends on its text and its document alone, not its place: a kept sentence re-scored at a later
chunk gets the same score, so a memory needs no side record of scores.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from inference.capture import content_stems, document_spans

BITS = 22
SIZE = 1 << BITS
#: the shipped weights, beside the reader's adapter (int8, compressed: see `save`; made by training/relevance_train.py,
#: docs/experiments/2026-12-06-relevance-scorer.md)
WEIGHTS = Path(__file__).resolve().parent / "reader" / "relevance.npz"

_WORD = re.compile(r"[a-z0-9]+")
_MONTH = re.compile(r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d", re.I)
_NUMERIC_DATE = re.compile(r"\b\d{1,2}[/-]\d{1,2}[/-]\d{2,4}\b|\b(19|20)\d\d\b")
_MONEY = re.compile(r"[$€£]\s?\d|\b\d[\d,.]*\s*(dollars|percent|%)", re.I)
_DEFINED = re.compile(r"[\"“](the\s+)?[A-Z][\w\s]{1,40}[\"”]")

_M1, _M2, _M3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9)
_TAGS = {name: i + 1 for i, name in enumerate(("bias", "q", "qw", "qshape", "lex", "idf"))}


@lru_cache(maxsize=1 << 18)
def _id(token: str) -> int:
    """A stable number for a token (Python's own hash changes from one process to the next)."""
    return zlib.crc32(token.encode("utf-8"))


def _ids(tokens: Sequence[str]) -> np.ndarray:
    return np.fromiter((_id(t) for t in tokens), dtype=np.uint64, count=len(tokens))


def _mix(tag: str, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Hashed indices of tag × a (× b, every pair)."""
    h = a.astype(np.uint64) * _M1 + np.uint64(_TAGS[tag]) * _M3
    if b is not None:
        h = h[:, None] ^ (b.astype(np.uint64)[None, :] * _M2)
    h = h.ravel()
    h ^= h >> np.uint64(29)
    return (h & np.uint64(SIZE - 1)).astype(np.int64)


def sentence_words(text: str) -> list[str]:
    """The words a sentence is known by: lower case, two letters or more, cut to six (a poor man's stem)."""
    return sorted({w[:6] for w in _WORD.findall(text.lower()) if len(w) >= 2})


def shapes(text: str) -> list[str]:
    """What a sentence looks like, whatever its words.

    >>> shapes('This Agreement is dated March 3, 2004 ("Effective Date").')
    ['len:2', 'date', 'defined']
    """
    n = len(text.split())
    out = [f"len:{min(n.bit_length(), 7)}"]
    letters = [c for c in text if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) > 0.8 * len(letters):
        out.append("upper")
    if _MONTH.search(text) or _NUMERIC_DATE.search(text):
        out.append("date")
    if _MONEY.search(text):
        out.append("money")
    if _DEFINED.search(text):
        out.append("defined")
    return out


class DocumentWords:
    """How many of a document's sentences hold each content word: the weight of a question's word is
    log((sentences + 1) / (sentences holding it + 1)), so a word the document never uses weighs the most. Built
    from each sentence's `content_stems` (training has them already, in its `SentenceHalf`s)."""

    def __init__(self, sentence_stems: Iterable[set[str]]) -> None:
        self.holding: Counter[str] = Counter()
        self.sentences = 0
        for stems in sentence_stems:
            self.holding.update(stems)
            self.sentences += 1

    def weight(self, stem: str) -> float:
        return math.log((self.sentences + 1) / (self.holding.get(stem, 0) + 1))


@lru_cache(maxsize=64)
def document_words(text: str) -> DocumentWords:
    """A document's word counts, once a process: every chunk of a reading is scored against the same document
    (a 1M-token document takes seconds to count). As many as the readings a worker advances together
    (`Settings.max_batch`, 64), each of which may be on its own document."""
    return DocumentWords(content_stems(text[a:b]) for a, b in document_spans(text))


class Question:
    """A question's half of every feature, computed once a question and document. Without a document every word
    weighs the same."""

    def __init__(self, text: str, document: DocumentWords | None = None) -> None:
        self.stems = content_stems(text)
        key = " ".join(_WORD.findall(text.lower()))
        self.key = np.asarray([_id(key)], dtype=np.uint64)
        self.weights = {s: document.weight(s) if document else 1.0 for s in self.stems}
        self.total = sum(self.weights.values())


@lru_cache(maxsize=128)
def question(text: str, document: str | None) -> Question:
    """A question's half for a document, once a process: a reading scores its question at every chunk (a review,
    41 of them)."""
    return Question(text, document_words(document) if document else None)


class SentenceHalf:
    """A sentence's half of every feature, computed once a sentence, whatever the questions asked of it."""

    def __init__(self, text: str) -> None:
        self.words, self.shape = _ids(sentence_words(text)), _ids(shapes(text))
        self.stems = content_stems(text)


@lru_cache(maxsize=1 << 14)
def sentence_half(text: str) -> SentenceHalf:
    """A sentence's half, once a process: a memory's kept lines are scored again at every later chunk, for every
    question of a pass."""
    return SentenceHalf(text)


#: a share's five buckets (a quarter each, all of it the last), hashed once: what `features` and the scorer look up
_BUCKETS = {tag: _ids([f"{tag}:{b}" for b in range(5)]) for tag in ("lex", "idf")}


def _bucket(share):
    """The bucket of a share in [0, 1] (or of each of an array of them)."""
    return np.minimum((np.asarray(share) * 4).astype(int), 4)


def features(q: Question, s: SentenceHalf) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) of one (question, sentence) pair."""
    held = q.stems & s.stems
    share = len(held) / len(q.stems) if q.stems else 0.0
    weighed = sum(q.weights[w] for w in held) / q.total if q.total else 0.0
    binary = []
    for tag, value in (("lex", share), ("idf", weighed)):
        bucket = _BUCKETS[tag][[_bucket(value)]]
        binary += [_mix(tag, bucket), _mix(tag, q.key, bucket)]
    binary += [_mix("bias", np.zeros(1, np.uint64)), _mix("q", q.key), _mix("qw", q.key, s.words)]
    binary.append(_mix("qshape", q.key, s.shape))
    idx = np.concatenate([*binary, _mix("lex", np.zeros(1, np.uint64)), _mix("idf", np.zeros(1, np.uint64))])
    values = np.ones(len(idx), dtype=np.float32)
    values[-2:] = share, weighed
    return idx, values


class RelevanceScorer:
    """Scores sentences with trained weights: the log-odds that a sentence is evidence for the question."""

    def __init__(self, weights: np.ndarray) -> None:
        if weights.shape != (SIZE,):
            raise ValueError(f"relevance weights must have {SIZE} entries, not {weights.shape}")
        self.weights = weights.astype(np.float32)

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> RelevanceScorer:
        with np.load(path) as z:
            return cls(z["weights"].astype(np.float32) * np.float32(z["scale"]))

    @staticmethod
    @lru_cache(maxsize=1)
    def shipped() -> RelevanceScorer:
        """The shipped weights, loaded once a process (every reading step builds its agent anew)."""
        return RelevanceScorer.load(WEIGHTS)

    def save(self, path: Path) -> None:
        """The weights as int8 steps of max|w| / 127, those under 0.01 as 0: about 0.6 MB compressed, under the
        repository's 1 MB a file (tests/unit/test_repository_size.py). A score moves by a few hundredths."""
        path.parent.mkdir(parents=True, exist_ok=True)
        w = np.where(np.abs(self.weights) >= 0.01, self.weights, 0.0)
        scale = float(np.abs(w).max()) / 127 or 1.0
        np.savez_compressed(path, weights=np.round(w / scale).astype(np.int8), scale=np.float32(scale))

    def score(self, chunk: Sequence[str], questions: Sequence[str], document: str | None = None) -> list[list[float]]:
        halves = [sentence_half(text) for text in chunk]
        return [self._score_all(question(q, document), halves) for q in questions]

    def _score_all(self, q: Question, halves: Sequence[SentenceHalf]) -> list[float]:
        """Every sentence's score for one question: the weights of its `features`, summed for all sentences in
        a few array operations (a pair at a time, the 40 review questions took most of a review's reading)."""
        n = len(halves)
        if not n:
            return []
        w, zero = self.weights, np.zeros(1, np.uint64)
        total = np.full(n, w[_mix("bias", zero)][0] + w[_mix("q", q.key)][0], dtype=np.float64)
        for tag, parts in (("qw", [s.words for s in halves]), ("qshape", [s.shape for s in halves])):
            owner = np.repeat(np.arange(n), [len(p) for p in parts])
            total += np.bincount(owner, weights=w[_mix(tag, q.key, np.concatenate(parts))], minlength=n)
        held = [q.stems & s.stems for s in halves]
        share = np.array([len(h) / len(q.stems) if q.stems else 0.0 for h in held])
        weighed = np.array([sum(q.weights[x] for x in h) / q.total if q.total else 0.0 for h in held])
        for tag, value in (("lex", share), ("idf", weighed)):
            buckets = _BUCKETS[tag]
            per_bucket = w[_mix(tag, buckets)] + w[_mix(tag, q.key, buckets)]
            total += per_bucket[_bucket(value)] + w[_mix(tag, zero)][0] * value
        return total.tolist()
