"""Token-exact chunking: chunk k holds tokens [k*n, (k+1)*n) of the document under the serving
model's tokenizer, mapped back to character offsets so that the chunks tile the text exactly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Chunk:
    index: int
    start_token: int
    end_token: int
    start_char: int
    end_char: int

    def text(self, document: str) -> str:
        return document[self.start_char : self.end_char]


def token_starts(text: str, tokenizer: Any) -> list[int]:
    """Character offset at which each token of `text` starts."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return [start for start, _ in enc["offset_mapping"]]


def split_into_chunks(text: str, tokenizer: Any, chunk_tokens: int, shift_tokens: int = 0) -> list[Chunk]:
    """Chunks of `chunk_tokens` tokens; with `shift_tokens`, every boundary moved that many tokens later (the
    first chunk is then the first `shift_tokens % chunk_tokens` tokens): how robust a reading is to where
    its chunks happen to end."""
    if chunk_tokens < 1:
        raise ValueError("chunk_tokens must be at least 1")
    if shift_tokens < 0:
        raise ValueError("shift_tokens must not be negative")
    starts = token_starts(text, tokenizer)
    n = len(starts)
    shift = shift_tokens % chunk_tokens
    firsts = ([0] if shift and n else []) + list(range(shift, n, chunk_tokens))
    chunks = []
    for index, first in enumerate(firsts):
        last = min(firsts[index + 1] if index + 1 < len(firsts) else n, n)
        # A chunk ends where the next begins, so whitespace the tokenizer's offsets leave out
        # between tokens still belongs to exactly one chunk.
        start_char = 0 if first == 0 else starts[first]
        end_char = starts[last] if last < n else len(text)
        chunks.append(Chunk(index, first, last, start_char, end_char))
    return chunks
