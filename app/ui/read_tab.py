"""The Read tab: upload or choose a document (or delete it), ask, watch the agent read (chunk k of K, its current
memory), get the answer (several questions asked at once: side by side); then its timeline (edit a memory and
resume from it), provenance, branches, comparison and feedback."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import gradio as gr
from gradio.context import LocalContext

from app.db import session_scope
from app.services import documents, health, readings
from app.services.documents import UploadError
from app.services.errors import NotFound
from app.services.reading_config import default_reading_config
from app.services.readings import MAX_CHUNK_TOKENS, MAX_MEMORY_TOKENS, MIN_CHUNK_TOKENS, MIN_MEMORY_TOKENS
from app.services.users import UserView
from app.services.views import QUEUED
from app.settings import Settings
from app.ui.details_panels import ReadingDetailsPanels
from app.ui.document_actions import DocumentActions
from app.ui.pass_view import PASS_OUTPUTS, PassView, build_pass_view
from app.ui.read_views import (
    READING_COLUMNS,
    UPLOAD_TYPES,
    asked_questions,
    describe_document,
    describe_pass,
    describe_progress,
    page_parts,
    pages_label,
    progress_bar,
    reading_row,
)
from app.ui.review_panel import build_review_panel
from app.ui.text import text_md

ACTIVE = {"queued", "running"}
NOTICE_S = 10.0  # seconds a refused cancel/retry's message stays above the live status


def closed() -> tuple:
    """An empty reading view: reading id, status, progress bar, memory, answer, timer. Made afresh for every
    event: Gradio pops an update's value when it applies it, so a shared update would clear the memory only once.
    (The timer is made here, outside the page's layout: one made while the tab is built would be rendered.)"""
    return None, "", "", gr.update(value="", label="Agent memory"), "", gr.Timer(active=False)


VIEW_OUTPUTS = 6  # the reading view's parts, as closed() lists them
#: on_switch's: the info line, the readings, saved, the reading view, question, more questions, the pass
SWITCH_OUTPUTS = 3 + VIEW_OUTPUTS + 3 + PASS_OUTPUTS


def _tokens(value: str | None, what: str) -> int | None:
    """A size typed in a box: None (the reading's default) when left empty. A text box, as Gradio's Number box
    cannot be empty (it shows and sends 0)."""
    text = (value or "").strip().replace(",", "")
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"{what} must be a whole number of tokens, or empty for the default (got {value!r})")
    return int(text)


