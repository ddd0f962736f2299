"""Where a reading lost its answer, from the memory it held after each chunk and the gold.

Every question gets one `where`:

- `correct`;
- `never-entered`: no memory of the reading ever held the gold (the evidence was never written down);
- `overwritten`: some memory held it, the final one no longer did;
- `answer-missed`: the final memory held it and the answer step did not give it.

A question the document does not answer (gold `NOT_IN_DOCUMENT`, or a yes/no question whose gold is "No":
the clause is not there) has no evidence to lose: it is `correct`, or `kept-something` when the final memory
kept something all the same (what the answer step then built an answer on), or `answer-missed` when the memory
kept nothing and the answer still did not abstain.

"Held" means: the memory names the gold as the strict verifier finds it in an answer (`verifier.mentions`:
every party of a Parties gold, every item of a listed one, dates by meaning, at word boundaries), other
candidates beside it allowed; for a yes/no question whose gold is "Yes", the memory holds at least half of the
content words of a marked evidence clause (a memory restates a clause, seldom copies it whole).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from inference.agent import holds_nothing
from inference.capture import document_spans
from inference.contract_review import normalize
from inference.templates import NO_MEMORY, NOT_IN_DOCUMENT
from training.verifier import is_yes_no, mentions

CORRECT, NEVER_ENTERED, OVERWRITTEN, ANSWER_MISSED = "correct", "never-entered", "overwritten", "answer-missed"
KEPT_SOMETHING = "kept-something"
#: the three places an answerable question's miss happened, in reading order
MISSES: tuple[str, ...] = (NEVER_ENTERED, OVERWRITTEN, ANSWER_MISSED)

_WORD = re.compile(r"[a-z0-9]+")


def unanswerable(golds: Sequence[str]) -> bool:
    """The document holds no answer: the gold abstains, or says a clause asked about is not there.

    >>> unanswerable(["The document does not say."]), unanswerable(["No"]), unanswerable(["Yes"])
    (True, True, False)
    """
    return all(normalize(g) in (normalize(NOT_IN_DOCUMENT), "no") for g in golds) and bool(golds)


def empty(memory: str) -> bool:
    """A memory that keeps nothing: the reader's empty one (as the agent judges it), the starting one, or blank."""
    return memory.strip() in ("", NO_MEMORY) or holds_nothing(memory)


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 4}


def _clause_in(memory: str, clause: str) -> bool:
    wanted = _content_words(clause)
    return len(wanted) >= 3 and len(wanted & _content_words(memory)) >= len(wanted) / 2


