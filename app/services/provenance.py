"""Provenance: for each sentence of a reading's final memory, the step where it entered the memory (and
stayed), the pages of the chunk read at that step, and the sentence of that chunk that matches it best
(whole, where the chunk cuts it): the passage a person checks it against. Each sentence of the answer
follows the memory sentence it was answered from to that sentence's passage, so it points where the
memory learnt it, not to another place where the same word occurs.

Derived from the checkpoints alone, tolerant of small rewordings: sentences are compared as sets of
normalised words (how much of one is found in the other), not as strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated, Literal

from pydantic import Field

from app.db import session_scope
from app.documents.base import page_of
from app.services.readings import require_reading
from app.services.users import UserView, resolve_actor
from app.settings import Settings
from inference.sentences import sentences

__all__ = [
    "SourceView",
    "Trace",
    "answer_source",
    "best_passage",
    "entered_at",
    "passage_in_context",
    "provenance",
    "sentences",
    "trace",
]

#: share of a sentence's words found in another for the two to count as the same
SAME = 0.7
#: share of a question's words a memory sentence must hold to be where a yes or no answer came from
ON_TOPIC = 0.34
#: ... or this many of them
ON_TOPIC_WORDS = 2
_YES_NO = frozenset({"yes", "no", "not", "true", "false", "none"})
#: a word, or a number or address with its inner dots and commas ("127.0.0.1", "1,000", "14.2"): one token, so
#: that a digit inside one does not pass for another number
_WORD = re.compile(r"\w+(?:[.,]\w+)*")
#: a plain ending: "governing", "governed", "governs", and the plural of a short word ("laws", "days")
_SUFFIX = re.compile(r"(?<=\w{4})(?:ing|ed|es|s)$|(?<=\w{2}[^\Wsiu])s$")


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _stems(text: str) -> set[str]:
    """The words of `text` with a plain ending cut ("governs", "governed" → "govern"): what a question and
    a memory sentence about it share."""
    return {_SUFFIX.sub("", w) for w in words(text)}


#: words that say nothing about which sentence a question is about
_FILLER = _stems("""a an the of to in on at by for from with as and or is are was were be been this that these
    those it its what which who whom whose when where how does do did any there their they such""")


def found_in(sentence: set[str], other: set[str]) -> float:
    """How much of `sentence` (its words) is in `other`: 1.0 all of it, 0.0 none (or no words)."""
    return len(sentence & other) / len(sentence) if sentence else 0.0


def _split(memories: Sequence[str]) -> Callable[[int], list[set[str]]]:
    """Memory k's sentences as sets of words (`split(k - 1)`), split on first use and kept: tracing several
    sentences walks the same memories."""
    return cache(lambda i: [words(memories[i][a:b]) for a, b in sentences(memories[i])])


def entered_at(
    sentence: str, memories: Sequence[str], split: Callable[[int], list[set[str]]] | None = None
) -> int | None:
    """The 1-based step from which `sentence` is in every memory up to the last: where it entered the
    memory and stayed. None if the last memory does not hold it (an answer can say what no memory did).
    `split`: the memories' `_split`, shared by the sentences traced together."""
    split = split or _split(memories)
    w = words(sentence)
    step = None
    for k in range(len(memories), 0, -1):
        if not any(found_in(w, m) >= SAME for m in split(k - 1)):
            break
        step = k
    return step


#: how far past a chunk's ends a sentence that the chunk cuts may reach, in characters
REACH = 400


def best_passage(sentence: str, text: str, start: int, end: int) -> tuple[int, int, float]:
    """Of the document's sentences that overlap the chunk text[start:end] (whole, even where the chunk
    cuts them), the one holding most of `sentence`'s words (the shorter of two that hold as much): its
    span in `text`, and how much it holds."""
    w = words(sentence)
    left = max(0, start - REACH)
    window = text[left : min(len(text), end + REACH)]
    best = (start, end, 0.0)
    for a, b in sentences(window):
        a, b = a + left, b + left
        if b <= start or a >= end:
            continue
        score = found_in(w, words(text[a:b]))
        if score > best[2] or (score == best[2] > 0 and b - a < best[1] - best[0]):
            best = (a, b, score)
    return best


@dataclass(frozen=True)
class Trace:
    """Where one sentence came from, in the document's own terms."""

    #: `memory` (a sentence of the final memory) or `answer`
    part: str
    sentence: str
    #: for an answer's sentence, the sentence of the final memory it was answered from
    via: str | None
    #: the step where it (or `via`) entered the memory and stayed; None: no memory held it
    step: int | None
    #: the best-matching passage of that step's chunk (character offsets in the text) and the share of the
    #: sentence's words it holds
    start: int | None
    end: int | None
    score: float


def _answered_from(sentence: str, question: str, memory: list[str]) -> int | None:
    """Which sentence of the final memory an answer's sentence came from: the one that holds most of its
    words ("Ohio law" is in "the laws of the State of Ohio"), the question's words breaking ties ("Delaware":
    the sentence about governing law, not the one about an address); for a yes or no answer ("Yes, it
    does."), the one most about the question: holding ON_TOPIC of its words, or ON_TOPIC_WORDS of them (a
    long question, such as a contract clause's description, shares few words with any one sentence)."""
    said, asked = _stems(sentence), _stems(question) - _FILLER
    held = [(found_in(said, _stems(m)), found_in(asked, _stems(m))) for m in memory]
    best = max(range(len(memory)), key=lambda i: held[i], default=None)
    if best is None or held[best][0] >= SAME:
        return best
    if not said or not said - _FILLER <= _YES_NO:
        return None
    topic = asked - _YES_NO
    shared = [len(topic & _stems(m)) for m in memory]
    best = max(range(len(memory)), key=lambda i: shared[i])
    return best if shared[best] and (held[best][1] >= ON_TOPIC or shared[best] >= ON_TOPIC_WORDS) else None


