"""Training tasks on real evidence (issue 38, step 5): questions people ask, with the passage that answers them.

The SFT targets come from `training.tasks.oracle_memories`: the memory stays empty before the chunk that holds
the evidence, then holds it through every later chunk; the answer is the gold. This module only chooses the
questions and cuts their documents. Six groups (`GROUPS`), drawn in turn so that each is drawn equally often
(a config that lists a group twice draws it twice as often):

- `contract-extract`: the 8 extraction categories of `contracts-train/cases.jsonl` (title, parties, dates,
  renewal term, notice period, governing law), with the annotators' answer (Parties taught without their
  bracketed aliases, `without_aliases`); the evidence is every marked passage that occurs verbatim in the text,
  its first occurrence at word boundaries ("MA" inside "MARKETING" is not evidence).
- `contract-clause`: the 33 yes/no clause categories, Yes and No drawn equally often (about one answer in five is
  Yes, and a reader that always says No scores 50% balanced accuracy). Yes: the first marked clause is the
  evidence, cut at a sentence or word end to `CLAUSE_CHARS` (the memory holds the clause, not the contract).
  No: no evidence, the memory stays empty and the answer is `No`, on a window anywhere in the contract (from its
  start only, the reader would learn that a window from the middle, full of clauses, means Yes). Its kind is
  `ABSENT` ("the document holds no such clause") because `with_answer_evidence` would take the word "No" anywhere
  in a contract as evidence.
- `clause-twin`: a Yes clause's window with every passage the annotators marked for its category cut out, answered
  `No` with an empty memory (kind `ABSENT`): the same text but the clause, so that a clause like the one asked
  about is not enough to write it down (the planted facts' twins do this for planted facts).
- `book`: the "Who says ..." questions made from dialogue tags (`training.book_questions`), on the training novels
  only: Little Women (`HELD_OUT_BOOKS`) is never read. The hand-written questions of `training/questions/*.jsonl`
  are the `books` suite's, dev on these novels, so none of them is drawn, nor a made question whose passage
  overlaps one of theirs. Their evidence is written whitespace-collapsed; it is found verbatim in the text.
- `planted`: facts planted in the training novels (`synthetic_tasks`, the four `KINDS`).
- `absent`: questions the document does not answer, only look-alikes of their facts (`synthetic_tasks`, `ABSENT`).

Real documents are cut to a window of the step's curriculum length in tokens (a few chunks), so that a step stays
affordable on a CPU: the window holds all the evidence, and the evidence read first lies inside one chunk, at
least `MARGIN` tokens from its edges, in a chunk drawn at random among those that can hold it (so the memory
stays empty for a random number of chunks). A document shorter than the window is read whole, or from a later
start when that is what keeps the evidence off a chunk boundary.

A question is kept only when its oracle's final memory fits `memory_tokens` and its boxed answer `answer_tokens`:
SFT must not teach the reader to write what it cannot write when reading. Contracts in `exclude_contracts` (by
default `training.tasks.NOT_FOR_TRAINING`, every evaluation suite's dev and held-out contracts) are never read.
"""

from __future__ import annotations

import random
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.chunking import token_starts
from inference.contract_review import EXTRACT, YES_NO
from training.book_questions import QUESTIONS_DIR, load_questions, speaker_questions
from training.tasks import (
    ABSENT,
    BOOKS_DIR,
    CONTRACTS_TRAIN_DIR,
    HELD_OUT_BOOKS,
    KINDS,
    NOT_FOR_TRAINING,
    TRAIN_BOOKS,
    Task,
    category_slug,
    contract_cases,
    count_tokens,
    oracle_answer,
    oracle_memories,
    synthetic_tasks,
)
from training.tasks.books import _book, book_text

CONTRACT_EXTRACT, CONTRACT_CLAUSE, CLAUSE_TWIN, BOOK, PLANTED, ABSENT_GROUP = (
    "contract-extract",
    "contract-clause",
    "clause-twin",
    "book",
    "planted",
    "absent",
)
GROUPS: tuple[str, ...] = (CONTRACT_EXTRACT, CONTRACT_CLAUSE, CLAUSE_TWIN, BOOK, PLANTED, ABSENT_GROUP)
#: Most characters of a Yes clause's evidence: the memory (`memory_tokens`, 128 in the small preset) holds it.
CLAUSE_CHARS = 300
#: Tokens kept between the evidence read first and its chunk's edges: a window tokenised on its own may start
#: its tokens a little differently from the whole document, which would move a boundary by a token or two.
MARGIN = 8


