"""Real questions about the shared novels, with gold answers and a verbatim evidence quote.

Two sources, one record type (`BookQuestion`):

- **Written by hand** (`load_questions`): `training/questions/<book stem>.jsonl`, one question a line,
  `{"id", "book", "question", "answers", "evidence", "kind"}`. `answers` are alternatives (a prediction is
  right when one of them appears in it at word boundaries); `evidence` is a passage of the book, whitespace
  collapsed to single spaces, that contains an answer and alone supports it; `kind` is one of `KINDS`.
- **Made by rule** from dialogue tags (`speaker_questions`): `Who says "<line>"?`, kind `speaker`. The
  book's body (`training.tasks.load_book`) is cut into paragraphs at blank lines; in each, curly double
  quotes are read as straight ones and the quote marks are paired in order (the first opens, the next
  closes, ...; a paragraph that goes on with a speech opens it again, as these editions do). A quoted line
  is asked about when all of these hold:
  - it is closed, ends with `,` `?` `!` or a dash, and the narration right after its closing mark is a
    dialogue tag: a speech verb (`SPEECH_VERBS`) then a name (`"…," said Elizabeth`, `"…?" asked Mr. Beebe`)
    or a name then a verb (`"…," Jo said`). The line that reopens the speech right after such a tag
    (`"…," said Jo, "<line>"`) is the same speaker's and is asked about too, however it ends;
  - the name is a person's: a title (`TITLES`) and one or two capitalised words ("Mrs. March"), or one or
    two capitalised words that the book never writes in lower case (so "Then", "He" or "Owl" never pass);
    not followed by `'s` or by "and" (two speakers); no word of it in the book's main title (the part
    before "; Or,"), so that a reader answering "Gatsby" to everything does not score;
  - it has `MIN_WORDS` to `MAX_WORDS` words and occurs exactly once in the book (case, quotes and spacing
    folded), so the question points at one place and stays short.
  The line is quoted without the comma that hands it to its tag. Answers: the name as the tag writes it and,
  for a titled or two-word name, the bare surname when the book puts only that one word before it
  (Mr. Beebe → Beebe, but not Mrs. March → March). The evidence runs from the line's opening quote mark to
  the end of the tag (for a reopened line, from the tag to the line's closing mark), whitespace collapsed,
  so it holds the line and the answer. Ids are `<stem>-say-NNNN` in book order.

  Two other kinds were tried and left out, the text does not support them: whom a line is said to, from
  `"…," said Jo to Meg` (3 usable tags in the four books), and relations from appositions such as
  `Madame Moritz, her mother` (2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from training.tasks import BOOKS_DIR
from training.tasks.books import book_text

QUESTIONS_DIR = Path(__file__).resolve().parent / "questions"
KINDS: tuple[str, ...] = ("character", "relation", "place", "event", "speaker", "object", "number")

SPEECH_VERBS: tuple[str, ...] = (
    "said",
    "asked",
    "cried",
    "replied",
    "answered",
    "exclaimed",
    "returned",
    "continued",
    "added",
    "whispered",
    "called",
    "shouted",
    "began",
    "remarked",
    "observed",
    "murmured",
    "repeated",
    "inquired",
    "enquired",
    "demanded",
    "interrupted",
    "explained",
    "protested",
    "suggested",
    "insisted",
    "urged",
    "retorted",
    "snapped",
    "sighed",
    "laughed",
    "pleaded",
    "sobbed",
    "groaned",
    "grumbled",
    "complained",
)
TITLES: tuple[str, ...] = (
    "Mr.",
    "Mrs.",
    "Mr",
    "Mrs",
    "Miss",
    "Dr.",
    "M.",
    "Madame",
    "Aunt",
    "Uncle",
    "Lady",
    "Lord",
    "Sir",
    "Captain",
    "Professor",
)
MIN_WORDS, MAX_WORDS = 6, 60

_FOLD = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_VERB = "|".join(SPEECH_VERBS)
_TITLE = "|".join(re.escape(t) for t in sorted(TITLES, key=len, reverse=True))
# A name: maybe a title, then one or two capitalised words; not a possessive, not the first of two speakers.
_NAME = rf"(?P<{{g}}>(?:(?:{_TITLE}) )?[A-Z][a-z]+(?: [A-Z][a-z]+)?)(?![\w'’])(?! and\b)"
_TAGS = (
    re.compile(rf"\s*(?:{_VERB}) {_NAME.format(g='name')}"),
    re.compile(rf"\s*{_NAME.format(g='name')} (?:{_VERB})\b"),
)
_REOPEN = re.compile(r',\s*"')
_LINE_END = re.compile(r"(?:[,?!]|—|--)$")


@dataclass(frozen=True)
class BookQuestion:
    id: str
    book: str  # the file name in the books folder, e.g. "pg84.txt"
    question: str
    answers: tuple[str, ...]
    evidence: str
    kind: str


def squash(text: str) -> str:
    """Whitespace runs as single spaces: how evidence is written and compared."""
    return " ".join(text.split())


def fold(text: str) -> str:
    """`squash`ed, curly quotes as straight ones, lower case: for comparing what a person types."""
    return squash(text).translate(_FOLD).lower()


def contains(text: str, answer: str) -> bool:
    """`answer` occurs in `text` at word boundaries, ignoring case, spacing and curly quotes ("_" of the
    editions' _italics_ is not part of a word)."""
    return re.search(rf"(?<![^\W_]){re.escape(fold(answer))}(?![^\W_])", fold(text)) is not None


def load_questions(path: Path = QUESTIONS_DIR) -> list[BookQuestion]:
    """The hand-written questions of one JSONL file, or of every `*.jsonl` in a folder (sorted by name)."""
    path = Path(path)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    out = []
    for file in files:
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if set(row) != {"id", "book", "question", "answers", "evidence", "kind"}:
                raise ValueError(f"{file}:{number}: fields are {sorted(row)}")
            if row["kind"] not in KINDS or not row["answers"]:
                raise ValueError(f"{file}:{number}: kind {row['kind']!r} or no answers")
            out.append(
                BookQuestion(
                    row["id"], row["book"], row["question"], tuple(row["answers"]), row["evidence"], row["kind"]
                )
            )
    return out


@dataclass(frozen=True)
class Tagged:
    """A quoted line, the name in its dialogue tag, and the passage holding both."""

    line: str
    speaker: str
    evidence: str


def tagged_lines(text: str) -> Iterator[Tagged]:
    """Every quoted line with a dialogue tag (a speech verb and a capitalised word, either order) right after
    it, and the line that reopens the speech right after such a tag; before `_is_person` and uniqueness."""
    for paragraph in re.split(r"\n\s*\n", text):
        straight = paragraph.translate(_FOLD)  # same length: offsets hold in both
        marks = [m.start() for m in re.finditer('"', straight)]
        pairs = list(zip(marks[0::2], marks[1::2]))
        for i, (open_, close) in enumerate(pairs):
            line = paragraph[open_ + 1 : close].strip()
            tag = next((m for t in _TAGS if (m := t.match(paragraph, close + 1))), None)
            if tag is None or not _LINE_END.search(line):
                continue
            yield Tagged(squash(line.removesuffix(",")), tag["name"], squash(paragraph[open_ : tag.end()]))
            if i + 1 < len(pairs) and _REOPEN.match(straight, tag.end()):
                reopen, reclose = pairs[i + 1]
                yield Tagged(
                    squash(paragraph[reopen + 1 : reclose].strip().removesuffix(",")),
                    tag["name"],
                    squash(paragraph[tag.start() : reclose + 1]),
                )


def _lower_words(text: str) -> set[str]:
    return set(re.findall(r"\b[a-z][a-z]+\b", text))


def _is_person(name: str, lower: set[str], title_words: set[str]) -> bool:
    """Words the book never writes in lower case, or any words after a title ("Mrs. March"); none of them in
    the book's main title."""
    words = name.split()
    titled = words[0] in TITLES
    words = words[1:] if titled else words
    return bool(words) and all((titled or w.lower() not in lower) and w.lower() not in title_words for w in words)


def _answers(name: str, text: str) -> tuple[str, ...]:
    """The tag's name, and its last word alone when the book never puts another word (title or first name)
    before that word than the tag does."""
    words = name.split()
    if len(words) < 2:
        return (name,)
    surname = words[-1]
    before = {m[1] for m in re.finditer(rf"\b([A-Z][a-z]*\.?) {re.escape(surname)}\b", text)}
    return (name, surname) if len(before) == 1 else (name,)


def _title_words(raw: str) -> set[str]:
    """The words of the main title ("Little Women" of "Little Women; Or, Meg, Jo, Beth, and Amy")."""
    m = re.search(r"^Title: ([^;:\n]+)", raw, re.MULTILINE)
    return set(re.findall(r"[a-z]+", m[1].lower())) if m else set()


def speaker_questions(book: str, books_dir: Path = BOOKS_DIR) -> list[BookQuestion]:
    """`Who says "<line>"?` for every line with an unambiguous named dialogue tag (module docstring)."""
    raw = Path(books_dir) / book
    text = book_text(raw)
    title = _title_words(raw.read_bytes().decode("cp1252", errors="replace"))
    lower, folded = _lower_words(text), fold(text)
    stem = Path(book).stem
    out: list[BookQuestion] = []
    for t in tagged_lines(text):
        if not _is_person(t.speaker, lower, title) or not MIN_WORDS <= len(t.line.split()) <= MAX_WORDS:
            continue
        if folded.count(fold(t.line)) != 1:
            continue
        out.append(
            BookQuestion(
                f"{stem}-say-{len(out) + 1:04d}",
                book,
                f'Who says "{t.line}"?',
                _answers(t.speaker, text),
                t.evidence,
                "speaker",
            )
        )
    return out
