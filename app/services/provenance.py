"""Provenance: for each sentence of a reading's final memory and of its answer, the step where it
entered the memory (and stayed), the pages of the chunk read at that step, and the sentence of that
chunk that matches it best (whole, where the chunk cuts it): the passage a person checks it against.

Derived from the checkpoints alone, tolerant of small rewordings: sentences are compared as sets
of normalised words (how much of one is found in the other), not as strings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.db import session_scope
from app.services.readings import require_reading
from app.services.users import UserView, resolve_actor
from app.settings import Settings

#: share of a sentence's words found in another for the two to count as the same
SAME = 0.7
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORD = re.compile(r"\w+")


def sentences(text: str | None) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text` (ends: . ! ? ; before whitespace, or line
    breaks), surrounding whitespace left out."""
    spans, start = [], 0
    text = text or ""
    for m in [*_SENTENCE_END.finditer(text), None]:
        end = m.start() if m else len(text)
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + len(piece.rstrip())))
        if m:
            start = m.end()
    return spans


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def found_in(sentence: set[str], other: set[str]) -> float:
    """How much of `sentence` (its words) is in `other`: 1.0 all of it, 0.0 none (or no words)."""
    return len(sentence & other) / len(sentence) if sentence else 0.0


def _in_memory(sentence: set[str], memory: str) -> bool:
    return any(found_in(sentence, words(memory[a:b])) >= SAME for a, b in sentences(memory))


def entered_at(sentence: str, memories: Sequence[str]) -> int | None:
    """The 1-based step from which `sentence` is in every memory up to the last: where it entered the
    memory and stayed. None if the last memory does not hold it (an answer can say what no memory did)."""
    w = words(sentence)
    step = None
    for k in range(len(memories), 0, -1):
        if not _in_memory(w, memories[k - 1]):
            break
        step = k
    return step


#: how far past a chunk's ends a sentence that the chunk cuts may reach, in characters
REACH = 400


def best_passage(sentence: str, text: str, start: int, end: int) -> tuple[int, int, float]:
    """Of the document's sentences that overlap the chunk text[start:end] (whole, even where the chunk
    cuts them), the one holding most of `sentence`'s words: its span in `text`, and how much it holds."""
    w = words(sentence)
    left = max(0, start - REACH)
    window = text[left : min(len(text), end + REACH)]
    best = (start, end, 0.0)
    for a, b in sentences(window):
        a, b = a + left, b + left
        if b <= start or a >= end:
            continue
        score = found_in(w, words(text[a:b]))
        if score > best[2]:
            best = (a, b, score)
    return best


@dataclass(frozen=True)
class SourceView:
    #: `memory` (a sentence of the final memory) or `answer`
    part: str
    sentence: str
    #: the step where it entered the memory and stayed; None: no memory held it
    step: int | None
    #: who wrote the memory at that step: `agent`, or `edited` (then it came from a person, not the chunk)
    origin: str | None
    first_page: int | None
    last_page: int | None
    #: the best-matching passage of that step's chunk: character offsets in the document, its text, and
    #: the share of the sentence's words it holds
    passage_start: int | None
    passage_end: int | None
    passage: str | None
    score: float


def provenance(settings: Settings, reading_id: int, *, user: UserView | None = None) -> list[SourceView]:
    """Where each sentence of the reading's final memory and of its answer came from (NotFound if no
    reading, or not the user's)."""
    with session_scope(settings.resolved_database_url) as s:
        r = require_reading(s, reading_id, resolve_actor(s, settings, user))
        steps = r.timeline()
        text = r.document.text or ""
        answer = r.answer
    memories = [c.memory for c in steps]
    parts = [("memory", memories[-1][a:b]) for a, b in sentences(memories[-1])] if memories else []
    parts += [("answer", answer[a:b]) for a, b in sentences(answer)] if answer else []
    out = []
    for part, sentence in parts:
        k = entered_at(sentence, memories)
        if k is None:
            out.append(SourceView(part, sentence, None, None, None, None, None, None, None, 0.0))
            continue
        c = steps[k - 1]
        a, b, score = best_passage(sentence, text, c.start_char, c.end_char)
        out.append(SourceView(part, sentence, k, c.origin or "agent", c.first_page, c.last_page, a, b, text[a:b],
                              round(score, 3)))
    return out


def passage_in_context(settings: Settings, reading_id: int, start: int, end: int,
                       margin: int = 600, *, user: UserView | None = None) -> tuple[str, str, str]:
    """The passage text[start:end] of the reading's document with up to `margin` characters either side:
    (before, passage, after), for showing it highlighted in place."""
    with session_scope(settings.resolved_database_url) as s:
        text = require_reading(s, reading_id, resolve_actor(s, settings, user)).document.text or ""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    return text[max(0, start - margin) : start], text[start:end], text[end : end + margin]