@dataclass(frozen=True)
class Question:
    """A real question before its document is cut to a window; `source` names its document."""

    id: str
    group: str
    source: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[str, ...]
    kind: str
    #: a Yes clause's passages as the annotators marked them (all of its category's), cut out of its twin
    marked: tuple[str, ...] = ()


def _at_word_bounds(document: str, evidence: str) -> bool:
    """`evidence` occurs in `document`, its first occurrence neither starting nor ending inside a word.

    >>> _at_word_bounds("MARKETING AFFILIATE (MA)", "MA"), _at_word_bounds("MARKETING AFFILIATE (MA)", "(MA)")
    (False, True)
    """
    at = document.find(evidence)
    if at < 0:
        return False
    before, after = document[at - 1 : at], document[at + len(evidence) : at + len(evidence) + 1]
    inside = (evidence[0].isalnum() and before.isalnum()) or (evidence[-1].isalnum() and after.isalnum())
    return not inside


def clause_excerpt(clause: str, limit: int = CLAUSE_CHARS) -> str:
    """The start of `clause`, at most `limit` characters: up to its last sentence end within the limit, else its
    last word end; the clause itself when short enough. A prefix, so as verbatim as the clause.

    >>> clause_excerpt("Licensee shall not sell. It shall not lease the goods.", 40)
    'Licensee shall not sell.'
    >>> clause_excerpt("Licensee shall not sell or lease the goods to anyone", 30)
    'Licensee shall not sell or'
    """
    if len(clause) <= limit:
        return clause
    head = clause[: limit + 1]
    ends = [m.end() for m in re.finditer(r"[.;:](?=\s)", head)]
    cut = ends[-1] if ends and ends[-1] >= limit // 3 else head.rstrip().rfind(" ")
    return clause[: cut if cut > 0 else limit].rstrip()


def without_aliases(parties: str) -> str:
    """CUAD's Parties answer without the defined names in brackets: what the reader is taught to answer, first of
    the answers (the strict verifier scores a Parties answer party by party, by name, the aliases optional; with
    them, half of the answers are longer than the 32 answer tokens of the small preset). Unchanged when a party
    has no name but its alias (CUAD writes `[]`).

    >>> without_aliases('Birch First Global Inc. ("Company"); Mount Holdings Inc. ("Affiliate", "MA")')
    'Birch First Global Inc.; Mount Holdings Inc.'
    >>> without_aliases('[] ("Licensee"); Acme Corp. ("Licensor")')
    '[] ("Licensee"); Acme Corp. ("Licensor")'
    """
    short = re.sub(r"\s*\([^()]*\)", "", parties).strip()
    return parties if "[]" in short or not short else short


def contract_questions(
    contracts_dir: Path = CONTRACTS_TRAIN_DIR, exclude: Collection[str] = ()
) -> tuple[dict[str, str], list[Question]]:
    """The texts (by contract id) and questions of `contracts-train`, without the contracts in `exclude`. Yes/no
    questions are in `contract-clause` (kind `clause:<category>`, or `ABSENT` for No), the others in
    `contract-extract` (kind `contract:<category>`); an extraction with no evidence in the text is left out, as is
    a Yes whose clause is not in it."""
    contracts_dir = Path(contracts_dir)
    texts: dict[str, str] = {}
    questions: list[Question] = []
    for case in contract_cases(contracts_dir):
        if case["id"] in exclude:
            continue
        text = texts[case["id"]] = (contracts_dir / case["txt"]).read_text(encoding="utf-8")
        for qa in case["qa"]:
            qid, answer = f"{case['id']}:{category_slug(qa['category'])}", qa["answer"]
            found = [e for e in qa["evidence"] if e and _at_word_bounds(text, e)]
            if qa["kind"] == YES_NO and answer == "No":
                questions.append(Question(qid, CONTRACT_CLAUSE, case["id"], qa["question"], ("No",), (), ABSENT))
            elif qa["kind"] == YES_NO and found:
                questions.append(
                    Question(
                        qid,
                        CONTRACT_CLAUSE,
                        case["id"],
                        qa["question"],
                        ("Yes",),
                        (clause_excerpt(found[0]),),
                        f"clause:{qa['category']}",
                        tuple(e for e in qa["evidence"] if e),
                    )
                )
            elif qa["kind"] == EXTRACT and found:
                answers = (answer,)
                if qa["category"] == "Parties" and (short := without_aliases(answer)) != answer:
                    answers = (short, answer)
                questions.append(
                    Question(
                        qid,
                        CONTRACT_EXTRACT,
                        case["id"],
                        qa["question"],
                        answers,
                        tuple(found),
                        f"contract:{qa['category']}",
                    )
                )
    return texts, questions


