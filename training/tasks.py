"""Training and evaluation tasks: (document, question, gold answers, evidence) from four sources.

- **synthetic** RULER-style facts planted in real novels (`synthetic_tasks`): single needle, several
  needles of one key, multi-hop (two facts to combine) and variable tracking, each with distractors
  built from the same template with another entity, so a reader must keep the right one; and `absent`,
  a question of any of those kinds whose facts the document does not hold (only the look-alikes about
  others), which a reader should answer with `NOT_IN_DOCUMENT` rather than invent; and `open`, an open question
  about the story (the weather, what is eaten) asked of a window that never mentions its subject, answered
  by one planted sentence or by nothing. Entities and values
  are invented (pseudo-words, long numbers) and checked absent from the book window, so the answer is
  never guessable or findable elsewhere; documents are token-exact and seeded.
- **contracts** of CUAD with expert answers and `evidence` clauses (`contract_tasks`), and variants of
  their governing-law questions with another contract's clause planted, jurisdiction swapped
  (`governing_law_variant`).
- **feedback** exported by `longread feedback export` (`feedback_tasks`).
- **a user's cases** file (`cases_tasks`).

Splits are by document, never by question (`TRAIN_BOOKS`/`HELD_OUT_BOOKS`, `HELD_OUT_CONTRACTS`), so a
held-out score never benefits from having read the same text in training.

`evidence` are exact substrings of `document`; `oracle_memories` turns them into the memory a perfect
reader would hold after each chunk, and `oracle_answer` into its answer: the SFT warm-start targets.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Sequence

from inference.chunking import token_starts
from inference.templates import NO_EVIDENCE_MEMORY, NOT_IN_DOCUMENT
from training.verifier import normalize

def _data_dir() -> Path:
    """The shared books and contracts: LONGREAD_SHARED_DATA, else `../shared/data` beside the checkout,
    else this workplace's `/work/shared/data` (a clone elsewhere still finds it)."""
    if os.environ.get("LONGREAD_SHARED_DATA"):
        return Path(os.environ["LONGREAD_SHARED_DATA"])
    beside = Path(__file__).resolve().parents[2] / "shared" / "data"
    return beside if beside.is_dir() else Path("/work/shared/data")


DATA_DIR = _data_dir()
BOOKS_DIR = DATA_DIR / "books"
CONTRACTS_DIR = DATA_DIR / "contracts"

Split = Literal["train", "held-out"]

#: Books by Gutenberg id. The held-out book is the longest (Little Women, ~260K tokens), so held-out
#: windows of every evaluated length (2K .. 128K) and the whole book exist.
TRAIN_BOOKS: tuple[str, ...] = ("pg2641", "pg64317", "pg84")  # A Room with a View, Gatsby, Frankenstein
HELD_OUT_BOOKS: tuple[str, ...] = ("pg37106",)  # Little Women

#: Held-out contracts: every third id of cases.json (cuad-000, cuad-003, ..., cuad-057), 20 of 60.
#: Fixed here, not computed, so that a change to the data file cannot move a contract across the split.
HELD_OUT_CONTRACTS: tuple[str, ...] = tuple(f"cuad-{i:03d}" for i in range(0, 60, 3))

KINDS: tuple[str, ...] = ("single-needle", "multi-needle", "multi-hop", "variable-tracking")
#: An open question about the story (what is eaten, which animals appear), asked of a window that never
#: mentions its subject: half the time one planted sentence answers it, half the time nothing does and the
#: task is `ABSENT`. A planted answer comes with its twin, the same window without the sentence (`ABSENT`),
#: so that what tells writing from keeping nothing is the sentence, not the window (or a title page).
#: What a user asks of a novel is mostly open; a reader that invents an answer to it also decodes the
#: invention at every chunk. Not among KINDS: its answers are lessons, not a measure.
OPEN = "open"
#: The question's fact is not in the document: its oracle keeps NO_EVIDENCE_MEMORY throughout and answers
#: NOT_IN_DOCUMENT. Not among KINDS (the held-out accuracy sets): it measures abstaining, not reading.
ABSENT = "absent"
SYNTHETIC_KINDS: tuple[str, ...] = (*KINDS, ABSENT, OPEN)

#: (doc_tokens, number of tasks) stages, shortest first: a model first learns to keep a fact across
#: a few chunks, then across many (MemAgent trains at one length and extrapolates; a 135M model
#: needs the short stages to get any reward at all).
DEFAULT_CURRICULUM: tuple[tuple[int, int], ...] = ((1024, 128), (2048, 128), (4096, 96), (8192, 64))


