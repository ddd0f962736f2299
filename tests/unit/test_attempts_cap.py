"""The attempts cap: when a reading whose runners keep stopping is failed instead of taken up again."""

from __future__ import annotations

import pytest

from app.services.runner import crash_error
from app.settings import Settings


@pytest.mark.parametrize("attempts", [0, 1, 2])
def test_below_the_cap_the_reading_is_taken_up_again(attempts):
    assert crash_error(attempts, 3, cursor=4, total_chunks=7) is None


def test_at_the_cap_the_error_says_what_happened_where_and_what_to_do():
    error = crash_error(3, 3, cursor=4, total_chunks=7)
    assert error.startswith("the worker stopped 3 times while reading this (last at chunk 5 of 7;")
    assert "resume to try again from the last checkpoint" in error


def test_singular_and_unknown_length():
    assert crash_error(1, 1, cursor=0, total_chunks=None).startswith(
        "the worker stopped 1 time while reading this (last at chunk 1;"
    )


def test_the_cap_is_a_setting_with_a_default_of_three(monkeypatch):
    assert Settings().max_attempts == 3
    monkeypatch.setenv("LONGREAD_MAX_ATTEMPTS", "5")
    assert Settings().max_attempts == 5
    with pytest.raises(ValueError):
        Settings(max_attempts=0)
