"""Sentence spans of prose, of contracts as PDFs give them (lines wrapped mid-sentence, numbered clauses,
"Acme, Inc.") and of a model's memory (one fact a line, "- " bullets).

A sentence ends at . ! or ? followed by a space and a capital, a digit, a quote or a bracket, unless the
word before the stop is an abbreviation ("Inc.", "U.S.", "e.g.", "No."); at a blank line; and at a line
break before a bullet or after a line that ends a sentence. A line break inside a sentence is not an end.
A piece that only numbers or introduces what follows ("1.", "(a)", "Definitions:") is not a sentence: it
joins the next one.
"""

from __future__ import annotations

import re

#: words that take a full stop without ending a sentence (compared lower-case, without the stop)
ABBREVIATIONS = frozenset(
    """
    inc ltd co corp llc lp llp plc bros assn dept intl univ mr mrs ms dr prof sr jr st mt ft hon rev
    e.g i.e cf vs v viz al approx
""".split()
)
#: ... and those that do so only before a number ("No. 5", "Sec. 2", "Jan. 1"): "The answer is no." ends one
BEFORE_NUMBERS = frozenset(
    """
    no nos art arts sec secs para paras ch cl p pp vol fig figs
    jan feb mar apr jun jul aug sep sept oct nov dec
""".split()
)

#: a stop (with closing quotes or brackets) followed by the space before the next sentence
_STOP = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[\"'“‘(\[A-Z0-9])")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_BULLET_LINE = re.compile(r"\n(?=[ \t]*(?:[-*•–]\s|\(?\d{1,3}[.)]\s|\([a-z]{1,4}\)\s))")
_LINE_END_STOP = re.compile(r"(?<=[.!?])[ \t]*\n")
#: a number that goes on a sentence rather than starts one: "Laurel, NJ. 08054 and ..."
_NUMBER_IN_SENTENCE = re.compile(r"\s+\d[\d,.]*\s+[a-z]")
#: longer than any abbreviation or run of initials a stop can close
_LONGEST_WORD = 40
_DIGIT_NEXT = re.compile(r"\s*\d")
#: initials and dotted abbreviations: "J.", "U.S.", "U.S.A."
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+")
#: what only numbers, heads or introduces a sentence: "1.", "1.1", "(a)", "ii.", "Section 4.", "2. Term.",
#: "Definitions:", "1.1 Definitions:", a heading in capitals ("SECTION ONE.", "RECITALS")
_NUMBER = (
    r"(?:(?:section|article|clause|§)\s*)?"
    r"(?:\(?(?:\d{1,3}(?:\.\d{1,3})*|(?-i:[ivxlcdm]{1,6}|[IVXLCDM]{1,6})|[a-z])[.)]"
    r"|\d{1,3}(?:\.\d{1,3})*|\([a-z0-9]{1,4}\))"
)
_FRAGMENT = re.compile(
    rf"(?:{_NUMBER}(?:\s+|$))+(?:(?-i:[A-Z])[\w'’-]*[ \t]*){{0,4}}[.:]?"
    rf"|(?:{_NUMBER}\s+)*[^\n.!?]{{0,60}}:|(?-i:[^a-z\n]{{1,80}})",
    re.IGNORECASE,
)


def _ends_sentence(text: str, stop: int) -> bool:
    """Whether the stop at text[stop] ends a sentence, judged by the word it closes and what follows."""
    if _NUMBER_IN_SENTENCE.match(text, stop + 1):
        return False
    if text[stop] != ".":
        return True
    # the word the stop closes, looked for in the few characters before it: the whole text before it made a
    # document's split quadratic (40 s for a 1M-token book)
    word = text[max(0, stop - _LONGEST_WORD) : stop + 1].rsplit(None, 1)[-1].lstrip("\"'“‘([")[:-1].lower()
    if _INITIALS.fullmatch(word + ".") or word in ABBREVIATIONS:
        return False
    return not (word in BEFORE_NUMBERS and _DIGIT_NEXT.match(text, stop + 1))


def _cuts(text: str) -> list[tuple[int, int]]:
    """(end of a piece, start of the next) at every place a sentence may end."""
    cuts = [(m.end(), m.end()) for m in _STOP.finditer(text) if _ends_sentence(text, m.start())]
    cuts += [(m.start(), m.end()) for m in _PARAGRAPH.finditer(text)]
    cuts += [(m.start(), m.end()) for m in _BULLET_LINE.finditer(text)]
    # a line that ends with a stop ends its sentence whatever comes next (a memory's one fact a line)
    cuts += [(m.start(), m.end()) for m in _LINE_END_STOP.finditer(text) if _ends_sentence(text, m.start() - 1)]
    return sorted(set(cuts))


def sentences(text: str | None) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text`, surrounding whitespace left out."""
    text = text or ""
    pieces, start = [], 0
    for end, nxt in [*_cuts(text), (len(text), len(text))]:
        if end < start:
            continue
        a, b = start, end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            pieces.append((a, b))
        start = max(start, nxt)
    spans: list[tuple[int, int]] = []
    pending: int | None = None  # the start of a fragment waiting for its sentence
    for a, b in pieces:
        if _FRAGMENT.fullmatch(text[a if pending is None else pending : b]):
            pending = a if pending is None else pending
            continue
        spans.append((a if pending is None else pending, b))
        pending = None
    if pending is not None:  # a fragment at the very end stays, joined to the sentence before it
        if spans:
            spans[-1] = (spans[-1][0], pieces[-1][1])
        else:
            spans.append((pending, pieces[-1][1]))
    return spans
