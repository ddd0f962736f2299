"""The extractive memory policy's core (DESIGN.md, "Two memory policies"; issue 51): every sentence of a chunk
gets a relevance score for the question, and the new memory is the best-scored sentences of the old memory and
the chunk, verbatim, in document order, within `memory_tokens`. A person's pinned lines always stay.

No engine here: a `Scorer` turns (chunk sentences, questions) into scores; `inference/capture_scorer.py` holds
the model scorer, `LexicalScorer` below is the floor any model must beat. A kept sentence carries the score it
got when its chunk was read, so a later chunk competes with it without re-reading it: scores must be comparable
across chunks (the model scorer's are log-odds against "none of these", not a softmax share of one chunk).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from inference.sentences import sentences

#: a sentence longer than this is cut at whitespace into pieces: a memory of 128 tokens could never keep it whole
MAX_SENTENCE_CHARS = 400
#: the most sentences one pass scores: the model scorer's labels are the numbers 1 to 99
MAX_SENTENCES = 99


@dataclass(frozen=True)
class Sentence:
    """A piece of the document, kept verbatim: `text` is `document[start:end]`. A pinned line (a person's edit)
    may have no place in the document (`start` None)."""

    text: str
    start: int | None = None
    end: int | None = None
    score: float = 0.0
    tokens: int = 0
    pinned: bool = False

    def line(self) -> str:
        return as_line(self.text)


class Scorer(Protocol):
    """Scores every sentence of a chunk for each question: `scores[q][i]` for question q and sentence i. The
    chunk comes first so that an engine can share its prefill across the questions of a pass; `document`, the
    whole text the chunk is part of, for a scorer that weighs words by how common they are in it."""

    def score(
        self, chunk: Sequence[str], questions: Sequence[str], document: str | None = None
    ) -> list[list[float]]: ...


def _cut_long(text: str, a: int, b: int, limit: int) -> list[tuple[int, int]]:
    """[a, b) as pieces of at most `limit` characters, cut at the last whitespace before the limit."""
    out = []
    while b - a > limit:
        cut = text.rfind(" ", a + 1, a + limit)
        cut = cut if cut > a else a + limit
        out.append((a, cut))
        a = cut
        while a < b and text[a].isspace():
            a += 1
    return [*out, (a, b)] if a < b else out


def _merge_shortest(spans: list[tuple[int, int]], most: int) -> list[tuple[int, int]]:
    """Join the shortest neighbouring pair until at most `most` spans are left (a chunk of one-word lines)."""
    spans = list(spans)
    while len(spans) > most:
        i = min(range(len(spans) - 1), key=lambda j: spans[j + 1][1] - spans[j][0])
        spans[i : i + 2] = [(spans[i][0], spans[i + 1][1])]
    return spans


def document_spans(document: str, max_chars: int = MAX_SENTENCE_CHARS) -> list[tuple[int, int]]:
    """The sentence spans of a whole document (split once, so a chunk's edges do not move its boundaries),
    long ones cut to `max_chars`."""
    return [piece for a, b in sentences(document) for piece in _cut_long(document, a, b, max_chars)]


def chunk_spans(
    spans: Sequence[tuple[int, int]], start: int, end: int, most: int = MAX_SENTENCES
) -> list[tuple[int, int]]:
    """The document's sentence spans clipped to the chunk [start, end): a sentence across a chunk's edge is read
    as two pieces, each in its own chunk; at most `most` of them.

    >>> chunk_spans([(0, 5), (6, 12), (13, 20)], 8, 20)
    [(8, 12), (13, 20)]
    """
    clipped = [(max(a, start), min(b, end)) for a, b in spans if a < end and b > start]
    return _merge_shortest(clipped, most)


def as_line(text: str) -> str:
    """A sentence on one line: a PDF wraps lines inside a sentence, a memory keeps one sentence a line."""
    return " ".join(text.split())


def first_of_each(lines: Iterable[str]) -> list[int]:
    """The indexes of the first of each distinct line (`as_line`): a document that repeats a kept sentence in a
    later chunk (however a PDF wraps it) would otherwise spend the memory's budget on a second copy.

    >>> first_of_each(["The law of Ohio.", "Rain.", as_line("The law\\nof Ohio.")])
    [0, 1]
    """
    seen: set[str] = set()
    out = []
    for i, line in enumerate(lines):
        if line not in seen:
            seen.add(line)
            out.append(i)
    return out


def assemble(
    memory: Sequence[Sentence], chunk: Sequence[Sentence], memory_tokens: int, threshold: float = -math.inf
) -> list[Sentence]:
    """The new memory: pinned lines first and always, then the best-scored sentences of `memory` and `chunk` whose
    score reaches `threshold`, while their tokens (each sentence's `tokens`, plus one for its line break) fit in
    `memory_tokens`; a sentence that does not fit is passed over for a shorter one. Returned pinned lines first,
    the rest in document order."""
    pinned = [s for s in memory if s.pinned]
    used = sum(s.tokens + 1 for s in pinned)
    candidates = sorted(
        (s for s in [*memory, *chunk] if not s.pinned and s.score >= threshold),
        key=lambda s: (-s.score, s.start if s.start is not None else -1),
    )
    kept = []
    for s in candidates:
        if used + s.tokens + 1 <= memory_tokens:
            kept.append(s)
            used += s.tokens + 1
    return pinned + sorted(kept, key=lambda s: s.start if s.start is not None else -1)


def render(memory: Sequence[Sentence]) -> str:
    """The memory as text, one sentence a line."""
    return "\n".join(s.line() for s in memory)


def scored(
    document: str, spans: Sequence[tuple[int, int]], scores: Sequence[float], count: Callable[[str], int]
) -> list[Sentence]:
    """The chunk's sentences with their scores and token counts."""
    return [Sentence(document[a:b], a, b, float(sc), count(document[a:b])) for (a, b), sc in zip(spans, scores)]


def pin(lines: Sequence[str], count: Callable[[str], int]) -> list[Sentence]:
    """A person's lines, kept whatever they score."""
    return [replace(Sentence(line, tokens=count(line)), pinned=True) for line in lines if line.strip()]


_WORD = re.compile(r"[a-z0-9]+")
#: words that say nothing of what a question asks about
STOPWORDS = frozenset(
    """
    the and for are was were this that these those with what which who whom whose when where why how does did
    has have had not any all each from into onto upon than then there their they them its his her our your
    you can could would should shall will may might must been being about after before other such only also
    contract agreement party parties clause section document say says said
""".split()
)


def content_stems(text: str) -> set[str]:
    """Lower-case words of three letters or more, less stopwords, cut to five letters (a poor man's stem).

    >>> sorted(content_stems("Which state's law governs this Agreement?"))
    ['gover', 'law', 'state']
    """
    return {w[:5] for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOPWORDS}


class LexicalScorer:
    """The share of the question's content words a sentence holds: no model, a floor for any scorer."""

    def score(self, chunk: Sequence[str], questions: Sequence[str], document: str | None = None) -> list[list[float]]:
        stems = [content_stems(s) for s in chunk]
        out = []
        for q in questions:
            wanted = content_stems(q)
            out.append([len(wanted & s) / len(wanted) if wanted else 0.0 for s in stems])
        return out