@dataclass(frozen=True)
class Task:
    """One question on one document. Tasks planted in the same document share the same `document`
    string object, so a batched reading (`MemoryAgent.read_batch`) chunks it once and the engine can
    share the chunk prefix between its questions."""

    id: str
    document: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[str, ...] = ()  # exact substrings of `document` that a perfect reader must keep
    kind: str = ""
    doc_tokens: int = 0


# --- JSON Lines ---------------------------------------------------------------------------------
def save_tasks(tasks: Iterable[Task], path: Path) -> None:
    """One task a line, every field, the document in full (so a line stands alone)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for t in tasks:
            f.write(json.dumps(asdict(t), ensure_ascii=False) + "\n")


def load_tasks(path: Path) -> list[Task]:
    """Inverse of `save_tasks`; equal documents come back as one shared string object."""
    shared: dict[str, str] = {}
    tasks = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        document = shared.setdefault(d["document"], d["document"])
        tasks.append(Task(d["id"], document, d["question"], tuple(d["answers"]), tuple(d.get("evidence", ())),
                          d.get("kind", ""), int(d.get("doc_tokens", 0))))  # fmt: skip
    return tasks


def count_tokens(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])


# --- books --------------------------------------------------------------------------------------
def load_book(path: Path) -> str:
    """The body of a Project Gutenberg text, between its START and END markers, with \\n newlines."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x85", "\n")
    start = re.search(r"\*\*\* ?START OF .*?\*\*\*", text)
    end = re.search(r"\*\*\* ?END OF ", text)
    return text[start.end() if start else 0 : end.start() if end else len(text)].strip()


# A sentence ends with . ! or ? (maybe closing a quote) and the next begins, after whitespace, upper case.
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019]?(?=\s+[\"'\u201c\u2018]?[A-Z])")

_corpus_cache: dict[tuple[int, str], tuple[str, list[int]]] = {}


def _book(tokenizer: Any, name: str, books_dir: Path) -> tuple[str, list[int]]:
    """A book's text and each token's start offset (cached: tokenizing a novel takes a second)."""
    key = (id(tokenizer), str(Path(books_dir) / name))
    if key not in _corpus_cache:
        text = load_book(Path(books_dir) / f"{name}.txt")
        _corpus_cache[key] = (text, token_starts(text, tokenizer))
    return _corpus_cache[key]


def split_books(split: Split) -> tuple[str, ...]:
    if split == "train":
        return TRAIN_BOOKS
    if split == "held-out":
        return HELD_OUT_BOOKS
    raise ValueError(f"unknown split {split!r}; choose 'train' or 'held-out'")


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
    ("What is the weather like?",
     _words(r"weather|sun|sunny|sunshine|rain|rains|rained|raining|rainy|snow|snowy|snowing|"
            r"wind|windy|breeze|storm|stormy|clouds?|cloudy|fog|foggy|mist|misty|frost|winter|summer|autumn"),
     "It was raining in {value} on the day {who} arrived.", "town"),
    ("What does anyone eat?",
     _words(r"eat|eats|ate|eaten|eating|dine|dined|dinner|breakfast|supper|lunch|meal|food|bread|cake|soup|tea|fruit"),
     "At supper {who} ate a bowl of {value} stew.", "word"),
    ("Which animals appear?",
     _words(r"dogs?|horses?|cats?|birds?|cows?|sheep|pigs?|mouse|mice|rats?|animals?|beasts?|fish|hounds?|ponies|pony"),
     "{who} kept a grey pony named {value}.", "word"),
    ("What music is played?",
     _words(r"music|piano|songs?|sing|sings|sang|singing|violin|tunes?|played|playing|organ|hymns?"),
     "{who} played a waltz called {value} on the piano.", "word"),
    ("Who falls ill, and with what?",
     _words(r"ill|illness|sick|sickness|fever|disease|doctor|cough|health|invalid"),
     "{who} fell ill with {value} fever.", "word"),
    ("How much money is paid?",
     _words(r"money|paid|pay|dollars?|pounds?|shillings?|price|cost|costs|cheque"),
     "{who} paid {value} dollars for the room.", "number"),
    ("Which books or newspapers are read?",
     _words(r"books?|read|reads|reading|novels?|newspapers?|papers?|poems?"),
     "{who} was reading a novel called {value}.", "word"),
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
    rng: random.Random, tokenizer: Any, text: str, starts: list[int], doc_tokens: int | None,
    plants: Sequence[_Plant],
) -> tuple[str, int] | None:  # fmt: skip
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
            raise ValueError(f"cannot build a {doc_tokens}-token document from a {len(starts)}-token book "
                             f"with {len(sentences)} planted sentences")  # fmt: skip
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
            plants = [_plant(rng.choice(list(kinds)), rng, inv, distractors)
                      for _ in range(min(facts_per_doc, n - len(tasks)))]  # fmt: skip
            if any(a.lower() in p.question.lower() for p in plants for a in p.answers):
                continue
            built = _plant_document(rng, tokenizer, text, starts, doc_tokens, plants)
            if built is not None:
                break
        else:
            raise RuntimeError(f"could not plant {facts_per_doc} facts in {name} at {length} tokens in 50 tries")
        document, tokens = built
        for j, p in enumerate(plants):
            tasks.append(Task(f"syn-{split}-{length}-s{seed}-d{doc_index}-q{j}", document, p.question, p.answers,
                              p.groups[0], p.kind, tokens))  # fmt: skip
        if len(plants) == 1 and plants[0].kind == OPEN:  # its twin, one sentence shorter
            twin = document.replace(" " + plants[0].groups[0][0], "", 1)
            tasks.append(Task(f"syn-{split}-{length}-s{seed}-d{doc_index}-twin", twin, plants[0].question,
                              (NOT_IN_DOCUMENT,), (), ABSENT, count_tokens(tokenizer, twin)))  # fmt: skip
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
        out += synthetic_tasks(tokenizer, split, doc_tokens, n, seed=seed * 1000 + i, kinds=kinds,
                               distractors=distractors)  # fmt: skip
    return out