def _squeezed(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def evidence_kept(memory: str, evidence: Sequence[str]) -> bool:
    """The memory keeps the marked evidence: every short span (a title, each party, a date: under four content
    words) word for word; or a clause by half its content words (as a "Yes" clause is held), or by one of its
    sentences of four content words or more nearly whole (nine in ten of them), as the extractive memory keeps a
    long clause's key sentence verbatim. The capture targets of issue 51 count this, the gold aside (an expiration
    date is computed from a kept term).

    >>> evidence_kept("The term is five (5) years.", ["Recitals first. The term is five (5) years from signing."])
    True
    >>> parties = ["Bruce Jenner", "CELEBRITY"]
    >>> evidence_kept("Made by Bruce  Jenner (CELEBRITY).", parties), evidence_kept("Jenner (CELEBRITY).", parties)
    (True, False)
    >>> evidence_kept("Payment is due within thirty days.", ["The term is five (5) years from signing."])
    False
    """
    have, squeezed = _content_words(memory), f" {_squeezed(memory)} "
    short = [f" {_squeezed(e)} " for e in evidence if len(_content_words(e)) < 4 and _squeezed(e)]
    if short and all(e in squeezed for e in short):
        return True
    for clause in evidence:
        if len(_content_words(clause)) >= 4 and _clause_in(memory, clause):
            return True
        for a, b in document_spans(clause):  # split as the extractive memory splits a chunk
            wanted = _content_words(clause[a:b])
            if len(wanted) >= 4 and len(wanted & have) >= 0.9 * len(wanted):
                return True
    return False


def holds(memory: str, golds: Sequence[str], evidence: Sequence[str] = ()) -> bool:
    """Whether a memory holds the answer (see the module's docstring).

    >>> holds("Governed by the laws of the State of New York.", ["New York"]), holds("Newark", ["New York"])
    (True, False)
    >>> holds("Signed October 30th, 2017 by both.", ["10/30/17"])
    True
    >>> holds("The parties are Acme Corp. and Beta LLC.", ['Acme Corp. ("Acme"); Beta LLC'])
    True
    >>> holds("Acme shall not compete with Beta in Ohio.", ["Yes"],
    ...       ["Acme shall not compete with Beta in Ohio for two years after termination."])
    True
    """
    if is_yes_no(golds):
        return any(_clause_in(memory, e) for e in evidence)
    return any(mentions(memory, g) for g in golds)


def where(memories: Sequence[str], golds: Sequence[str], evidence: Sequence[str], correct: bool) -> str:
    """Where the reading with these memories (after each chunk, in order) lost the answer; `correct` is the
    verdict on its answer.

    >>> where(["Nothing yet.", "The code is 42.", "The code is 42."], ["42"], [], False)
    'answer-missed'
    >>> where(["The code is 42.", "Dogs bark."], ["42"], [], False), where(["Dogs bark."], ["42"], [], False)
    ('overwritten', 'never-entered')
    >>> where(["The code is 7."], ["The document does not say."], [], False)
    'kept-something'
    """
    if correct:
        return CORRECT
    final = memories[-1] if memories else ""
    if unanswerable(golds):
        return ANSWER_MISSED if empty(final) else KEPT_SOMETHING
    if final and holds(final, golds, evidence):
        return ANSWER_MISSED
    if any(holds(m, golds, evidence) for m in memories):
        return OVERWRITTEN
    return NEVER_ENTERED


def rates(cases: Sequence[Any]) -> dict[str, Any]:
    """Per set of cases (objects or dicts with `answers`, `where`, `memories`, `evidence`): each miss's share of
    the answerable questions; how often the final memory kept the marked evidence (`evidence_kept`, of those with
    evidence); how often the answer was right when the final memory held the gold (`correct`
    plus `answer-missed` among answerable); and how often the final memory kept something when the document
    answers nothing."""

    def get(c: Any, key: str) -> Any:
        return c[key] if isinstance(c, dict) else getattr(c, key)

    answerable = [c for c in cases if not unanswerable(get(c, "answers"))]
    absent = [c for c in cases if unanswerable(get(c, "answers"))]
    n = len(answerable)
    out: dict[str, Any] = {"answerable": n}
    for miss in MISSES:
        out[miss] = sum(get(c, "where") == miss for c in answerable) / n if n else None
    final_held = [
        c
        for c in answerable
        if get(c, "where") == ANSWER_MISSED
        or (
            get(c, "where") == CORRECT
            and get(c, "memories")
            and holds(get(c, "memories")[-1], get(c, "answers"), get(c, "evidence"))
        )
    ]
    out["final_held"] = len(final_held)
    out["answered_when_held"] = (
        sum(get(c, "where") == CORRECT for c in final_held) / len(final_held) if final_held else None
    )
    with_evidence = [c for c in answerable if get(c, "evidence")]
    out["with_evidence"] = len(with_evidence)
    out["evidence_kept"] = (
        sum(evidence_kept((get(c, "memories") or [""])[-1], get(c, "evidence")) for c in with_evidence)
        / len(with_evidence)
        if with_evidence
        else None
    )
    out["unanswerable"] = len(absent)
    kept = [c for c in absent if get(c, "memories") and not empty(get(c, "memories")[-1])]
    out["kept_something"] = len(kept) / len(absent) if absent else None
    return out
