"""Errors every service may raise; each entry point maps them once (the API in app.web)."""

from __future__ import annotations


class NotFound(LookupError):
    """The document, reading (…) named by id does not exist: HTTP 404 wherever it is asked for.
    Invalid input stays a ValueError (HTTP 422)."""