# --- contracts ----------------------------------------------------------------------------------
def contract_ids(split: Split | Literal["all"], contracts_dir: Path = CONTRACTS_DIR) -> list[str]:
    cases = json.loads((Path(contracts_dir) / "cases.json").read_text(encoding="utf-8"))
    ids = [c["id"] for c in cases]
    if split == "all":
        return ids
    if split == "held-out":
        return [i for i in ids if i in HELD_OUT_CONTRACTS]
    if split == "train":
        return [i for i in ids if i not in HELD_OUT_CONTRACTS]
    raise ValueError(f"unknown split {split!r}; choose 'train', 'held-out' or 'all'")


def contract_tasks(
    split: Split | Literal["all"],
    categories: Sequence[str] | None = None,
    contracts_dir: Path = CONTRACTS_DIR,
    tokenizer: Any = None,
) -> list[Task]:
    """CUAD questions of the split's contracts (only `categories` if given, e.g. ["Governing Law"]).
    Evidence clauses that are not verbatim in the text (10 of 595) are dropped (a date answer is
    matched in any form, training/verifier.py). `doc_tokens` is counted when a tokenizer is given."""
    contracts_dir = Path(contracts_dir)
    cases = json.loads((contracts_dir / "cases.json").read_text(encoding="utf-8"))
    wanted = set(contract_ids(split, contracts_dir))
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
            if categories and qa["category"] not in categories:
                continue
            evidence = tuple(e for e in qa["evidence"] if e and e in document)
            slug = re.sub(r"[^a-z0-9]+", "-", qa["category"].lower()).strip("-")
            tasks.append(Task(f"{case['id']}:{slug}", document, qa["question"], (qa["answer"],), evidence,
                              f"contract:{qa['category']}", tokens))  # fmt: skip
    return tasks


_US_STATES = (
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware", "Florida",
    "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana", "Maine",
    "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska",
    "Nevada", "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Ohio",
    "Oklahoma", "Oregon", "Pennsylvania", "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Texas",
    "Utah", "Vermont", "Virginia", "Washington", "West Virginia", "Wisconsin", "Wyoming",
)  # fmt: skip
_OTHER_JURISDICTIONS = (
    "England", "Scotland", "Ireland", "Germany", "France", "Italy", "Spain", "the Netherlands", "Switzerland",
    "Sweden", "Singapore", "Hong Kong", "Japan", "Israel", "Ontario", "British Columbia", "New South Wales",
    "India", "Brazil", "Mexico", "the People's Republic of China",
)  # fmt: skip