def _loose(quote: str) -> re.Pattern[str]:
    """`quote` as a pattern that matches it whatever whitespace stands between its words."""
    return re.compile(r"\s+".join(map(re.escape, quote.split())))


def verbatim(text: str, quote: str) -> str | None:
    """The passage of `text` that `quote` (written with its whitespace collapsed) was copied from; None if absent.

    >>> verbatim("He said,\\n  'Go home.'", "said, 'Go home.'")
    "said,\\n  'Go home.'"
    """
    m = _loose(quote).search(text)
    return m[0] if m else None


def cut_out(text: str, start: int, end: int, passages: Sequence[str]) -> str:
    """`text[start:end]` less every occurrence (in all of `text`) of each of `passages`, whitespace-insensitive:
    a passage that runs over the window's edge is cut from it as well.

    >>> cut_out("A. Licensee shall not sell. B. Fees.", 0, 36, ["Licensee  shall not", "sell."])
    'A.   B. Fees.'
    >>> cut_out("A. Licensee shall not sell. B.", 10, 30, ["Licensee shall"])
    ' not sell. B.'
    """
    spans = sorted(m.span() for p in passages if p.split() for m in _loose(p).finditer(text))
    kept, at = [], start
    for a, b in spans:
        if b > at and a < end:
            kept.append(text[at : max(a, at)])
            at = max(at, b)
    return "".join(kept) + text[at:end] if at < end else "".join(kept)


def book_questions(
    books: Sequence[str] = TRAIN_BOOKS, books_dir: Path = BOOKS_DIR, questions_dir: Path = QUESTIONS_DIR
) -> tuple[dict[str, str], list[Question]]:
    """The texts (by stem) and the "Who says ..." questions made from the dialogue tags of `books`; never a
    held-out book. The hand-written questions are the `books` suite's (dev: these very novels), so training
    draws none of them, nor a made question whose passage overlaps one of theirs."""
    held = set(books) & set(HELD_OUT_BOOKS)
    if held:
        raise ValueError(f"{', '.join(sorted(held))} is held out: training never reads it")
    texts = {stem: book_text(Path(books_dir) / f"{stem}.txt") for stem in books}
    scored: dict[str, list[tuple[int, int]]] = {stem: [] for stem in books}
    for q in load_questions(questions_dir):
        stem = Path(q.book).stem
        if stem in texts and (passage := verbatim(texts[stem], q.evidence)):
            at = texts[stem].find(passage)
            scored[stem].append((at, at + len(passage)))
    questions = []
    for stem in books:
        for q in speaker_questions(f"{stem}.txt", books_dir):
            passage = verbatim(texts[stem], q.evidence)
            at = texts[stem].find(passage) if passage else -1
            if passage and not any(a < at + len(passage) and at < b for a, b in scored[stem]):
                questions.append(Question(q.id, BOOK, stem, q.question, q.answers, (passage,), f"book:{q.kind}"))
    return texts, questions


