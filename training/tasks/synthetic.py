"""RULER-style facts planted in real novels: single needle, multi-needle, multi-hop, variable tracking,
`absent` and `open`, with look-alike distractors; entities invented and checked absent from the window."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from inference.contract_review import normalize
from inference.templates import NOT_IN_DOCUMENT
from training.tasks.base import (
    ABSENT,
    BOOKS_DIR,
    DEFAULT_CURRICULUM,
    KINDS,
    OPEN,
    SYNTHETIC_KINDS,
    Split,
    Task,
    count_tokens,
)
from training.tasks.books import _SENTENCE_END, _book, split_books

# --- invented entities --------------------------------------------------------------------------
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "kr", "th")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "", "n", "r", "l", "s", "th", "k")
_TOWN_ENDS = ("wick", "holm", "mere", "ford", "stead", "bury", "thorpe")
_OBJECTS = ("brass key", "silver compass", "leather journal", "velvet pouch", "pocket watch", "ivory seal")
_COLOURS = ("crimson", "ochre", "teal", "violet", "amber", "indigo", "scarlet", "olive")
_CONTAINERS = ("box", "chest", "crate", "trunk", "casket", "basket")


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables))


class _Inventor:
    """Invents values never used twice in one document, so a distractor never shares the gold."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def _fresh(self, make: Callable[[], str]) -> str:
        while True:
            value = make()
            if value.lower() not in self.used:
                self.used.add(value.lower())
                return value

    def person(self) -> str:
        r = self.rng
        return self._fresh(lambda: f"{_word(r, 2).title()} {_word(r, 3).title()}")

    def number(self) -> str:
        return self._fresh(lambda: str(self.rng.randint(10_000, 9_999_999)))

    def word(self) -> str:
        return self._fresh(lambda: _word(self.rng, 3))

    def town(self) -> str:
        return self._fresh(lambda: _word(self.rng, 2).title() + self.rng.choice(_TOWN_ENDS))

    def var(self) -> str:
        return self._fresh(lambda: "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(5)))

    def box(self) -> str:
        return self._fresh(lambda: f"{self.rng.choice(_COLOURS)} {self.rng.choice(_CONTAINERS)}")


# (statement, question, value kind): a key-value fact about a person.
_NEEDLES: tuple[tuple[str, str, str], ...] = (
    ("The vault code of {who} is {value}.", "What is the vault code of {who}?", "number"),
    ("{who} keeps the spare key in the town of {value}.", "In which town does {who} keep the spare key?", "town"),
    ("The password to {who}'s study is {value}.", "What is the password to {who}'s study?", "word"),
    ("{who}'s ship was named the {value}.", "What was {who}'s ship named?", "word"),
    ("The ticket number of {who} is {value}.", "What is the ticket number of {who}?", "number"),
)


def _words(alternatives: str) -> re.Pattern:
    return re.compile(rf"\b(?:{alternatives})\b", re.IGNORECASE)


# (question, the words of its subject, which the window must not hold, the planted answer, value kind).
# Weather is the subject of the throughput benchmark's one invented memory (benchmarks/run.py asks it of
# Little Women, held out); the others are subjects none of its eight questions asks about.
_OPEN: tuple[tuple[str, re.Pattern, str, str], ...] = (
    (
        "What is the weather like?",
        _words(
            r"weather|sun|sunny|sunshine|rain|rains|rained|raining|rainy|snow|snowy|snowing|"
            r"wind|windy|breeze|storm|stormy|clouds?|cloudy|fog|foggy|mist|misty|frost|winter|summer|autumn"
        ),
        "It was raining in {value} on the day {who} arrived.",
        "town",
    ),
    (
        "What does anyone eat?",
        _words(
            r"eat|eats|ate|eaten|eating|dine|dined|dinner|breakfast|supper|lunch|meal|food|bread|cake|soup|tea|fruit"
        ),
        "At supper {who} ate a bowl of {value} stew.",
        "word",
    ),
    (
        "Which animals appear?",
        _words(
            r"dogs?|horses?|cats?|birds?|cows?|sheep|pigs?|mouse|mice|rats?|animals?|beasts?|fish|hounds?|ponies|pony"
        ),
        "{who} kept a grey pony named {value}.",
        "word",
    ),
    (
        "What music is played?",
        _words(r"music|piano|songs?|sing|sings|sang|singing|violin|tunes?|played|playing|organ|hymns?"),
        "{who} played a waltz called {value} on the piano.",
        "word",
    ),
    (
        "Who falls ill, and with what?",
        _words(r"ill|illness|sick|sickness|fever|disease|doctor|cough|health|invalid"),
        "{who} fell ill with {value} fever.",
        "word",
    ),
    (
        "How much money is paid?",
        _words(r"money|paid|pay|dollars?|pounds?|shillings?|price|cost|costs|cheque"),
        "{who} paid {value} dollars for the room.",
        "number",
    ),
    (
        "Which books or newspapers are read?",
        _words(r"books?|read|reads|reading|novels?|newspapers?|papers?|poems?"),
        "{who} was reading a novel called {value}.",
        "word",
    ),
)
_MULTI: tuple[tuple[str, str], ...] = (
    ("One of the vault codes of {who} is {value}.", "What are all {k} vault codes of {who}, in the order they appear?"),
    ("One of the towns {who} visited is {value}.", "Which {k} towns did {who} visit, in the order they appear?"),
)


@dataclass(frozen=True)
class _Plant:
    """Sentences to plant: `groups` keep their inner order in the document; group 0 is the
    evidence of the question, the others are distractors."""

    kind: str
    question: str
    answers: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]
    unmentioned: re.Pattern | None = None  # words the window must not hold (an open question's subject)