def governing_law_variant(host: Task, donor: Task, rng: random.Random) -> Task | None:
    """`host`'s governing-law question on its contract with its own clause taken out and `donor`'s clause
    sentence planted at a random sentence end, the jurisdiction in it swapped for another (a US state
    after "State of" or "Commonwealth of", else any state or country). The 34 training contracts give the
    reader 34 clauses to pick out of their chunks; variants put each in new company and with a new answer,
    so that it learns to find the clause rather than its training contracts' answers. None when the
    donor's answer is not in its clause or the host's clause cannot be taken out whole.

    >>> host = Task("h", "Parties agree. This Agreement is governed by Texas law. Fees are due.", "Which law?",
    ...             ("Texas",), ("This Agreement is governed by Texas law.",), "contract:Governing Law")
    >>> donor = Task("d", "Intro. The laws of the State of Ohio govern this Agreement. End.", "Which law?",
    ...              ("Ohio",), ("laws of the State of Ohio govern",), "contract:Governing Law")
    >>> v = governing_law_variant(host, donor, random.Random(1))
    >>> v.answers, v.evidence, v.document
    (('Florida',), ('The laws of the State of Florida govern this Agreement.',), 'Parties agree. The laws of the State of Florida govern this Agreement. Fees are due.')
    """
    answer = donor.answers[0]
    clause = next((e for e in donor.evidence if answer in e), None)
    if clause is None or len(donor.answers) > 1 or not host.evidence:
        return None
    at = donor.document.find(clause)
    left, right = _sentence_span(donor.document, at, at + len(clause))
    sentence = " ".join(donor.document[left:right].split())
    state = re.search(rf"(State|Commonwealth) of (the )?{re.escape(answer)}", sentence, re.IGNORECASE)
    jurisdiction = rng.choice([j for j in (_US_STATES if state else _US_STATES + _OTHER_JURISDICTIONS) if j != answer])
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
    return replace(host, id=f"{host.id}+{donor.id.split(':')[0]}:{jurisdiction}", document=document,
                   answers=(jurisdiction,), evidence=(sentence,))


# --- feedback and users' cases ------------------------------------------------------------------
def _read_document(path: Path) -> str:
    """Text of a user's file: .pdf through pypdf, anything else read as UTF-8 text."""
    if path.suffix.lower() == ".pdf":
        from pypdf import PdfReader

        return "\n\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
    return path.read_text(encoding="utf-8", errors="replace")


