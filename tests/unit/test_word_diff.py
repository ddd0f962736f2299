"""The timeline's word-by-word change between two memories."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.services.views import word_diff


def test_added_dropped_and_kept_words_in_reading_order():
    assert word_diff("the key hangs behind the barometer", "the spare key hangs near the barometer") == [
        ("the", None),
        (" spare", "+"),
        (" key hangs ", None),
        ("behind", "-"),
        ("near", "+"),
        (" the barometer", None),
    ]


def test_punctuation_is_a_word_of_its_own():
    assert word_diff("ship 1 logged", "ship 1 logged, ship 2") == [("ship 1 logged", None), (", ship 2", "+")]


def test_the_first_step_is_all_added_and_an_unchanged_memory_all_kept():
    assert word_diff(None, "No previous memory") == [("No previous memory", "+")]
    assert word_diff("same words", "same words") == [("same words", None)]
    assert word_diff("gone", "") == [("gone", "-")]


@given(st.text(), st.text())
def test_both_memories_can_be_read_back_from_the_diff(old, new):
    spans = word_diff(old, new)
    assert "".join(t for t, kind in spans if kind != "-") == new
    assert "".join(t for t, kind in spans if kind != "+") == old
    assert all(t for t, _ in spans)
