"""The pass view follows a pass of several questions on its own timer: it loads again only the readings that
moved, and its timer stops once the pass has finished."""

from __future__ import annotations

import gradio as gr
import pytest

from app.services import documents, readings
from app.services.runner import run_readings
from app.ui.pass_view import build_pass_view
from tests.fakes import FakeEngine
from tests.integration.test_reading_service import TEXT, echo_last_line

pytestmark = pytest.mark.integration


def _shown(view, updates: dict) -> list:
    """The box, timer and cards updated, in that order (the view's handlers return updates by component)."""
    return [updates[part] for part in (view.box, view.timer, view.cards)]


def test_the_pass_view_loads_only_what_moved_and_stops_when_the_pass_is_done(settings, tokenizer, monkeypatch):
    with gr.Blocks():
        view = build_pass_view(settings, lambda: None)
    doc, _ = documents.add_document(settings, "islands.txt", TEXT.encode())
    ids = [r.id for r in readings.ask(settings, doc.id, ["Which island?", "Which ship?"], enqueue=False)]
    box, timer, cards = _shown(view, view.show(ids))
    assert box["visible"] and box["value"].count('class="lr-pass-card"') == 2 and timer.active
    loaded: list[int] = []
    show = readings.show
    monkeypatch.setattr(readings, "show", lambda s, i, **kw: loaded.append(i) or show(s, i, **kw))

    updates = view.follow(ids, cards)
    assert set(updates) == {view.timer} and loaded == []  # nothing moved: nothing loaded, no update

    run_readings(settings, ids[:1], FakeEngine(tokenizer, echo_last_line))
    box, timer, cards = _shown(view, view.follow(ids, cards))
    assert loaded == ids[:1] and "last seen" in box["value"] and timer.active  # the other one is still queued

    run_readings(settings, ids[1:], FakeEngine(tokenizer, echo_last_line))
    box, timer, cards = _shown(view, view.follow(ids, cards))
    assert loaded == ids and not timer.active  # every reading done: the pass view stops following