def build_read_tab(settings: Settings, me: Callable[[], UserView | None]):  # noqa: ANN201 - its connect()
    """The tab's components, in the current layout context. Returns `connect(ui, saved, timer, list_timer)`,
    which wires their events once the page-wide state and timers exist (they live outside the tabs, so
    they keep running whichever tab is open)."""
    url = settings.resolved_database_url

    def doc_choices() -> list[tuple[str, int]]:
        # Failed documents are listed too: choosing one shows why it could not be read.
        if LocalContext.request.get(None) is None:
            return []  # building the page: nobody's documents (on_restore fills the menu for the user)
        return [
            (
                f"#{d.id} {d.title}"
                + ("" if d.status == "ready" else " (could not be read)" if d.status == "failed" else f" ({d.status})"),
                d.id,
            )
            for d in documents.all_documents(settings, user=me())
        ]

    def on_upload(path: str | None, reading_id: int | None, saved: dict | None):
        """Store and parse the file, then show its document (the earlier one for the same bytes).
        The upload box is emptied (and Gradio's copy deleted) after."""
        unchanged = (gr.update(),) * (3 + VIEW_OUTPUTS)  # info line, table, saved, reading view
        if not path:
            return gr.update(), gr.update(), *unchanged
        file = Path(path)
        try:
            size = file.stat().st_size
            if size > settings.max_upload_mb * 1024 * 1024:
                return (
                    None,
                    gr.update(),
                    (
                        f"**Upload refused:** {text_md(file.name)} is {size / 2**20:.1f} "
                        f"MiB, over the {settings.max_upload_mb} MiB limit."
                    ),
                    *unchanged[1:],
                )
            doc, existing = documents.add_document(settings, file.name, file.read_bytes(), user=me())
            document_id = doc.id
        except UploadError as exc:
            return None, gr.update(), f"**Upload refused:** {text_md(exc)}", *unchanged[1:]
        finally:
            file.unlink(missing_ok=True)
        info, *rest = show_document(document_id, reading_id, saved)
        note = f"Already uploaded as #{document_id}; its readings are below.  \n" if existing else ""
        return None, gr.update(choices=doc_choices(), value=document_id), note + info, *rest

    def reading_rows(document_id: int | None) -> list[list[object]]:
        if document_id is None:
            return []
        try:
            return [reading_row(r) for r in readings.document_readings(settings, document_id, user=me())]
        except NotFound:
            return []

    def show_document(document_id: int | None, reading_id: int | None, saved: dict | None):
        """A document chosen (or uploaded): its info line and readings; a reading of another
        document is closed."""
        saved = {**(saved or {}), "document": document_id}
        if document_id is None:
            return "", [], saved, *closed()
        try:
            info = describe_document(documents.show_document(settings, document_id, with_page_map=False, user=me()))
        except NotFound:
            info = ""
        keep = reading_id is not None and _document_of(reading_id) == document_id
        if keep:
            return info, reading_rows(document_id), saved, *(gr.update(),) * VIEW_OUTPUTS
        return info, reading_rows(document_id), {**saved, "reading": None}, *closed()

    def on_switch(document_id: int | None, reading_id: int | None, saved: dict | None):
        """Another document chosen: its info and readings; the previous document's questions, pass, memory and
        answer go (show_document closes a reading of another document)."""
        return *show_document(document_id, reading_id, saved), "", "", [], *PassView.hide()

    def on_parts(document_id: int | None):
        """Only what applies to the chosen document (page_parts): Delete or Dismiss, no confirmation open, and
        the question column, the readings and the review unless it is a failed upload; its id for the timers."""
        try:
            doc = (
                documents.show_document(settings, document_id, with_page_map=False, user=me())
                if document_id is not None
                else None
            )
        except NotFound:
            doc = None
        p = page_parts(doc.status if doc else None)
        reading = [gr.update(visible=p.reading) for _ in range(3)]  # one each, as in closed()
        shown = doc.id if doc else None
        return gr.update(visible=p.delete), gr.update(visible=p.dismiss), gr.update(visible=False), *reading, shown

    def after_delete(document_id: int | None, reading_id: int | None, saved: dict | None):
        """Once a deletion was tried: the menu without the document, and the tab cleared as for a switch (nothing
        changes if it is still there: the deletion was refused). One query: the menu's documents."""
        choices = doc_choices()
        if document_id in {value for _, value in choices}:
            return (gr.update(),) * (1 + SWITCH_OUTPUTS)
        return gr.update(choices=choices, value=None), *on_switch(None, None, saved)

    def on_refresh(document_id: int | None, shown: list[list[object]] | None):
        """Readings made elsewhere (the API, another tab) and their progress; no update when
        nothing changed, so the table does not flicker."""
        rows = reading_rows(document_id)
        same = [[str(c) for c in row] for row in rows] == [[str(c) for c in row] for row in (shown or [])]
        return gr.update() if same else rows

    def _document_of(reading_id: int) -> int | None:
        try:
            return readings.show(settings, reading_id, user=me()).document_id
        except NotFound:
            return None

    def open_reading(reading_id: int | None):
        """The reading's question and its live view (status, bar, memory, answer, timer)."""
        try:
            r = readings.show(settings, reading_id, user=me()) if reading_id is not None else None
        except NotFound:
            r = None
        if r is None:
            return None, gr.update(), *closed()[1:]
        return reading_id, r.question, *on_tick(reading_id)

    def on_open(evt: gr.SelectData, saved: dict | None):
        reading_id = int(evt.row_value[0])
        return *open_reading(reading_id), {**(saved or {}), "reading": reading_id}

    def on_restore(saved: dict | None):
        """After a reload: the document and the reading that were open, live if still running."""
        saved = saved or {}
        document_id = saved.get("document")
        choices = doc_choices()
        if document_id not in {value for _, value in choices}:  # nothing to restore: leave the page be
            return gr.update(choices=choices), *(gr.update(),) * (4 + (VIEW_OUTPUTS - 1))
        info, rows, *_ = show_document(document_id, None, saved)
        return (gr.update(choices=choices, value=document_id), info, rows, *open_reading(saved.get("reading")))

    def on_questions(document_id: int | None, question: str, more: str) -> str:
        """Beside the questions: how long the ones typed would take read together (the document's estimate)."""
        try:
            doc = documents.show_document(settings, document_id, with_page_map=False, user=me())
        except NotFound:  # none chosen, or gone
            return ""
        return describe_pass(doc.estimate, sum(1 for q in asked_questions(question, more) if q.strip()))

    def on_defaults():  # noqa: ANN202 - two gr.update
        """The sizes a reading asking for none gets now, as the boxes' placeholders."""
        config = default_reading_config(settings)
        return (
            gr.update(placeholder=f"{config.chunk_tokens} (default)"),
            gr.update(placeholder=f"{config.memory_tokens} (default)"),
        )

    def on_ask(
        document_id: int | None, question: str, more: str, chunk_tokens: str, memory_tokens: str, saved: dict | None
    ):
        asked, reading_id, *view = _ask(document_id, question, more, chunk_tokens, memory_tokens)
        return (
            reading_id,
            *view,
            reading_rows(document_id),
            {**(saved or {}), "reading": reading_id},
            asked,
            *pass_view.show(asked),
        )

    def _ask(document_id: int | None, question: str, more: str, chunk_tokens: str, memory_tokens: str):
        """Ask the question, and any more (one a line): read together in one pass; the first one opens."""
        if document_id is None:
            return [], None, "Upload or choose a document first.", "", "", "", gr.Timer(active=False)
        questions = asked_questions(question, more)
        try:
            asked = readings.ask(
                settings,
                document_id,
                questions,
                _tokens(chunk_tokens, "chunk tokens"),
                _tokens(memory_tokens, "memory tokens"),
                user=me(),
            )
        except (NotFound, ValueError) as exc:  # ReadingError is a ValueError
            return [], None, f"**Cannot ask:** {text_md(exc)}", "", "", "", gr.Timer(active=False)
        also = (f" ({len(asked) - 1} more question{'s' if len(asked) > 2 else ''} read in the same pass: "
                "all of them side by side below)") if len(asked) > 1 else ""  # fmt: skip
        return (
            [r.id for r in asked],
            asked[0].id,
            f"Queued: waiting for a worker…{also}",
            progress_bar(QUEUED, "queued"),
            "",
            "",
            gr.Timer(active=True),
        )

    def on_cancel(reading_id: int | None):
        return _act(readings.cancel, reading_id)

    def on_retry(reading_id: int | None):
        return _act(readings.retry, reading_id)

    def _act(action: Callable[..., object], reading_id: int | None):
        """Cancel or retry the open reading, then show it as it is now, under why it could not be done:
        that notice stays above the live status for NOTICE_S (a tick in flight would otherwise wipe it)."""
        if reading_id is None:
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.Timer(active=False), None
        try:
            action(settings, reading_id, user=me())
        except (NotFound, ValueError) as exc:
            notice = (reading_id, f"**Cannot {action.__name__}:** {text_md(exc)}", time.monotonic() + NOTICE_S)
            return *on_tick(reading_id, notice), notice
        return *on_tick(reading_id), None

    def on_tick(reading_id: int | None, notice: tuple[int, str, float] | None = None):
        """The open reading's status, bar, memory, answer and timer; an unexpired `notice` (reading id,
        message, until) of this reading heads the status."""
        note = notice[1] if notice and notice[0] == reading_id and time.monotonic() < notice[2] else None
        if reading_id is None:
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.Timer(active=False)
        try:
            r = readings.show(settings, reading_id, user=me())
        except NotFound:
            return note or gr.update(), gr.update(), gr.update(), gr.update(), gr.Timer(active=False)
        with session_scope(url) as s:
            h = health.health(s)
        last = r.checkpoints[-1] if r.checkpoints else None
        if last:
            doc = documents.show_document(settings, r.document_id, user=me())
            where = pages_label(last.first_page, last.last_page, doc.page_unit, [p.label for p in doc.page_map or []])
        memory_label = f"Agent memory after chunk {last.step} ({where})" if last else "Agent memory"
        p, status, error, answer = r.progress, r.status, r.error, r.answer
        memory = last.memory if last else ""
        return (
            f"{note}  \n{describe_progress(status, p, error, h)}" if note else describe_progress(status, p, error, h),
            progress_bar(p, status),
            gr.update(value=memory, label=memory_label),
            answer or "",
            gr.Timer(active=status in ACTIVE),
        )

    def on_resume(
        reading_id: int | None, k: float | None, memory_text: str, document_id: int | None, saved: dict | None
    ):
        """Make a branch from the edited memory at step k and open it: it reads on from chunk k+1."""
        keep = (gr.update(),) * 9
        if reading_id is None or not k:
            return "**Cannot resume:** open a reading and choose a step first.", *keep
        try:
            who = me()
            branch = readings.edit(
                settings, reading_id, int(k), memory_text, edited_by=f"ui:{who.username}" if who else "ui", user=who
            )
        except (NotFound, ValueError) as exc:  # ReadingError is a ValueError
            return f"**Cannot resume:** {text_md(exc)}", *keep
        note = (f"Branch #{branch.id} of #{reading_id} made at step {int(k)}: "
                + ("it writes a new answer." if branch.cursor >= (branch.total_chunks or 0) else
                   f"it reads on from chunk {int(k) + 1}."))  # fmt: skip
        return (note, *open_reading(branch.id), {**(saved or {}), "reading": branch.id}, reading_rows(document_id))

    reading_id = gr.State(None)
    notice = gr.State(None)  # why the last cancel/retry was refused: see _act
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            upload = gr.File(
                label=f"Upload (PDF, DOCX, EPUB, HTML, MD, TXT; at most {settings.max_upload_mb} MiB)",
                file_types=UPLOAD_TYPES,
                elem_id="upload",
            )
            document = gr.Dropdown(label="Document", choices=doc_choices(), value=None, elem_id="document")
            shown_doc = gr.State(None)  # the document shown (on_parts), for the timers
            doc_info = gr.Markdown(elem_id="doc-info", latex_delimiters=[])
            actions = DocumentActions(settings, me)
        with gr.Column(scale=2) as reading_column:
            question = gr.Textbox(label="Question", placeholder="Which law governs this agreement?", elem_id="question")
            with gr.Accordion("More questions at once", open=False, elem_id="more-box"):
                more_questions = gr.Textbox(
                    label="More questions, one a line: read together with the one above, in one pass",
                    lines=3,
                    elem_id="more-questions",
                )
            with gr.Accordion("Reading settings", open=False) as reading_settings:
                # Empty unless the user types a size: the reading then gets the active version's, else the
                # settings' (the placeholder says which). Limits are the service's ("Cannot ask"), not Gradio's.
                chunk_tokens = gr.Textbox(
                    max_lines=1,
                    elem_id="chunk-tokens",
                    label=f"Chunk tokens ({MIN_CHUNK_TOKENS:,}–{MAX_CHUNK_TOKENS:,})",
                )
                memory_tokens = gr.Textbox(
                    max_lines=1,
                    elem_id="memory-tokens",
                    label=f"Memory tokens ({MIN_MEMORY_TOKENS:,}–{MAX_MEMORY_TOKENS:,})",
                )
            pass_estimate = gr.Markdown(elem_id="pass-estimate", latex_delimiters=[])
            ask = gr.Button("Ask", variant="primary", elem_id="ask")
            status = gr.Markdown(elem_id="status", latex_delimiters=[])
            bar = gr.HTML(elem_id="progress")
            with gr.Row():
                cancel = gr.Button("Cancel reading", size="sm", elem_id="cancel")
                retry = gr.Button("Resume reading", size="sm", elem_id="retry")
            memory = gr.Textbox(label="Agent memory", lines=6, interactive=False, elem_id="memory")
            answer = gr.Textbox(label="Answer", interactive=False, elem_id="answer")
            pass_view = build_pass_view(settings, me)
            pass_ids = gr.State([])  # the readings of the last pass asked here (several questions at once)
            panels = ReadingDetailsPanels(settings, me)
    readings_table = gr.Dataframe(
        value=[],
        headers=READING_COLUMNS,
        type="array",
        interactive=False,
        wrap=True,
        max_height=360,
        elem_id="readings",
        label="Readings of this document: choose one to open it",
        column_widths=["6%", "30%", "12%", "30%", "10%", "12%"],
    )
    review_panel = build_review_panel(settings, me)

    def connect(ui: gr.Blocks, saved: gr.BrowserState, timer: gr.Timer, list_timer: gr.Timer) -> None:
        # show_progress="hidden": no Gradio spinner or timer ("0.2s") over the info and status lines.
        # `input`, not `change`: a document set by the code (upload, reload) is shown by that code.
        view = [reading_id, status, bar, memory, answer, timer]
        shown = [doc_info, readings_table, saved, *view]
        upload.upload(on_upload, [upload, reading_id, saved], [upload, document, *shown], show_progress="hidden")
        cleared = [*shown, question, more_questions, pass_ids, *pass_view.outputs]
        document.input(on_switch, [document, reading_id, saved], cleared, show_progress="hidden")
        parts = [actions.delete, actions.dismiss, actions.confirm_box, reading_column, readings_table, review_panel.box]
        document.change(on_parts, document, [*parts, shown_doc], show_progress="hidden")
        actions.connect(document, after_delete, [document, reading_id, saved], [document, *cleared])
        ask.click(
            on_ask,
            [document, question, more_questions, chunk_tokens, memory_tokens, saved],
            [*view, readings_table, saved, pass_ids, *pass_view.outputs],
            show_progress="hidden",
        )
        # The pass's own timer: it runs while a reading of the pass is queued or running (a retry starts it again).
        pass_view.timer.tick(pass_view.follow, [pass_ids, pass_view.cards], pass_view.outputs, show_progress="hidden")
        retry.click(lambda: gr.Timer(active=True), None, pass_view.timer, show_progress="hidden")
        readings_table.select(on_open, saved, [reading_id, question, *view[1:], saved], show_progress="hidden")
        # Timers read the shown document from a State: a tick sent with a just-deleted document's id in the menu
        # was refused by the menu ("Value: 1 is not in the list of choices"), an error box after every deletion.
        list_timer.tick(on_refresh, [shown_doc, readings_table], readings_table, show_progress="hidden")
        timer.tick(on_tick, [reading_id, notice], [status, bar, memory, answer, timer], show_progress="hidden")
        cancel.click(on_cancel, reading_id, [status, bar, memory, answer, timer, notice], show_progress="hidden")
        panels.connect(reading_id, status, timer, list_timer)
        # While a reading runs, its row follows it every second, not every three (as its branches do: panels).
        timer.tick(on_refresh, [shown_doc, readings_table], readings_table, show_progress="hidden")
        panels.branches_table.select(on_open, saved, [reading_id, question, *view[1:], saved], show_progress="hidden")
        panels.resume.click(
            on_resume,
            [reading_id, panels.step_slider, panels.step_memory, document, saved],
            [panels.edit_msg, reading_id, question, *view[1:], saved, readings_table],
            show_progress="hidden",
        )
        retry.click(on_retry, reading_id, [status, bar, memory, answer, timer, notice], show_progress="hidden")
        ui.load(on_defaults, None, [chunk_tokens, memory_tokens], show_progress="hidden")
        for box in (document, question, more_questions):  # `change`: also when the code sets or clears them
            box.change(on_questions, [document, question, more_questions], pass_estimate, show_progress="hidden",
                       trigger_mode="always_last")  # fmt: skip
        reading_settings.expand(on_defaults, None, [chunk_tokens, memory_tokens], show_progress="hidden")
        review_panel.connect(document, list_timer)
        ui.load(
            on_restore,
            saved,
            [document, doc_info, readings_table, reading_id, question, *view[1:]],
            show_progress="hidden",
        )

    return connect
