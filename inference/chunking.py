"""Token-exact chunking: chunk k holds tokens [k*n, (k+1)*n) of the document under the serving
model's tokenizer, mapped back to character offsets so that the chunks tile the text exactly. A reader that keeps
sentences verbatim (the extractive memory policy) reads chunks of whole sentences instead: each ends before the
sentence that would cross its last token, so no kept sentence is a fragment ("erval continued" for "Clerval
continued", cut by a chunk's edge, was kept as evidence and answered wrong)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from inference.capture import document_spans  # the sentences the extractive memory keeps, long ones cut


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


def sentence_firsts(text: str, starts: list[int], chunk_tokens: int, shift: int) -> list[int]:
    """The first token of each chunk of whole sentences: a chunk ends where the last sentence that starts within
    `chunk_tokens` of its first token starts (the first chunk by `shift` when there is one, or at the first start
    after it); only a sentence longer than a chunk is cut, at the chunk's size.

    >>> text = "One two. Three four five. Six."
    >>> starts = [0, 4, 9, 15, 20, 26]  # a token a word
    >>> sentence_firsts(text, starts, 3, 0)  # tokens 0-2 would cut "Three four five." after "Three"
    [0, 2, 5]
    >>> sentence_firsts(text, starts, 3, 1)  # a first chunk of one token would cut "One two."
    [0, 2, 5]
    """
    n = len(starts)
    # the token a sentence opens with: the last one that starts at or before its first character
    opens = sorted({bisect_right(starts, a) - 1 for a, _ in document_spans(text)})
    firsts = [0] if n else []
    end = shift or chunk_tokens
    while end < n:
        i = bisect_right(opens, end) - 1
        if i >= 0 and opens[i] > firsts[-1]:
            cut = opens[i]
        else:  # no sentence starts in it: it ends at the next start where it can hold it (a shifted first chunk)
            cut = min(opens[i + 1] if i + 1 < len(opens) else n, firsts[-1] + chunk_tokens)
        if cut >= n:
            break
        firsts.append(cut)
        end = cut + chunk_tokens
    return firsts


def split_into_chunks(
    text: str, tokenizer: Any, chunk_tokens: int, shift_tokens: int = 0, whole_sentences: bool = False
) -> list[Chunk]:
    """Chunks of `chunk_tokens` tokens; with `shift_tokens`, every boundary moved that many tokens later (the
    first chunk is then the first `shift_tokens % chunk_tokens` tokens): how robust a reading is to where
    its chunks happen to end. With `whole_sentences`, of at most `chunk_tokens` tokens that end between
    sentences (`sentence_firsts`)."""
    if chunk_tokens < 1:
        raise ValueError("chunk_tokens must be at least 1")
    if shift_tokens < 0:
        raise ValueError("shift_tokens must not be negative")
    starts = token_starts(text, tokenizer)
    n = len(starts)
    shift = shift_tokens % chunk_tokens
    if whole_sentences:
        firsts = sentence_firsts(text, starts, chunk_tokens, shift)
    else:
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