def _value(inv: _Inventor, kind: str) -> str:
    if kind == "word":
        return inv.word().title()
    return getattr(inv, kind)()


def _plant(kind: str, rng: random.Random, inv: _Inventor, distractors: int) -> _Plant:
    if kind == ABSENT:  # any other kind's question without its evidence: only the look-alikes about others
        asked = _plant(rng.choice(KINDS), rng, inv, max(1, distractors))
        return _Plant(kind, asked.question, (NOT_IN_DOCUMENT,), ((), *asked.groups[1:]))
    if kind == OPEN:
        question, unmentioned, statement, vkind = rng.choice(_OPEN)
        if rng.random() < 0.5:
            return _Plant(ABSENT, question, (NOT_IN_DOCUMENT,), ((),), unmentioned)
        value = _value(inv, vkind)
        return _Plant(kind, question, (value,), ((statement.format(who=inv.person(), value=value),),), unmentioned)
    if kind == "single-needle":
        statement, question, vkind = rng.choice(_NEEDLES)
        who, value = inv.person(), _value(inv, vkind)
        others = [(statement.format(who=inv.person(), value=_value(inv, vkind)),) for _ in range(distractors)]
        return _Plant(kind, question.format(who=who), (value,), ((statement.format(who=who, value=value),), *others))
    if kind == "multi-needle":
        statement, question = rng.choice(_MULTI)
        vkind = "number" if "codes" in statement else "town"
        who, k = inv.person(), rng.randint(2, 3)
        values = [_value(inv, vkind) for _ in range(k)]
        answers = (", ".join(values), ", ".join(values[:-1]) + " and " + values[-1])
        others = [(statement.format(who=inv.person(), value=_value(inv, vkind)),) for _ in range(distractors)]
        evidence = tuple(statement.format(who=who, value=v) for v in values)
        return _Plant(kind, question.format(k=k, who=who), answers, (evidence, *others))
    if kind == "multi-hop":
        obj = rng.choice(_OBJECTS)

        def chain(who: str, box: str, town: str) -> tuple[str, ...]:
            return (f"{who}'s {obj} is in the {box}.", f"The {box} is in the town of {town}.")

        who, town = inv.person(), inv.town()
        others = [chain(inv.person(), inv.box(), inv.town()) for _ in range(distractors)]
        return _Plant(kind, f"In which town is {who}'s {obj}?", (town,), (chain(who, inv.box(), town), *others))
    if kind == "variable-tracking":

        def chain(hops: int) -> tuple[list[str], str, str]:
            names, value = [inv.var() for _ in range(hops + 1)], inv.number()
            lines = [f"VAR {names[0]} = {value}."] + [f"VAR {b} = VAR {a}." for a, b in zip(names, names[1:])]
            return lines, names[-1], value

        lines, last, value = chain(rng.randint(1, 2))
        others = [tuple(chain(rng.randint(1, 2))[0]) for _ in range(distractors)]
        return _Plant(kind, f"What is the value of VAR {last}?", (value,), (tuple(lines), *others))
    raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(SYNTHETIC_KINDS)}")


def _insert(window: str, points: Sequence[int], sentences: Sequence[str]) -> str:
    """`window` with sentence i inserted (after a space) at character offset points[i] (sorted)."""
    out, last = [], 0
    for at, sentence in zip(points, sentences):
        out += [window[last:at], " ", sentence]
        last = at
    out.append(window[last:])
    return "".join(out)


