"""The Read tab's handlers return their updates by component: each may update only what its event lists as
outputs (Gradio refuses any other component, an error in the browser). Each handler is called here as the page
calls it (no request: the local admin, no document menu) and its updates checked against its event's outputs."""

from __future__ import annotations

import gradio as gr
import pytest

from app.services import documents, readings, review
from app.ui.gradio_app import build_ui
from app.ui.read_events import ReadEvents
from app.ui.reading_details import ReadingDetails
from tests.integration.test_reading_service import TEXT

pytestmark = pytest.mark.integration


class Handlers:
    """The Read tab's handlers by name; `call(name, ...)` calls one and checks its updates."""

    def __init__(self, ui: gr.Blocks) -> None:
        self.events: dict[str, list[tuple[object, set[int]]]] = {}
        for f in ui.fns.values():
            # A timer's listeners run as one event (app/ui/ticks.py): each is checked against its own outputs.
            for fn, outputs in getattr(f.fn, "parts", [(f.fn, f.outputs)]):
                if isinstance(getattr(fn, "__self__", None), ReadEvents | ReadingDetails):
                    self.events.setdefault(fn.__name__, []).append((fn, {b._id for b in outputs}))

    def call(self, name: str, *args: object) -> object:
        fn, _ = self.events[name][0]
        updates = fn(*args)
        if isinstance(updates, dict) and updates != gr.skip():
            assert updates, f"{name}: an empty dict is no update Gradio accepts"
            keys = {c._id for c in updates}
            assert any(keys <= outputs for _, outputs in self.events[name]), f"{name} updates what it does not list"
        return updates


@pytest.fixture
def handlers(settings) -> Handlers:
    return Handlers(build_ui(settings))


def test_every_read_tab_handler_updates_only_its_events_outputs(settings, handlers, tmp_path) -> None:
    doc, _ = documents.add_document(settings, "islands.txt", TEXT.encode())
    call = handlers.call
    upload = tmp_path / "again.txt"
    upload.write_text(TEXT + " again")
    assert call("on_upload", str(upload), None, {}) and not upload.exists()
    upload.write_text(TEXT + " and again")
    after = call("on_upload", str(upload), None, {"document": doc.id})  # another document was shown: cleared
    tab = handlers.events["on_upload"][0][0].__self__.tab
    assert after[tab.ask.question] == "" and after[tab.doc.actions.msg] == ""
    for document_id in (doc.id, None):
        call("on_choose", document_id, None, {})
        call("on_parts", document_id)
    call("on_restore", {"document": doc.id, "reading": None})
    call("on_defaults")
    call("on_ask", None, "Which island?", "", "", "", {})
    call("on_ask", doc.id, "Which island?", "", "x", "", {})  # refused: not a size
    asked = call("on_ask", doc.id, "Which island?", "Which ship?", "", "", {})
    reading_id = readings.document_readings(settings, doc.id)[-1].id
    assert "Queued" in str(list(asked.values()))
    # Refused while a reading is open: its live view goes on under the refusal; nothing else changes.
    refused = call("on_ask", doc.id, "", "", "", "", {}, reading_id)
    assert tab.reading.reading_id not in refused and tab.reading.timer in refused and tab.ask.question not in refused
    assert "Cannot ask" in refused[tab.reading.status] and refused[tab.reading.notice][0] == reading_id
    for name in ("on_tick", "on_cancel", "on_retry"):
        call(name, reading_id)
        call(name, None)
    call("on_resume", None, None, "", doc.id, {})
    call("on_resume", reading_id, 1, "edited", doc.id, {})  # refused: no checkpoint yet
    for name in ("load_timeline", "load_provenance", "load_branches", "compare_choices"):
        call(name, reading_id)
        call(name, None)
    # Opened again: loaded unless it shows the open reading's steps already (a late reload undid an arrow key).
    steps = readings.step_count(settings, reading_id)
    assert call("reopen_timeline", reading_id, [reading_id, steps, False]) == gr.skip()
    assert call("reopen_timeline", reading_id, [reading_id - 1, steps, True]) != gr.skip()
    call("reopen_timeline", None, None)
    # The provenance and compare panels opened again refresh their rows, choices and this reading's side, never what
    # was chosen.
    compare = handlers.events["compare_choices"][0][0].__self__.panels.compare
    assert set(call("refresh_compare_choices", reading_id)) == {compare.other, compare.left}  # not the other side
    assert call("refresh_compare_choices", None) == gr.skip()
    assert call("refresh_provenance", None) == gr.skip() and len(call("refresh_provenance", reading_id)) == 2
    call("follow_timeline", reading_id, None)
    call("follow_timeline", reading_id, [reading_id, 3, False])
    call("follow_timeline", reading_id, [reading_id, 3, True])
    call("on_compare", reading_id, reading_id)
    call("on_compare", reading_id, None)
    call("on_branches_refresh", reading_id, [[1]])
    call("on_feedback", reading_id, None, "", "")
    call("on_feedback", None, "correct", "", "")
    call("after_delete", doc.id, None, {})


