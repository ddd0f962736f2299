"""The Project Gutenberg novels synthetic tasks are planted in, and their train/held-out split."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from inference.chunking import token_starts
from training.tasks.base import HELD_OUT_BOOKS, TRAIN_BOOKS, Split


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


@cache
def book_text(path: Path) -> str:
    """`load_book`, once a file: the synthetic and real-evidence tasks and the dialogue-tag questions all read
    the training novels."""
    return load_book(path)


# A sentence ends with . ! or ? (maybe closing a quote) and the next begins, after whitespace, upper case.
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019]?(?=\s+[\"'\u201c\u2018]?[A-Z])")

_corpus_cache: dict[tuple[int, str], tuple[str, list[int]]] = {}


def _book(tokenizer: Any, name: str, books_dir: Path) -> tuple[str, list[int]]:
    """A book's text and each token's start offset (cached: tokenizing a novel takes a second)."""
    key = (id(tokenizer), str(Path(books_dir) / name))
    if key not in _corpus_cache:
        text = book_text(Path(books_dir) / f"{name}.txt")
        _corpus_cache[key] = (text, token_starts(text, tokenizer))
    return _corpus_cache[key]


def split_books(split: Split) -> tuple[str, ...]:
    if split == "train":
        return TRAIN_BOOKS
    if split == "held-out":
        return HELD_OUT_BOOKS
    raise ValueError(f"unknown split {split!r}; choose 'train' or 'held-out'")