def _plant_document(
    rng: random.Random,
    tokenizer: Any,
    text: str,
    starts: list[int],
    doc_tokens: int | None,
    plants: Sequence[_Plant],
) -> tuple[str, int] | None:
    """Plant every group of `plants` at random sentence boundaries of a random window of `text`
    (the whole text when doc_tokens is None), the window sized so that the document has exactly
    doc_tokens tokens. None when this window does not fit (too few boundaries, gold in the text)."""
    groups = [g for p in plants for g in p.groups]
    sentences = [s for g in groups for s in g]
    if doc_tokens is None:
        first, span = 0, len(starts)
    else:
        span = doc_tokens - sum(count_tokens(tokenizer, " " + s) for s in sentences)
        if span < 16 or span + 64 >= len(starts):
            raise ValueError(
                f"cannot build a {doc_tokens}-token document from a {len(starts)}-token book "
                f"with {len(sentences)} planted sentences"
            )
        # An open question the document does not answer is asked of the book's opening half the time: its
        # title page and contents are where the reader invented an answer from nothing (README, "Speed").
        # Not one a planted sentence answers: the openings are for keeping nothing.
        opening = any(p.unmentioned and p.kind == ABSENT for p in plants) and rng.random() < 0.5
        first = 0 if opening else rng.randrange(len(starts) - span - 64)

    def window_of(span: int) -> str:
        end = first + span
        return text[starts[first] : starts[end] if end < len(starts) else len(text)]

    def mentions_a_subject(window: str) -> bool:
        return any(p.unmentioned and p.unmentioned.search(window) for p in plants)

    window = window_of(span)
    plain = normalize(window)
    if any(normalize(a) in plain for p in plants for a in p.answers) or mentions_a_subject(window):
        return None
    # Boundaries in the first 95% only, so resizing the window's end never cuts a planted sentence off.
    bounds = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() < 0.95 * len(window)]
    if len(bounds) < len(sentences):
        return None
    points = sorted(rng.sample(bounds, len(sentences)))
    # Interleave the groups at random, each group's sentences kept in order (link before hop,
    # VAR A before VAR B = VAR A).
    owners = [i for i, g in enumerate(groups) for _ in g]
    rng.shuffle(owners)
    cursor = [0] * len(groups)
    ordered = []
    for i in owners:
        ordered.append(groups[i][cursor[i]])
        cursor[i] += 1
    if doc_tokens is None:
        document = _insert(window, points, ordered)
        return document, count_tokens(tokenizer, document)
    # Token counts are not quite additive at the seams: resize the window until the document is exact.
    for _ in range(12):
        document = _insert(window_of(span), points, ordered)
        n = count_tokens(tokenizer, document)
        if n == doc_tokens:
            return None if mentions_a_subject(window_of(span)) else (document, n)
        span += doc_tokens - n
        if first + span >= len(starts):
            return None
    return None


def synthetic_tasks(
    tokenizer: Any,
    split: Split,
    doc_tokens: int | None,
    n: int,
    seed: int = 0,
    kinds: Sequence[str] = KINDS,
    facts_per_doc: int = 1,
    distractors: int = 1,
    books_dir: Path = BOOKS_DIR,
) -> list[Task]:
    """`n` tasks whose documents are windows of exactly `doc_tokens` tokens (under `tokenizer`) of the
    split's books (`doc_tokens=None`: whole books), each document carrying `facts_per_doc` planted
    questions (plus `distractors` look-alikes per question) and shared by those tasks. Kinds are
    drawn uniformly from `kinds`. Same arguments, same tasks."""
    if n < 1 or facts_per_doc < 1:
        raise ValueError("n and facts_per_doc must be at least 1")
    for k in kinds:
        if k not in SYNTHETIC_KINDS:
            raise ValueError(f"unknown kind {k!r}; choose from {', '.join(SYNTHETIC_KINDS)}")
    rng = random.Random(f"{seed}:{split}:{doc_tokens}")
    books = split_books(split)
    length = "book" if doc_tokens is None else str(doc_tokens)
    tasks: list[Task] = []
    doc_index = 0
    while len(tasks) < n:
        name = books[doc_index % len(books)] if doc_tokens is None else rng.choice(books)
        text, starts = _book(tokenizer, name, books_dir)
        for _attempt in range(50):
            inv = _Inventor(rng)
            plants = [
                _plant(rng.choice(list(kinds)), rng, inv, distractors)
                for _ in range(min(facts_per_doc, n - len(tasks)))
            ]
            if any(a.lower() in p.question.lower() for p in plants for a in p.answers):
                continue
            built = _plant_document(rng, tokenizer, text, starts, doc_tokens, plants)
            if built is not None:
                break
        else:
            raise RuntimeError(f"could not plant {facts_per_doc} facts in {name} at {length} tokens in 50 tries")
        document, tokens = built
        for j, p in enumerate(plants):
            tasks.append(
                Task(
                    f"syn-{split}-{length}-s{seed}-d{doc_index}-q{j}",
                    document,
                    p.question,
                    p.answers,
                    p.groups[0],
                    p.kind,
                    tokens,
                )
            )
        if len(plants) == 1 and plants[0].kind == OPEN:  # its twin, one sentence shorter
            twin = document.replace(" " + plants[0].groups[0][0], "", 1)
            tasks.append(
                Task(
                    f"syn-{split}-{length}-s{seed}-d{doc_index}-twin",
                    twin,
                    plants[0].question,
                    (NOT_IN_DOCUMENT,),
                    (),
                    ABSENT,
                    count_tokens(tokenizer, twin),
                )
            )
        doc_index += 1
    return tasks[:n]


def curriculum_tasks(
    tokenizer: Any,
    stages: Sequence[tuple[int, int]] = DEFAULT_CURRICULUM,
    split: Split = "train",
    seed: int = 0,
    kinds: Sequence[str] = KINDS,
    distractors: int = 1,
) -> list[Task]:
    """The tasks of each (doc_tokens, n) stage, shortest stage first (a trainer reads them in order)."""
    out: list[Task] = []
    for i, (doc_tokens, n) in enumerate(sorted(stages)):
        out += synthetic_tasks(
            tokenizer, split, doc_tokens, n, seed=seed * 1000 + i, kinds=kinds, distractors=distractors
        )
    return out