def test_the_page_opens_as_it_is_with_no_document_and_shows_the_rest_once_one_is_chosen(settings, handlers) -> None:
    """The menu's `change` does not fire when the page opens with none chosen: the layout itself must hide what
    needs a document and show the first step, as on_parts(None) does (issue 54: every panel showed)."""
    doc, _ = documents.add_document(settings, "islands.txt", TEXT.encode())
    none = handlers.call("on_parts", None)
    tab = handlers.events["on_parts"][0][0].__self__.tab
    shown = {c: u["visible"] for c, u in none.items() if isinstance(u, dict) and "visible" in u}
    assert {c: c.visible for c in shown} == shown, "the page opens otherwise than on_parts(None) shows it"
    assert none[tab.doc.first_step]["visible"] and none[tab.reading_column]["visible"]  # Ask says "choose one"
    hidden = [tab.readings, tab.review_panel.box, tab.reading.body, tab.reading_parts, tab.doc.actions.delete]
    assert all(none[part]["visible"] is False for part in hidden)
    chosen = handlers.call("on_parts", doc.id)
    assert chosen[tab.doc.first_step]["visible"] is False
    assert all(chosen[part]["visible"] for part in hidden)


def test_a_review_is_one_line_of_the_documents_readings_and_stays_out_of_compare(settings, handlers) -> None:
    """Its 41 readings are one line that opens its checklist, not 41 lines above the person's own, nor 41 choices
    to compare with (issue 54)."""
    doc, _ = documents.add_document(settings, "islands.txt", TEXT.encode())
    (mine,) = readings.ask(settings, doc.id, ["Which island?"], enqueue=False)
    started = review.review(settings, doc.id, enqueue=False)
    (other,) = readings.ask(settings, doc.id, ["Which ship?"], enqueue=False)
    details = handlers.events["compare_choices"][0][0].__self__
    rows = details.look.reading_rows(doc.id)
    assert [row[0] for row in rows] == [other.id, f"review #{started.id}", mine.id]
    assert rows[1][2:4] == ["queued", "0 of 41 answered"]
    choices = handlers.call("compare_choices", mine.id)[details.panels.compare.other]["choices"]
    assert [value for _, value in choices] == [other.id]


def test_opening_a_reading_outside_the_pass_empties_the_pass_cards(settings, handlers) -> None:
    """The pass's cards showed the original pass while a branch (or another reading) was open (issue 54)."""
    doc, _ = documents.add_document(settings, "islands.txt", TEXT.encode())
    one, two = readings.ask(settings, doc.id, ["Which island?", "Which ship?"], enqueue=False)
    (alone,) = readings.ask(settings, doc.id, ["Who sailed?"], enqueue=False)
    on = handlers.events["on_open"][0][0].__self__
    pass_ids = [one.id, two.id]

    def chose(reading_id: int) -> dict:
        row = gr.SelectData(None, {"index": [0, 0], "value": reading_id, "row_value": [reading_id, "Q?"]})
        return handlers.call("on_open", row, {}, pass_ids)

    assert on.tab.pass_ids not in chose(two.id)  # one of the pass: its cards stay
    left = chose(alone.id)
    assert left[on.tab.pass_ids] == [] and left[on.tab.pass_view.box]["visible"] is False