def _final_sentences(memories: Sequence[str]) -> list[str]:
    final = memories[-1] if memories else ""
    return [final[a:b] for a, b in sentences(final)]


def _trace_memory(
    sentence: str,
    text: str,
    chunks: Sequence[tuple[int, int]],
    memories: Sequence[str],
    split: Callable[[int], list[set[str]]],
) -> Trace:
    k = entered_at(sentence, memories, split)
    if k is None:
        return Trace("memory", sentence, None, None, None, None, 0.0)
    start, end, score = best_passage(sentence, text, *chunks[k - 1])
    return Trace("memory", sentence, None, k, start, end, round(score, 3))


def _trace_answer(memory: list[str], question: str, answer: str | None, traced: Callable[[int], Trace]) -> list[Trace]:
    """Each sentence of the answer, traced as the memory sentence it was answered from (`traced(i)`: the
    trace of memory[i])."""
    out = []
    for a, b in sentences(answer):
        i = _answered_from(answer[a:b], question, memory)
        out.append(
            Trace("answer", answer[a:b], None, None, None, None, 0.0)
            if i is None
            else replace(traced(i), part="answer", sentence=answer[a:b], via=memory[i])
        )
    return out


def trace(
    text: str, chunks: Sequence[tuple[int, int]], memories: Sequence[str], question: str, answer: str | None
) -> list[Trace]:
    """Where each sentence of the final memory, then of the answer, came from. `chunks[k - 1]` is the
    character span of the document (`text`) read at step k, `memories[k - 1]` the memory written there."""
    memory, split = _final_sentences(memories), _split(memories)
    out = [_trace_memory(m, text, chunks, memories, split) for m in memory]
    return out + _trace_answer(memory, question, answer, out.__getitem__)


def answer_source(
    text: str, chunks: Sequence[tuple[int, int]], memories: Sequence[str], question: str, answer: str | None
) -> Trace | None:
    """The passage the answer came from, as `trace` finds it: of its sentences' passages, the one that
    holds most of its memory sentence; None without an answer, or when no memory sentence held it. The
    one place that says which passage supports an answer (the contract review's rows use it too); traces
    only the memory sentences the answer came from."""
    memory, split = _final_sentences(memories), _split(memories)
    traced = cache(lambda i: _trace_memory(memory[i], text, chunks, memories, split))
    found = [t for t in _trace_answer(memory, question, answer, traced) if t.step is not None]
    return max(found, key=lambda t: t.score, default=None)


@dataclass(frozen=True)
class SourceView:
    """Where one sentence of the final memory or of the answer came from."""

    #: `memory` (a sentence of the final memory) or `answer`
    part: Literal["memory", "answer"]
    sentence: str
    via: Annotated[
        str | None,
        Field(
            description="for a sentence of the answer, the sentence of the final memory it "
            "was answered from (its passage is that sentence's)"
        ),
    ]
    step: Annotated[
        int | None, Field(description="the step where it entered the memory and stayed; None: no memory held it")
    ]
    #: (`edited`: then it came from a person, not the chunk)
    origin: Annotated[str | None, Field(description="`agent`, or `edited`: a person wrote the memory at that step")]
    first_page: int | None
    last_page: int | None
    page: Annotated[int | None, Field(description="the page (or section) the passage starts on")]
    #: its text, and the share of the sentence's words it holds
    passage_start: Annotated[
        int | None,
        Field(description="the best-matching passage of that step's chunk: character offsets in the document's text"),
    ]
    passage_end: int | None
    passage: str | None
    score: Annotated[float, Field(description="share of the sentence's words found in the passage")]


def provenance(settings: Settings, reading_id: int, *, user: UserView | None = None) -> list[SourceView]:
    """Where each sentence of the reading's final memory and of its answer came from (NotFound if no
    reading, or not the user's)."""
    with session_scope(settings.resolved_database_url) as s:
        r = require_reading(s, reading_id, resolve_actor(s, settings, user))
        steps = [
            (c.start_char, c.end_char, c.memory, c.origin or "agent", c.first_page, c.last_page) for c in r.timeline()
        ]
        question, answer = r.question, r.answer
        text, starts = r.document.text or "", list(r.document.page_starts or [0])
    out = []
    for t in trace(text, [(a, b) for a, b, *_ in steps], [m for _, _, m, *_ in steps], question, answer):
        if t.step is None:
            out.append(SourceView(t.part, t.sentence, t.via, None, None, None, None, None, None, None, None, 0.0))
            continue
        _, _, _, origin, first, last = steps[t.step - 1]
        out.append(
            SourceView(
                t.part,
                t.sentence,
                t.via,
                t.step,
                origin,
                first,
                last,
                page_of(starts, t.start),
                t.start,
                t.end,
                text[t.start : t.end],
                t.score,
            )
        )
    return out


def passage_in_context(
    settings: Settings, reading_id: int, start: int, end: int, margin: int = 600, *, user: UserView | None = None
) -> tuple[str, str, str]:
    """The passage text[start:end] of the reading's document with up to `margin` characters either side:
    (before, passage, after), for showing it highlighted in place."""
    with session_scope(settings.resolved_database_url) as s:
        text = require_reading(s, reading_id, resolve_actor(s, settings, user)).document.text or ""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    return text[max(0, start - margin) : start], text[start:end], text[end : end + margin]
