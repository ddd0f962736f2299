"""text_md: any string, put in the UI's Markdown, renders as exactly that text and nothing else."""

from __future__ import annotations

import html
import re
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from app.services.feedback import FeedbackView
from app.services.views import DocumentView, ProgressView
from app.ui.read_views import describe_document, describe_feedback, describe_progress
from app.ui.text import text_md

# CommonMark with GFM tables and strikethrough: what a Markdown renderer in a browser does.
MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])

PAYLOADS = [
    "Title <img src=http://127.0.0.1:9/title.png onerror=alert(3)>",
    "<script>alert(1)</script>",
    "<a href=javascript:alert(2)>x</a>",
    "![img](http://127.0.0.1:9/i.png)",
    "[link](http://127.0.0.1:9/l) <http://127.0.0.1:9/auto>",
    "**bold** _em_ `code` ~~gone~~ $$x$$",
    "# heading\n\n- item\n1. item\n> quote\n\n    code block\n---",
    "a | b |\n|---|---|\n| c | d |",
    "&lt;img src=x&gt; &amp; &#60;b&#62; \\*not\\* \\",
    "line one  \nline two\r\n\x0bthree",
]


def _text_of(value: str) -> str:
    """Render `**value**` and return (tags, text) of what a browser would show."""
    out = MD.render(f"**{text_md(value)}**")
    tags = re.findall(r"</?([a-zA-Z0-9]+)", out)
    return tags, html.unescape(re.sub(r"<[^>]*>", "", out)).strip()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_render_as_their_own_text(payload: str) -> None:
    tags, text = _text_of(payload)
    assert set(tags) == {"p", "strong"}, (payload, tags)
    assert text == " ".join(payload.split()), text


@given(st.text())
def test_any_text_renders_as_itself(value: str) -> None:
    tags, text = _text_of(value)
    expected = " ".join(value.split())
    if expected:
        assert set(tags) == {"p", "strong"}, (value, tags)
    # NUL becomes U+FFFD in any Markdown renderer, as in a browser.
    assert text == expected.replace("\0", "\ufffd").strip(), (value, text)


def test_document_line_escapes_every_field() -> None:
    payload = "<img src=http://127.0.0.1:9/x.png onerror=alert(3)>"
    d = DocumentView(
        id=1,
        title=payload,
        filename=payload,
        format="html",
        status="failed",
        error=f"bad {payload}",
        size_bytes=1,
        pages=0,
        page_unit="section",
        char_count=0,
        token_count=None,
        created_at=None,
    )
    rendered = MD.render(describe_document(d))
    assert "<img" not in rendered and payload.replace("<", "&lt;").replace(">", "&gt;") in rendered


def test_feedback_list_escapes_every_field() -> None:
    payload = "<img src=http://127.0.0.1:9/x.png onerror=alert(3)> ![i](http://127.0.0.1:9/i.png)"
    v = FeedbackView(
        id=1,
        reading_id=2,
        document_id=3,
        question=payload,
        answer=payload,
        verdict="incorrect",
        corrected_answer=f"right {payload}",
        comment=f"note {payload}",
        created_at=datetime(2026, 11, 23, 15, 40),
    )
    rendered = MD.render(describe_feedback([v], "Saved: incorrect."))
    assert "<img" not in rendered and "<a" not in rendered
    text = html.unescape(re.sub(r"<[^>]*>", "", rendered))
    assert f"right answer: right {payload}" in text and f"comment: note {payload}" in text
    assert "2026-11-23 15:40" in text and text.startswith("Saved: incorrect.")
    assert "No feedback on this answer yet." in describe_feedback([])


def test_a_cancelled_reading_says_so_and_how_to_resume() -> None:
    p = ProgressView(step=3, total=9, elapsed_s=10.0, eta_s=None)
    assert describe_progress("cancelled", p, None).startswith("Cancelled after chunk 3 of 9")
    assert "before its first chunk" in describe_progress("cancelled", ProgressView(0, None, None, None), None)