class EvidenceTasks:
    """The questions of `groups` (default all), and `draw`, which cuts their documents to windows at draw time
    (tokenising only the documents drawn). Planted and absent tasks are made at draw time, whatever `groups`."""

    def __init__(
        self,
        tokenizer: Any,
        chunk_tokens: int,
        memory_tokens: int,
        answer_tokens: int,
        exclude_contracts: Collection[str] = NOT_FOR_TRAINING,
        contracts_dir: Path = CONTRACTS_TRAIN_DIR,
        books: Sequence[str] = TRAIN_BOOKS,
        books_dir: Path = BOOKS_DIR,
        groups: Collection[str] = GROUPS,
    ):
        self.tokenizer, self.chunk_tokens, self.books_dir = tokenizer, chunk_tokens, books_dir
        self.texts: dict[str, str] = {}
        loaded: list[Question] = []
        wanted = {*groups, CONTRACT_CLAUSE} if CLAUSE_TWIN in groups else set(groups)  # a twin cuts a Yes clause
        if {CONTRACT_EXTRACT, CONTRACT_CLAUSE} & wanted:  # contracts-train: 319 texts, 12,000 questions
            contract_texts, contracts = contract_questions(contracts_dir, frozenset(exclude_contracts))
            self.texts.update(contract_texts)
            loaded += [q for q in contracts if q.group in wanted]
        if BOOK in groups:
            book_texts, books_qs = book_questions(books, books_dir)
            self.texts.update(book_texts)
            loaded += books_qs
        self._books = set(book_texts) if BOOK in groups else set()
        self.questions: dict[str, list[Question]] = {g: [] for g in GROUPS}
        #: questions left out per group: their oracle's memory or answer is longer than a reader may write
        self.dropped: Counter[str] = Counter()
        for q in loaded:
            if self._fits(q, memory_tokens, answer_tokens):
                self.questions[q.group].append(q)
            else:
                self.dropped[q.group] += 1
        self._starts: dict[str, array] = {}

    def _fits(self, q: Question, memory_tokens: int, answer_tokens: int) -> bool:
        task = Task(q.id, self.texts[q.source], q.question, q.answers, q.evidence, q.kind)
        memory = oracle_memories(task, [task.document])[-1]
        return (
            count_tokens(self.tokenizer, memory) <= memory_tokens
            and count_tokens(self.tokenizer, oracle_answer(task)) <= answer_tokens
        )

    def counts(self) -> dict[str, int]:
        """Questions per group (`contract-clause` also as Yes and No); planted and absent are made, not counted."""
        out = {g: len(qs) for g, qs in self.questions.items() if g not in (PLANTED, ABSENT_GROUP)}
        out["contract-clause:Yes"] = sum(q.answers == ("Yes",) for q in self.questions[CONTRACT_CLAUSE])
        out["contract-clause:No"] = out[CONTRACT_CLAUSE] - out["contract-clause:Yes"]
        return out

    def draw(self, groups: Sequence[str], start: int, n: int, rng: random.Random, doc_tokens: int) -> list[Task]:
        """`n` tasks at places `start`, `start + 1`, ... of the turn order (`draw_at`)."""
        return self.draw_at(groups, range(start, start + n), rng, doc_tokens)

    def draw_at(self, groups: Sequence[str], places: Sequence[int], rng: random.Random, doc_tokens: int) -> list[Task]:
        """A task at each of `places` of the turn order: at place p one of group `groups[p % len(groups)]`, so that
        over consecutive places every group is drawn equally often; real documents cut to `doc_tokens`."""
        unknown = [g for g in groups if g not in GROUPS]
        if unknown or not groups:
            raise ValueError(f"unknown or no groups {unknown}; choose from {', '.join(GROUPS)}")
        return [self.task(groups[p % len(groups)], rng, doc_tokens) for p in places]

    def task(self, group: str, rng: random.Random, doc_tokens: int) -> Task:
        if group == CLAUSE_TWIN:
            return self.twin(rng, doc_tokens)
        if group in (PLANTED, ABSENT_GROUP):
            kinds = list(KINDS) if group == PLANTED else [ABSENT]
            return synthetic_tasks(
                self.tokenizer, "train", doc_tokens, 1, seed=rng.randrange(2**31), kinds=kinds, books_dir=self.books_dir
            )[0]
        for _ in range(100):
            pool = self.questions[group]
            if group == CONTRACT_CLAUSE:  # Yes and No equally often
                pool = self.clauses(yes=rng.random() < 0.5) or pool
            if not pool:
                raise ValueError(f"group {group} has no questions")
            task = self.window(rng.choice(pool), rng, doc_tokens)
            if task is not None:
                return task
        raise RuntimeError(f"no question of {group} fits a {doc_tokens}-token window in 100 draws")

    def _token_starts(self, source: str) -> array:
        if source not in self._starts:  # a novel's are shared with the planted tasks (`_book`, cached)
            starts = (
                _book(self.tokenizer, source, self.books_dir)[1]
                if source in self._books
                else token_starts(self.texts[source], self.tokenizer)
            )
            self._starts[source] = array("l", starts)
        return self._starts[source]

    def clauses(self, yes: bool) -> list[Question]:
        """The clause questions answered Yes (each with its marked passages), or those answered No."""
        return [q for q in self.questions[CONTRACT_CLAUSE] if (q.answers == ("Yes",)) == yes]

    def twin(self, rng: random.Random, doc_tokens: int) -> Task:
        """A Yes clause's window with all its category's marked passages cut out: same text, no clause, No."""
        yes = self.clauses(yes=True)
        for _ in range(100):
            q = rng.choice(yes)
            if (span := self.window_span(q, rng, doc_tokens)) is not None:
                document = cut_out(self.texts[q.source], *span, q.marked)
                return Task(
                    f"{q.id}:twin", document, q.question, ("No",), (), ABSENT, count_tokens(self.tokenizer, document)
                )
        raise RuntimeError(f"no Yes clause fits a {doc_tokens}-token window in 100 draws")

    def window(self, q: Question, rng: random.Random, doc_tokens: int) -> Task | None:
        """`q` on a window of its document of at most `doc_tokens` tokens (whole chunks of `chunk_tokens`) that
        holds all its evidence, the evidence read first inside one chunk at a random one of the places that allow
        it (module docstring); None when none does (the evidence spans more than the window)."""
        span = self.window_span(q, rng, doc_tokens)
        if span is None:
            return None
        document = self.texts[q.source][slice(*span)]
        return Task(q.id, document, q.question, q.answers, q.evidence, q.kind, count_tokens(self.tokenizer, document))

    def window_span(self, q: Question, rng: random.Random, doc_tokens: int) -> tuple[int, int] | None:
        """The characters [start, end) of `window`'s window; a question without evidence gets one anywhere."""
        text, starts = self.texts[q.source], self._token_starts(q.source)
        n, size, c = len(starts), max(doc_tokens, self.chunk_tokens), self.chunk_tokens
        if q.evidence:
            spans = [(text.find(e), text.find(e) + len(e)) for e in q.evidence]
            spans = [(max(0, bisect_right(starts, a) - 1), bisect_left(starts, b)) for a, b in spans]  # token spans
            first_a, first_b = min(spans, key=lambda span: span[1])  # the evidence whose end is read first
            all_a, all_b = min(a for a, _ in spans), max(b for _, b in spans)
            places = _window_starts(first_a, first_b, all_a, all_b, n, size, c)
            if not places:
                return None
            low, high = rng.choice(places)
            s = rng.randint(low, high)
        else:
            s = rng.randint(0, max(0, n - size))
        return (starts[s] if s else 0, starts[s + size] if s + size < n else len(text))


