"""The Read tab's layout: the document column beside the question, the open reading and its details, the document's
readings and its contract review under them. `ReadTab` names every part, and the lists of what an event may
update, so handlers (read_events.py) and their wiring (read_tab.py) name components instead of counting them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import gradio as gr

from app.services.users import UserView
from app.settings import Settings
from app.ui.document_panel import DocumentPanel, build_document_panel
from app.ui.open_reading import OpenReading, build_open_reading
from app.ui.pass_view import PassView, build_pass_view
from app.ui.question_panel import QuestionPanel, build_question_panel
from app.ui.read_lookups import Lookups
from app.ui.read_views import READING_COLUMNS
from app.ui.reading_details import ReadingDetails, build_reading_details
from app.ui.review_panel import ReviewPanel, build_review_panel
from app.ui.tables import table


@dataclass
class ReadTab:
    doc: DocumentPanel
    ask: QuestionPanel
    reading: OpenReading
    pass_view: PassView
    pass_ids: gr.State  #: the readings of the last pass asked here (several questions at once)
    details: ReadingDetails  #: the open reading's timeline, provenance, branches, comparison and feedback
    reading_column: gr.Column  #: the question, the open reading and its details (hidden for a failed upload)
    reading_parts: gr.Column  #: the pass and the open reading's details (hidden while no document is chosen)
    readings: gr.Dataframe  #: the document's readings
    review_panel: ReviewPanel
    #: the document and reading open in this browser (page-wide, outside the tabs): read_tab's connect sets it
    saved: gr.BrowserState | None = field(default=None)

    @property
    def need_document(self) -> list:
        """What shows only with a readable document chosen (read_events.on_parts); hidden when the page opens."""
        return [self.reading.body, self.reading_parts, self.readings, self.review_panel.box]

    @property
    def shown(self) -> list:
        """What showing a document updates (read_events.show_document)."""
        return [self.doc.info, self.readings, self.saved, *self.reading.outputs]

    @property
    def cleared(self) -> list:
        """What switching documents updates (read_events.on_switch)."""
        return [
            *self.shown,
            self.ask.question,
            self.ask.more,
            self.pass_ids,
            *self.pass_view.outputs,
            self.details.panels.timeline.edit_msg,
        ]

    @property
    def opened(self) -> list:
        """What opening a reading from a table updates (read_events.on_open): the pass's cards go unless it is
        one of the pass's readings."""
        return [*self.reading.outputs, self.ask.question, self.saved, self.pass_ids, *self.pass_view.outputs]


def build_read_layout(settings: Settings, me: Callable[[], UserView | None]) -> ReadTab:
    """The tab's components, in the current layout context."""
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            doc = build_document_panel(settings, me, Lookups(settings, me).document_choices())
        with gr.Column(scale=2) as reading_column:
            ask = build_question_panel()
            reading = build_open_reading()
            with gr.Column(visible=False) as reading_parts:
                pass_view = build_pass_view(settings, me)
                pass_ids = gr.State([])
                details = build_reading_details(settings, me)
    readings = table(
        READING_COLUMNS,
        "readings",
        max_height=360,
        label="Readings of this document: choose one to open it",
        column_widths=["6%", "30%", "12%", "30%", "10%", "12%"],
        visible=False,
    )
    review_panel = build_review_panel(settings, me)
    return ReadTab(
        doc, ask, reading, pass_view, pass_ids, details, reading_column, reading_parts, readings, review_panel
    )
