"""Oracle traces: the memory a perfect reader holds after each chunk and its answer (the SFT warm-start
targets), and the corrections of a policy's memories."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Any, Sequence

from inference.dates import as_date, dates_written
from inference.templates import NO_EVIDENCE_MEMORY
from training.tasks.base import ABSENT, Task, count_tokens
from training.verifier import mentions

# --- oracle traces ------------------------------------------------------------------------------
# Sentence ends: . ! ? (maybe closing a quote or bracket) before whitespace, or a blank line. A period
# after an abbreviation, an initial or a section number ("Inc.", "Co.", "J.", "12.") ends nothing.
_END = re.compile(r"[.!?][\"'\u201d\u2019)]?(?=\s|$)|\n[ \t]*\n")
_ABBREVIATIONS = {
    "inc",
    "co",
    "corp",
    "ltd",
    "llc",
    "lp",
    "no",
    "nos",
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "jr",
    "sr",
    "sec",
    "art",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "u.s",
    "n.a",
    "s.a",
}


def _is_end(document: str, m: re.Match) -> bool:
    if m[0].startswith("\n") or m[0][0] != ".":
        return True
    word = re.search(r"[\w.]*$", document[max(0, m.start() - 12) : m.start()])[0].lower()
    return not (word in _ABBREVIATIONS or len(word) <= 1 or word.replace(".", "").isdigit())


def _sentence_start(document: str, start: int, limit: int = 400) -> int:
    """Where the sentence holding document[start] begins, looking back at most `limit` characters."""
    left = max(0, start - limit)
    for m in _END.finditer(document, left, start):
        if _is_end(document, m):
            left = m.end()
    while left < start and document[left].isspace():
        left += 1
    return left


def _sentence_span(document: str, start: int, end: int, limit: int = 400) -> tuple[int, int]:
    """Character span of the whole sentence holding document[start:end]; the evidence's own span
    when that sentence is longer than `limit` characters (memories must stay short)."""
    left = _sentence_start(document, start, limit)
    right = end
    # From the evidence's last character, so that evidence ending a sentence ends the span there.
    for m in _END.finditer(document, max(start, end - 1), min(len(document), end + limit)):
        if _is_end(document, m):
            right = max(end, m.start() if m[0].startswith("\n") else m.end())
            break
    return (left, right) if right - left <= limit else (start, end)


def oracle_memories(task: Task, chunk_texts: Sequence[str]) -> list[str]:
    """After each chunk, the memory a perfect reader would hold: the sentences holding every evidence
    string read so far (an evidence counts once its last character has been read), in document
    order, overlapping sentences merged, whitespace collapsed, one a line; before any evidence,
    `NO_EVIDENCE_MEMORY`. `chunk_texts` are the chunks that tile `task.document`, in order."""
    found = []
    for e in task.evidence:
        at = task.document.find(e)
        if at >= 0:
            found.append((at + len(e), _sentence_span(task.document, at, at + len(e))))
    memories, offset = [], 0
    for chunk in chunk_texts:
        at = task.document.find(chunk, offset) if chunk else offset
        offset = (at if at >= 0 else offset) + len(chunk)
        spans: list[list[int]] = []
        for left, right in sorted(span for seen_at, span in found if seen_at <= offset):
            if spans and left <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], right)
            else:
                spans.append([left, right])
        lines = dict.fromkeys(" ".join(task.document[a:b].split()) for a, b in spans)
        memories.append("\n".join(lines) if lines else NO_EVIDENCE_MEMORY)
    return memories


def passage_memory(task: Task, memory: str, tokenizer: Any, tokens: int, rng: random.Random) -> str | None:
    """A memory as the reader writes one: the document from a sentence's start on, whitespace collapsed, cut at
    `tokens` tokens. The sentence is the one holding the first evidence, and the passage must then hold every
    line of the oracle's final `memory` and name a gold answer (`verifier.mentions`: an answer it cannot support
    would teach the reader to invent), else None. A question the document does not answer (`ABSENT`) gets a
    sentence drawn with `rng`: a memory that holds text, none of it the answer, still answers that nothing was
    found ("No" to a clause the contract lacks).

    The oracle keeps the evidence's sentence, or only the evidence when the sentence is long, so a title was
    taught from "ENDORSEMENT AGREEMENT" alone; the reader, reading a contract, keeps the preamble up to its
    memory's cap ("This ENDORSEMENT AGREEMENT (the "Agreement") is made this 1st day of November, 2003 by and
    between ...") and answered the title with a party's name. Taught from these passages, the answer step has
    to pick the asked part out of the kind of memory the reader writes, or find that it is not there.
    """
    document = task.document
    if task.kind == ABSENT:
        return _passage(document, _sentence_start(document, rng.randrange(len(document))), tokenizer, tokens) or None
    firsts = [at for at in (document.find(e) for e in task.evidence) if at >= 0]
    if not firsts:
        return None
    passage = _passage(document, _sentence_start(document, min(firsts)), tokenizer, tokens)
    holds = all(line in passage for line in memory.split("\n")) and any(mentions(passage, g) for g in task.answers)
    return passage if holds else None


def _passage(document: str, start: int, tokenizer: Any, tokens: int) -> str:
    words = " ".join(document[start : start + 16 * tokens].split())  # a token is 4-5 characters: room to spare
    return tokenizer.decode(tokenizer(words, add_special_tokens=False, verbose=False)["input_ids"][:tokens]).strip()


_ASKING = re.compile(
    r"^(?:in which \w+|what|which|who|whom|where|when|how)\b(?: (?:is|are|was|were|does|do|did)\b)? *", re.IGNORECASE
)


def question_echo(question: str) -> str:
    """The question restated without its answer: the reader's commonest stray write on long documents (7 of
    16 final memories at 32K after SFT on look-alikes; written at a chunk without any planted fact, then
    carried past the fact), which `sft_echoes` trains it to replace.

    >>> question_echo("What was Zikbak Gourbrakthoun's ship named?")
    "Zikbak Gourbrakthoun's ship named."
    >>> question_echo("In which town does Pokkail Grortirmir keep the spare key?")
    'Pokkail Grortirmir keep the spare key.'
    >>> question_echo("What is the ticket number of Zounlul Thousgoukthail?")
    'The ticket number of Zounlul Thousgoukthail.'
    """
    body = _ASKING.sub("", question.strip()).rstrip("?").strip()
    return body[:1].upper() + body[1:] + "."


def evidence_gains(oracle: Sequence[str]) -> list[int]:
    """Chunks where the oracle's memory gains evidence: it differs from the memory before (the first chunk's,
    from the empty memory).

    >>> evidence_gains([NO_EVIDENCE_MEMORY, "The code is 42.", "The code is 42.", "The code is 42.\\nIt rained."])
    [1, 3]
    """
    return [k for k, memory in enumerate(oracle) if memory != (oracle[k - 1] if k else NO_EVIDENCE_MEMORY)]


def corrections(
    oracle: Sequence[str],
    policy: Sequence[str],
    chunk_texts: Sequence[str],
    limit: int,
    rng: random.Random | None = None,
) -> list[int]:
    """Chunks (at most `limit`, in reading order) where the policy's own reading went wrong and the oracle's
    memory can be written from what the policy had: its memory before the chunk and the chunk. Training
    on these (the policy's memory in, the oracle's out: DAgger) teaches recovery from the states the
    policy reaches, which oracle traces alone never show it. A line the policy had already lost is not
    asked for: that would teach it to invent. Over the limit, captures it missed come first (where the
    oracle gains a line), then its first mistake, then the others (drawn with `rng`, else earliest
    first): on a 64-chunk reading an echo written early is wrong at every chunk up to the fact.

    >>> chunks = ["Rain fell.", "The code is 42. Dogs bark.", "Cats nap."]
    >>> oracle = [NO_EVIDENCE_MEMORY, "The code is 42.", "The code is 42."]
    >>> echo = ["The code is.", "The code is.", "The code is."]
    >>> corrections(oracle, echo, chunks, 5), corrections(oracle, echo, chunks, 1)  # echo, then never captured
    ([0, 1], [1])
    >>> dropped = [NO_EVIDENCE_MEMORY, "The code is 42.", "Cats nap."]
    >>> corrections(oracle, dropped, chunks, 5, random.Random(0))
    [2]
    >>> corrections(oracle, [NO_EVIDENCE_MEMORY, "Dogs bark.", "Dogs bark."], chunks, 5)  # chunk 3 cannot restore it
    [1]
    """
    fixable = []
    for k, (target, chunk) in enumerate(zip(oracle, chunk_texts)):
        if _squash(policy[k]) == _squash(target):
            continue
        seen = _squash(chunk) + "\n" + (_squash(policy[k - 1]) if k else "")
        if target == NO_EVIDENCE_MEMORY or all(line in seen for line in target.split("\n")):
            fixable.append(k)
    gains = [k for k in evidence_gains(oracle) if k in fixable]
    rest = [k for k in fixable if k not in gains]
    if rng is not None:
        rest = rest[:1] + rng.sample(rest[1:], len(rest[1:]))
    return sorted((gains + rest)[:limit])


def _squash(text: str) -> str:
    return " ".join(text.split())


def with_answer_evidence(task: Task) -> Task | None:
    """A task without evidence (feedback, QA files) with its first gold answer found in the document
    as evidence, so that the oracle keeps that answer's sentence; None when no answer occurs in it
    (an oracle could not say where the answer came from). An `ABSENT` task needs none.

    >>> t = Task("t", "Intro. This Agreement is governed by the laws of Nevada. End.", "Which law?", ("Nevada",))
    >>> with_answer_evidence(t).evidence, with_answer_evidence(replace(t, answers=("Ohio",)))
    (('Nevada',), None)
    """
    if task.evidence or task.kind == ABSENT:
        return task
    found = next((a for a in task.answers if a and a in task.document), None)
    return replace(task, evidence=(found,)) if found else None


def oracle_answer(task: Task) -> str:
    r"""The final answer a perfect reader writes: `\boxed{first gold answer}`, a date as its evidence writes it.

    CUAD writes its dates "5/14/99" where the contract says "the 14th day of May, 1999": taught the former, a
    135M reader converted from its memory and got it wrong ("14/14/99", an invented "1/1/19"); copied, the
    date scores the same (`training.verifier` compares dates by meaning).

    >>> t = Task("t", "Made the 14th day of May, 1999.", "When?", ("5/14/99",), ("the 14th day of May, 1999",))
    >>> oracle_answer(t), oracle_answer(replace(t, evidence=("Made in 1999",)))
    ('\\boxed{the 14th day of May, 1999}', '\\boxed{5/14/99}')
    """
    gold = task.answers[0]
    if day := as_date(gold):
        written = (w for e in task.evidence for w, said in dates_written(e) if said.fits(day) and said.as_specific(day))
        gold = next(written, gold)
    return f"\\boxed{{{gold}}}"


def with_doc_tokens(tasks: Sequence[Task], tokenizer: Any) -> list[Task]:
    """`tasks` with `doc_tokens` counted (once per shared document)."""
    counts: dict[int, int] = {}
    return [
        replace(t, doc_tokens=counts.setdefault(id(t.document), count_tokens(tokenizer, t.document))) for t in tasks
    ]
