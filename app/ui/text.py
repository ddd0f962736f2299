"""Putting values from documents, users and the model into the UI's Markdown safely, and durations."""

from __future__ import annotations

import html
import string

# Markdown's punctuation, escaped with a backslash; & < > " ' become HTML entities instead.
_MD_ESCAPES = str.maketrans({c: "\\" + c for c in string.punctuation if c not in "&<>\"'"})


def text_md(value: object) -> str:
    """`value` as literal text inside Markdown: no HTML, link, image, emphasis or heading can come
    out of it. Every value from a document, a user or the model goes through this before it is put
    in a Markdown string; line breaks become spaces (these are one-line fields)."""
    return html.escape(" ".join(str(value).split()).translate(_MD_ESCAPES))


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"
