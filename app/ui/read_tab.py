"""The Read tab: upload or choose a document (or delete it), ask, watch the agent read (chunk k of K, its current
memory), get the answer (several questions asked at once: side by side); then its timeline (edit a memory and
resume from it), provenance, branches, comparison and feedback.

Its parts are laid out by read_layout.py (each panel by its own builder), its handlers are read_events.py's, and
this module wires them: each event to the components, by name, that its handler may update.

To add a box: make it in its panel's builder and name it in the panel's dataclass; the handlers that fill it
return {box: value}; add it to those handlers' events' outputs here (or to the ReadTab list they share)."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from app.services.users import UserView
from app.settings import Settings
from app.ui.read_events import ReadEvents
from app.ui.read_layout import ReadTab, build_read_layout
from app.ui.ticks import Ticks

HIDDEN = {"show_progress": "hidden"}  # no Gradio spinner or timer ("0.2s") over the info and status lines


def build_read_tab(settings: Settings, me: Callable[[], UserView | None]):
    """The tab's components, in the current layout context. Returns `connect(ui, saved, timer, list_timer)`,
    which wires their events once the page-wide state and timers exist (they live outside the tabs, so
    they keep running whichever tab is open)."""
    tab = build_read_layout(settings, me)
    on = ReadEvents(settings, me, tab)

    def connect(ui: gr.Blocks, saved: gr.BrowserState, timer: Ticks, list_timer: Ticks) -> None:
        tab.saved, tab.reading.timer = saved, timer.timer
        _connect_document(tab, on)
        _connect_questions(ui, tab, on)
        _connect_reading(tab, on, timer, list_timer)
        tab.review_panel.connect(tab.doc.document, tab.readings, list_timer)
        # After a reload: the document and reading that were open.
        ui.load(on.on_restore, saved, [tab.doc.document, tab.doc.info, tab.readings, *tab.opened], **HIDDEN)

    return connect


def _connect_document(tab: ReadTab, on: ReadEvents) -> None:
    doc, saved, reading_id = tab.doc, tab.saved, tab.reading.reading_id
    uploaded = [doc.upload, doc.document, doc.actions.msg, *tab.cleared]
    doc.upload.upload(on.on_upload, [doc.upload, reading_id, saved], uploaded, **HIDDEN)
    # `input`, not `change`: a document set by the code (upload, reload) is shown by that code.
    doc.document.input(on.on_choose, [doc.document, reading_id, saved], [doc.actions.msg, *tab.cleared], **HIDDEN)
    parts = [doc.actions.delete, doc.actions.dismiss, doc.actions.confirm_box, tab.reading_column, doc.first_step]
    doc.document.change(on.on_parts, doc.document, [*parts, *tab.need_document, doc.shown], **HIDDEN)
    doc.actions.connect(doc.document, on.after_delete, [doc.document, reading_id, saved], [doc.document, *tab.cleared])


def _connect_questions(ui: gr.Blocks, tab: ReadTab, on: ReadEvents) -> None:
    ask, pass_view = tab.ask, tab.pass_view
    asked = [ask.question, ask.more, ask.chunk_tokens, ask.memory_tokens]
    outputs = [*tab.reading.outputs, tab.reading.notice, tab.readings, tab.saved, tab.pass_ids, *pass_view.outputs]
    ask.ask.click(on.on_ask, [tab.doc.document, *asked, tab.saved, tab.reading.reading_id], outputs, **HIDDEN)
    # The pass's own timer: it runs while a reading of the pass is queued or running (a retry starts it again).
    pass_view.timer.tick(pass_view.follow, [tab.pass_ids, pass_view.cards], pass_view.outputs, **HIDDEN)
    tab.reading.retry.click(lambda: gr.Timer(active=True), None, pass_view.timer, **HIDDEN)
    sizes = [ask.chunk_tokens, ask.memory_tokens]
    ui.load(on.on_defaults, None, sizes, **HIDDEN)
    ask.settings_box.expand(on.on_defaults, None, sizes, **HIDDEN)
    # `change`: also when the code sets or clears them. One listener for the three boxes, so that its runs queue
    # one after another: with one listener a box, the run a reading's opening started (one question) could end
    # after the run of the question typed next and leave "One question" under two.
    boxes = [tab.doc.document, ask.question, ask.more]
    gr.on([b.change for b in boxes], on.on_questions, boxes, ask.estimate, **HIDDEN, trigger_mode="always_last")


def _connect_reading(tab: ReadTab, on: ReadEvents, timer: Ticks, list_timer: Ticks) -> None:
    v, saved = tab.reading, tab.saved
    timeline, branches = tab.details.panels.timeline, tab.details.panels.branches
    tab.readings.select(on.on_open, [saved, tab.pass_ids], tab.opened, **HIDDEN)
    # Timers read the shown document from a State: a tick sent with a just-deleted document's id in the menu
    # was refused by the menu ("Value: 1 is not in the list of choices"), an error box after every deletion.
    list_timer.tick(on.on_refresh, [tab.doc.shown, tab.readings], tab.readings, **HIDDEN)
    # The estimate above Ask follows the queue (a reading that finished leaves "the workers are busy" behind) and
    # mends a run of its boxes' listener that a busy page dropped (a browser test saw "3 questions" never come).
    list_timer.tick(on.on_questions, [tab.doc.shown, tab.ask.question, tab.ask.more], tab.ask.estimate, **HIDDEN)
    timer.tick(on.on_tick, [v.reading_id, v.notice], v.live, **HIDDEN)
    v.cancel.click(on.on_cancel, v.reading_id, [*v.live, v.notice], **HIDDEN)
    tab.details.connect(v.reading_id, v.status, timer, list_timer)
    # While a reading runs, its row follows it every second, not every three (as its branches do: details).
    timer.tick(on.on_refresh, [tab.doc.shown, tab.readings], tab.readings, **HIDDEN)
    branches.table.select(on.on_open, [saved, tab.pass_ids], tab.opened, **HIDDEN)
    edited = [v.reading_id, timeline.slider, timeline.memory, tab.doc.document, saved]
    timeline.resume.click(on.on_resume, edited, [timeline.edit_msg, *tab.opened, tab.readings], **HIDDEN)
    v.retry.click(on.on_retry, v.reading_id, [*v.live, v.notice], **HIDDEN)
