import doctest
from bisect import bisect_right

import pytest

from inference import chunking
from inference.capture import document_spans
from inference.chunking import split_into_chunks, token_starts
from training.tasks import BOOKS_DIR

BOOK = BOOKS_DIR / "pg84.txt"


@pytest.fixture(scope="module")
def text() -> str:
    raw = BOOK.read_bytes().decode("cp1252").replace("\r\n", "\n")
    return raw[20_000:60_000]


def test_doctests():
    assert doctest.testmod(chunking).failed == 0


@pytest.mark.parametrize("n", [1, 7, 128, 1000])
def test_chunks_tile_the_text_with_exact_token_counts(text, tokenizer, n):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    chunks = split_into_chunks(text, tokenizer, n)
    assert "".join(c.text(text) for c in chunks) == text
    assert chunks[0].start_char == 0 and chunks[-1].end_char == len(text)
    for a, b in zip(chunks, chunks[1:]):
        assert a.end_char == b.start_char and a.end_token == b.start_token
    assert [c.end_token - c.start_token for c in chunks[:-1]] == [n] * (len(chunks) - 1)
    assert 1 <= chunks[-1].end_token - chunks[-1].start_token <= n
    assert chunks[-1].end_token == len(ids)
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_chunk_text_retokenises_to_about_its_token_count(text, tokenizer):
    for c in split_into_chunks(text, tokenizer, 256)[:-1]:
        got = len(tokenizer(c.text(text), add_special_tokens=False)["input_ids"])
        assert abs(got - 256) <= 2  # only the tokens at the two cut points can merge differently


def test_empty_text_has_no_chunks(tokenizer):
    assert split_into_chunks("", tokenizer, 10) == []


def test_chunk_size_must_be_positive(tokenizer):
    with pytest.raises(ValueError):
        split_into_chunks("abc", tokenizer, 0)


@pytest.mark.parametrize(("n", "shift"), [(128, 100), (128, 228), (1000, 1)])
def test_shifted_chunks_move_every_boundary_and_still_tile_the_text(text, tokenizer, n, shift):
    plain = split_into_chunks(text, tokenizer, n)
    shifted = split_into_chunks(text, tokenizer, n, shift)
    assert "".join(c.text(text) for c in shifted) == text
    assert shifted[0].start_token == 0 and shifted[0].end_token == shift % n
    assert [c.start_token for c in shifted[1:]] == [
        c.start_token + shift % n for c in plain if c.start_token + shift % n < plain[-1].end_token
    ]
    assert [c.index for c in shifted] == list(range(len(shifted)))
    assert split_into_chunks(text, tokenizer, n, n) == plain  # a whole chunk's shift moves nothing
    with pytest.raises(ValueError):
        split_into_chunks(text, tokenizer, n, -1)


@pytest.mark.parametrize(("n", "shift"), [(64, 0), (256, 0), (256, 100)])
def test_whole_sentence_chunks_tile_the_text_and_cut_only_a_sentence_longer_than_a_chunk(text, tokenizer, n, shift):
    chunks = split_into_chunks(text, tokenizer, n, shift, whole_sentences=True)
    plain = split_into_chunks(text, tokenizer, n, shift)
    assert "".join(c.text(text) for c in chunks) == text
    for a, b in zip(chunks, chunks[1:]):
        assert a.end_char == b.start_char and a.end_token == b.start_token
    assert all(1 <= c.end_token - c.start_token <= n for c in chunks)
    assert chunks[-1].end_token == plain[-1].end_token
    assert len(plain) < len(chunks) < 1.5 * len(plain)  # a chunk gives up less than a sentence's tokens
    starts = token_starts(text, tokenizer)
    spans = document_spans(text)
    cuts = 0
    for c in chunks[:-1]:
        for a, b in spans:
            if a < c.end_char < b:  # cut: only where the sentence opens with the chunk (no other start in it)
                cuts += 1
                assert bisect_right(starts, a) - 1 <= c.start_token, (c, text[a:b])
    plain_cuts = sum(a < c.end_char < b for c in plain[:-1] for a, b in spans)
    assert cuts < plain_cuts / 4, (cuts, plain_cuts)