def _jsonl(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not a JSON object ({e.msg})") from None
    return rows


def cases_tasks(path: Path) -> list[Task]:
    """A user's evaluation set: one `{"document": "path", "question": "...", "answers": ["..."]}` a
    line; relative document paths are relative to the JSONL file's folder. Questions on the same
    file share one document string."""
    path = Path(path)
    documents: dict[Path, str] = {}
    tasks = []
    for i, row in enumerate(_jsonl(path)):
        missing = [k for k in ("document", "question", "answers") if k not in row]
        if missing:
            raise ValueError(f"{path}:{i + 1}: missing {', '.join(missing)}")
        answers = [row["answers"]] if isinstance(row["answers"], str) else row["answers"]
        doc = Path(row["document"]).expanduser()
        doc = doc if doc.is_absolute() else path.parent / doc
        if doc not in documents:
            if not doc.is_file():
                raise ValueError(f"{path}:{i + 1}: no such document {doc}")
            documents[doc] = _read_document(doc)
        tasks.append(Task(f"case-{i}", documents[doc], row["question"], tuple(answers), kind="cases"))
    return tasks


def case_documents(path: Path) -> list[str]:
    """The `document` field of each line of a cases file, as written (for reports)."""
    return [str(row["document"]) for row in _jsonl(Path(path))]


#: Verdicts that make a task, and where its answer comes from. Issue 10 exports `correct`/`incorrect`;
#: `right` and `wrong-with-correction` are accepted as synonyms.
_RIGHT = {"correct", "right"}
_WRONG = {"incorrect", "wrong", "wrong-with-correction"}


def feedback_answer(row: dict) -> str | None:
    """What a judged reading (a feedback export row) teaches: its own answer when judged right (or the
    correction given with it), the correction when judged wrong; None when it teaches nothing.

    >>> feedback_answer({"verdict": "correct", "answer": "42"}), feedback_answer({"verdict": "incorrect"})
    ('42', None)
    """
    verdict = str(row.get("verdict", "")).lower()
    corrected = (row.get("corrected_answer") or "").strip()
    if verdict in _RIGHT:
        return corrected or (row.get("answer") or row.get("model_answer") or "").strip() or None
    if verdict in _WRONG:
        return corrected or None
    return None


def feedback_tasks(path: Path, documents: Callable[[Any], str] | None = None) -> list[Task]:
    """Tasks from `longread feedback export` JSON Lines: a reading judged right teaches its own answer,
    one judged wrong teaches its corrected answer (and is skipped without one). The document comes
    from `document_text`, or `document_path` (relative to the file's folder), or `document_id`
    through `documents` (the app passes a lookup; training cannot read the database itself)."""
    path = Path(path)
    shared: dict[Any, str] = {}
    tasks = []
    for i, row in enumerate(_jsonl(path)):
        answer = feedback_answer(row)
        if not answer or not row.get("question"):
            continue
        if row.get("document_text"):
            key, load = ("text", i), lambda r=row: r["document_text"]
        elif row.get("document_path"):
            doc = Path(row["document_path"]).expanduser()
            doc = doc if doc.is_absolute() else path.parent / doc
            key, load = ("path", doc), lambda d=doc: _read_document(d)
        elif row.get("document_id") is not None and documents is not None:
            key, load = ("id", row["document_id"]), lambda r=row: documents(r["document_id"])
        else:
            raise ValueError(f"{path}:{i + 1}: no document_text or document_path, and no lookup for document_id")
        if key not in shared:
            shared[key] = load()
        rid = row.get("reading_id", i)
        tasks.append(Task(f"feedback-{rid}", shared[key], row["question"], (answer,), kind="feedback"))
    return tasks


# --- oracle traces ------------------------------------------------------------------------------
# Sentence ends: . ! ? (maybe closing a quote or bracket) before whitespace, or a blank line. A period
# after an abbreviation, an initial or a section number ("Inc.", "Co.", "J.", "12.") ends nothing.
_END = re.compile(r"[.!?][\"'\u201d\u2019)]?(?=\s|$)|\n[ \t]*\n")
_ABBREVIATIONS = {"inc", "co", "corp", "ltd", "llc", "lp", "no", "nos", "mr", "mrs", "ms", "dr", "st", "jr", "sr",
                  "sec", "art", "vs", "etc", "e.g", "i.e", "u.s", "n.a", "s.a"}  # fmt: skip


def _is_end(document: str, m: re.Match) -> bool:
    if m[0].startswith("\n") or m[0][0] != ".":
        return True
    word = re.search(r"[\w.]*$", document[max(0, m.start() - 12) : m.start()])[0].lower()
    return not (word in _ABBREVIATIONS or len(word) <= 1 or word.replace(".", "").isdigit())


def _sentence_span(document: str, start: int, end: int, limit: int = 400) -> tuple[int, int]:
    """Character span of the whole sentence holding document[start:end]; the evidence's own span
    when that sentence is longer than `limit` characters (memories must stay short)."""
    left = max(0, start - limit)
    for m in _END.finditer(document, left, start):
        if _is_end(document, m):
            left = m.end()
    right = end
    # From the evidence's last character, so that evidence ending a sentence ends the span there.
    for m in _END.finditer(document, max(start, end - 1), min(len(document), end + limit)):
        if _is_end(document, m):
            right = max(end, m.start() if m[0].startswith("\n") else m.end())
            break
    while left < start and document[left].isspace():
        left += 1
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


_ASKING = re.compile(r"^(?:in which \w+|what|which|who|whom|where|when|how)\b(?: (?:is|are|was|were|does|do|did)\b)? *",
                     re.IGNORECASE)


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


def corrections(oracle: Sequence[str], policy: Sequence[str], chunk_texts: Sequence[str], limit: int,
                rng: random.Random | None = None) -> list[int]:
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
    >>> corrections(oracle, [NO_EVIDENCE_MEMORY, "The code is 42.", "Cats nap."], chunks, 5, random.Random(0))  # dropped
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
    r"""The final answer a perfect reader writes: `\boxed{first gold answer}`."""
    return f"\\boxed{{{task.answers[0]}}}"


def with_doc_tokens(tasks: Sequence[Task], tokenizer: Any) -> list[Task]:
    """`tasks` with `doc_tokens` counted (once per shared document)."""
    counts: dict[int, int] = {}
    return [replace(t, doc_tokens=counts.setdefault(id(t.document), count_tokens(tokenizer, t.document)))
            for t in tasks]  # fmt: skip
