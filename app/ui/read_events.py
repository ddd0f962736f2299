"""The Read tab's handlers. Each returns the updates it makes keyed by component ({component: value}): what it
leaves out stays as it is, and read_tab.py wires each to the components it may update (`ReadTab`'s lists)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import gradio as gr

from app.db import session_scope
from app.documents.base import pages_label
from app.services import documents, health, readings
from app.services.documents import UploadError
from app.services.errors import NotFound
from app.services.reading_config import default_reading_config
from app.services.users import UserView
from app.services.views import QUEUED, ReadingView
from app.settings import Settings
from app.ui.question_panel import parse_tokens
from app.ui.read_layout import ReadTab
from app.ui.read_lookups import Lookups
from app.ui.read_views import (
    asked_questions,
    describe_document,
    describe_pass,
    describe_progress,
    page_parts,
    progress_bar,
    review_of_row,
)
from app.ui.text import text_md

ACTIVE = {"queued", "running"}
NOTICE_S = 10.0  # seconds a refused cancel/retry's message stays above the live status


class ReadEvents:
    def __init__(self, settings: Settings, me: Callable[[], UserView | None], tab: ReadTab) -> None:
        self.settings, self.me, self.tab = settings, me, tab
        self.look = Lookups(settings, me)

    # The document: upload, choose, delete.

    def on_upload(self, path: str | None, reading_id: int | None, saved: dict | None) -> dict:
        """Store and parse the file, then show its document (the earlier one for the same bytes).
        The upload box is emptied (and Gradio's copy deleted) after."""
        t = self.tab
        if not path:
            return gr.skip()
        file = Path(path)
        try:
            size = file.stat().st_size
            if size > self.settings.max_upload_mb * 1024 * 1024:
                refused = (
                    f"{text_md(file.name)} is {size / 2**20:.1f} MiB, over the {self.settings.max_upload_mb} MiB limit."
                )
                return {t.doc.upload: None, t.doc.info: f"**Upload refused:** {refused}"}
            doc, existing = documents.add_document(self.settings, file.name, file.read_bytes(), user=self.me())
        except UploadError as exc:
            return {t.doc.upload: None, t.doc.info: f"**Upload refused:** {text_md(exc)}"}
        finally:
            file.unlink(missing_ok=True)
        # Another document was shown: its questions, pass, memory and answer go (as on a switch); questions
        # typed before the first document are kept for it.
        before = (saved or {}).get("document")
        shown = self.show_document(doc.id, reading_id, saved) if before is None else self.on_switch(doc.id, None, saved)
        note = f"Already uploaded as #{doc.id}; its readings are below.  \n" if existing else ""
        menu = gr.update(choices=self.look.document_choices(), value=doc.id)
        done = {t.doc.upload: None, t.doc.document: menu, t.doc.info: note + shown[t.doc.info], t.doc.actions.msg: ""}
        return shown | done

    def show_document(self, document_id: int | None, reading_id: int | None, saved: dict | None) -> dict:
        """A document chosen (or uploaded): its info line and readings; a reading of another
        document is closed. Updates `ReadTab.shown`."""
        t = self.tab
        saved = {**(saved or {}), "document": document_id}
        if document_id is None:
            return {t.doc.info: "", t.readings: [], t.saved: saved} | t.reading.closed()
        doc = self.look.document(document_id)
        shown = {t.doc.info: describe_document(doc) if doc else "", t.readings: self.look.reading_rows(document_id)}
        if reading_id is not None and self.look.document_of(reading_id) == document_id:
            return shown | {t.saved: saved}
        return shown | {t.saved: {**saved, "reading": None}} | t.reading.closed()

    def on_choose(self, document_id: int | None, reading_id: int | None, saved: dict | None) -> dict:
        """A person chose another document in the menu: as on_switch, and the last deletion's message goes."""
        return self.on_switch(document_id, reading_id, saved) | {self.tab.doc.actions.msg: ""}

    def on_switch(self, document_id: int | None, reading_id: int | None, saved: dict | None) -> dict:
        """Another document chosen: its info and readings; the previous document's questions, pass, memory and
        answer go (show_document closes a reading of another document). Updates `ReadTab.cleared`."""
        t = self.tab
        asked = {t.ask.question: "", t.ask.more: "", t.pass_ids: [], t.details.panels.timeline.edit_msg: ""}
        return self.show_document(document_id, reading_id, saved) | asked | t.pass_view.hide()

    def on_parts(self, document_id: int | None) -> dict:
        """Only what applies to the chosen document (page_parts): Delete or Dismiss, no confirmation open, the
        question column unless it is a failed upload, the open reading, the readings and the review if it can be
        read, and with none chosen the first step; its id for the timers."""
        t = self.tab
        doc = self.look.document(document_id)
        p = page_parts(doc.status if doc else None)
        visible = {t.doc.actions.delete: p.delete, t.doc.actions.dismiss: p.dismiss, t.doc.actions.confirm_box: False}
        visible |= {t.reading_column: p.asking, t.doc.first_step: p.first_step}
        visible |= {part: p.reading for part in t.need_document}
        shown = {t.doc.shown: doc.id if doc else None}
        return {part: gr.update(visible=v) for part, v in visible.items()} | shown

    def after_delete(self, document_id: int | None, reading_id: int | None, saved: dict | None) -> dict:
        """Once a deletion was tried: the menu without the document, and the tab cleared as for a switch (nothing
        changes if it is still there: the deletion was refused). One query: the menu's documents."""
        choices = self.look.document_choices()
        if document_id in {value for _, value in choices}:
            return gr.skip()
        return {self.tab.doc.document: gr.update(choices=choices, value=None)} | self.on_switch(None, None, saved)

    def on_refresh(self, document_id: int | None, shown: list[list[object]] | None):
        """Readings made elsewhere (the API, another tab) and their progress; no update when
        nothing changed, so the table does not flicker."""
        rows = self.look.reading_rows(document_id)
        same = [[str(c) for c in row] for row in rows] == [[str(c) for c in row] for row in (shown or [])]
        return gr.update() if same else rows

    def on_restore(self, saved: dict | None) -> dict:
        """After a reload: the document and the reading that were open, live if still running."""
        t = self.tab
        saved = saved or {}
        document_id = saved.get("document")
        choices = self.look.document_choices()
        if document_id not in {value for _, value in choices}:  # nothing to restore: leave the page be
            return {t.doc.document: gr.update(choices=choices)}
        shown = self.show_document(document_id, None, saved)
        menu = {t.doc.document: gr.update(choices=choices, value=document_id)}
        return menu | {box: shown[box] for box in (t.doc.info, t.readings)} | self.open_reading(saved.get("reading"))

    # Asking.

    def on_questions(self, document_id: int | None, question: str, more: str) -> str:
        """Beside the questions: how long the ones typed would take read together (the document's estimate). With
        none typed, nothing, and the document is not looked up (the readings list's tick asks every 3 seconds)."""
        typed = sum(1 for q in asked_questions(question, more) if q.strip())
        doc = self.look.document(document_id) if typed else None
        if doc is None:  # none typed, none chosen, or gone
            return ""
        return describe_pass(doc.estimate, typed)

    def on_defaults(self) -> dict:
        """The sizes a reading asking for none gets now, as the boxes' placeholders."""
        config = default_reading_config(self.settings)
        return {
            self.tab.ask.chunk_tokens: gr.update(placeholder=f"{config.chunk_tokens} (default)"),
            self.tab.ask.memory_tokens: gr.update(placeholder=f"{config.memory_tokens} (default)"),
        }

    def on_ask(
        self,
        document_id: int | None,
        question: str,
        more: str,
        chunk: str,
        memory: str,
        saved: dict | None,
        open_id: int | None = None,
    ) -> dict:
        """Ask the question, and any more (one a line): read together in one pass; the first one opens, the pass
        shows side by side (pass_view.py). A refusal changes nothing but its message: over the open reading's
        live status for NOTICE_S (which keeps updating), or in the status line when none is open."""
        t, v = self.tab, self.tab.reading
        try:
            asked = self._ask(document_id, question, more, chunk, memory)
        except (NotFound, ValueError) as exc:  # ReadingError is a ValueError
            message = f"**Cannot ask:** {text_md(exc)}"
            if open_id is None:
                return {v.status: message}
            notice = (open_id, message, time.monotonic() + NOTICE_S)
            return self.on_tick(open_id, notice) | {v.notice: notice}
        also = (
            (
                f" ({len(asked) - 1} more question{'s' if len(asked) > 2 else ''} read in the same pass: "
                "all of them side by side below)"
            )
            if len(asked) > 1
            else ""
        )
        view = v.view(asked[0], f"Queued: waiting for a worker…{also}", progress_bar(QUEUED, "queued"), reading=True)
        listed = {t.readings: self.look.reading_rows(document_id), t.pass_ids: asked, v.notice: None}
        opened = {t.saved: {**(saved or {}), "reading": asked[0]}}
        return view | listed | opened | t.pass_view.show(asked)

    def _ask(self, document_id: int | None, question: str, more: str, chunk: str, memory: str) -> list[int]:
        """The ids of the readings asked; NotFound or ValueError says why none was."""
        if document_id is None:
            raise ValueError("upload or choose a document first.")
        questions = asked_questions(question, more)
        sizes = parse_tokens(chunk, "chunk tokens"), parse_tokens(memory, "memory tokens")
        return [r.id for r in readings.ask(self.settings, document_id, questions, *sizes, user=self.me())]

    # The open reading.

    def open_reading(self, reading_id: int | None) -> dict:
        """The reading's question and its live view (status, bar, memory, answer, timer)."""
        r = self.look.reading(reading_id)
        if r is None:
            return self.tab.reading.closed()
        return {self.tab.reading.reading_id: reading_id, self.tab.ask.question: r.question} | self.on_tick(reading_id)

    def on_open(self, evt: gr.SelectData, saved: dict | None, pass_ids: list[int] | None) -> dict:
        """A row of the readings (or branches) table chosen: that reading opens (a review's line opens its
        checklist instead: review_panel); the pass's cards stay only if it is one of the pass's readings."""
        if review_of_row(evt.row_value) is not None:
            return gr.skip()
        reading_id = int(evt.row_value[0])
        opened = self.open_reading(reading_id) | {self.tab.saved: {**(saved or {}), "reading": reading_id}}
        return opened if reading_id in (pass_ids or []) else opened | self.leave_pass()

    def leave_pass(self) -> dict:
        """The pass's cards emptied: the reading now open is not one of its questions (a branch, another row)."""
        return {self.tab.pass_ids: []} | self.tab.pass_view.hide()

    def on_tick(self, reading_id: int | None, notice: tuple[int, str, float] | None = None) -> dict:
        """The open reading's status, bar, memory, answer and timer; an unexpired `notice` (reading id,
        message, until) of this reading heads the status."""
        v = self.tab.reading
        note = notice[1] if notice and notice[0] == reading_id and time.monotonic() < notice[2] else None
        r = self.look.reading(reading_id)
        if r is None:
            return {v.timer: gr.Timer(active=False)} | ({v.status: note} if reading_id is not None and note else {})
        with session_scope(self.settings.resolved_database_url) as s:
            h = health.health(s)
        status = describe_progress(r.status, r.progress, r.error, h)
        return {
            v.status: f"{note}  \n{status}" if note else status,
            v.bar: progress_bar(r.progress, r.status),
            v.memory: self._memory(r),
            v.answer: r.answer or "",
            v.timer: gr.Timer(active=r.status in ACTIVE),
        }

    def _memory(self, r: ReadingView):
        """The memory box: the last memory the agent wrote, labelled with where its chunk came from."""
        last = r.checkpoints[-1] if r.checkpoints else None
        if last is None:
            return gr.update(value="", label="Agent memory")
        unit, labels = documents.page_labels(self.settings, r.document_id, user=self.me())
        where = pages_label(last.first_page, last.last_page, unit, labels)
        return gr.update(value=last.memory, label=f"Agent memory after chunk {last.step} ({where})")

    def on_cancel(self, reading_id: int | None) -> dict:
        return self._act(readings.cancel, reading_id)

    def on_retry(self, reading_id: int | None) -> dict:
        return self._act(readings.retry, reading_id)

    def _act(self, action: Callable[..., object], reading_id: int | None) -> dict:
        """Cancel or retry the open reading, then show it as it is now, under why it could not be done:
        that notice stays above the live status for NOTICE_S (a tick in flight would otherwise wipe it)."""
        v = self.tab.reading
        if reading_id is None:
            return {v.timer: gr.Timer(active=False), v.notice: None}
        try:
            action(self.settings, reading_id, user=self.me())
        except (NotFound, ValueError) as exc:
            notice = (reading_id, f"**Cannot {action.__name__}:** {text_md(exc)}", time.monotonic() + NOTICE_S)
            return self.on_tick(reading_id, notice) | {v.notice: notice}
        return self.on_tick(reading_id) | {v.notice: None}

    def on_resume(
        self, reading_id: int | None, k: float | None, memory: str, document_id: int | None, saved: dict | None
    ):
        """Make a branch from the edited memory at step k and open it: it reads on from chunk k+1."""
        t = self.tab
        edit_msg = t.details.panels.timeline.edit_msg
        if reading_id is None or not k:
            return {edit_msg: "**Cannot resume:** open a reading and choose a step first."}
        try:
            who = self.me()
            by = f"ui:{who.username}" if who else "ui"
            branch = readings.edit(self.settings, reading_id, int(k), memory, edited_by=by, user=who)
        except (NotFound, ValueError) as exc:  # ReadingError is a ValueError
            return {edit_msg: f"**Cannot resume:** {text_md(exc)}"}
        note = f"Branch #{branch.id} of #{reading_id} made at step {int(k)}: " + (
            "it writes a new answer."
            if branch.cursor >= (branch.total_chunks or 0)
            else f"it reads on from chunk {int(k) + 1}."
        )
        opened = {t.saved: {**(saved or {}), "reading": branch.id}, t.readings: self.look.reading_rows(document_id)}
        return {edit_msg: note} | self.open_reading(branch.id) | opened | self.leave_pass()
