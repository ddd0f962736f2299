"""Errors every service may raise; each entry point maps them once (the API in app.web)."""

from __future__ import annotations


class NotFound(LookupError):
    """The document, reading (…) named by id does not exist: HTTP 404 wherever it is asked for.
    Invalid input stays a ValueError (HTTP 422)."""


#: database ids are 32-bit integers (PostgreSQL `integer`): a larger one names nothing
MAX_ID = 2**31 - 1


def valid_id(value: object) -> bool:
    """Whether `value` can be an id at all (a huge or negative number must answer NotFound, not crash
    the database driver)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ID