def _window_starts(
    first_a: int, first_b: int, all_a: int, all_b: int, n: int, size: int, c: int
) -> list[tuple[int, int]]:
    """For each chunk k of a window that can hold the evidence read first (tokens [first_a, first_b)) at least
    MARGIN tokens from its edges, while the window (`size` tokens from its start s) holds all the evidence
    ([all_a, all_b)): the range of starts s that do it, as (low, high). Windows are as long as the document
    allows; when none of those works, later starts (shorter windows) are tried.

    >>> _window_starts(5000, 5010, 5000, 5010, 10_000, 4096, 1024)  # in any of the window's 4 chunks
    [(3994, 4992), (2970, 3968), (1946, 2944), (922, 1920)]
    >>> _window_starts(100, 110, 100, 110, 10_000, 4096, 1024)  # near the start: only in the first
    [(0, 92)]
    >>> _window_starts(1020, 1030, 1020, 1030, 2048, 4096, 1024)  # across the 1024 boundary: a later start
    [(14, 1012)]
    """
    for latest in (max(0, n - size), all_a):
        places = []
        for k in range(size // c):
            low = max(0, all_b - size, first_b + MARGIN - (k + 1) * c)
            # a chunk that starts the document (s = 0, k = 0) needs no margin before the evidence
            high = min(latest, all_a, max(0, first_a - MARGIN) if k == 0 else first_a - k * c - MARGIN)
            if low <= high:
                places.append((low, high))
        if places:
            return places
    return []
