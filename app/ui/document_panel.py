"""The Read tab's document column: the upload box, the document menu, the chosen document's info line and its
Delete / Dismiss buttons (document_actions.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from app.services.users import UserView
from app.settings import Settings
from app.ui.document_actions import DocumentActions
from app.ui.read_views import UPLOAD_TYPES, first_step_text


@dataclass(frozen=True)
class DocumentPanel:
    upload: gr.File
    document: gr.Dropdown  #: the menu; its `input` is a person's choice, its `change` also the code's
    shown: gr.State  #: the document shown (read_events.on_parts), for the timers
    info: gr.Markdown
    actions: DocumentActions
    first_step: gr.Markdown  #: what to do first, while no document is chosen (read_events.on_parts)


def build_document_panel(
    settings: Settings, me: Callable[[], UserView | None], choices: list[tuple[str, int]]
) -> DocumentPanel:
    """The column's components, in the current layout context; `choices`: the menu's documents. The page opens with
    none chosen: the first step shows (page_parts(None))."""
    first_step = gr.Markdown(first_step_text(settings.max_upload_mb), elem_id="first-step", latex_delimiters=[])
    upload = gr.File(
        label=f"Upload (PDF, DOCX, EPUB, HTML, MD, TXT; at most {settings.max_upload_mb} MiB)",
        file_types=UPLOAD_TYPES,
        elem_id="upload",
    )
    document = gr.Dropdown(label="Document", choices=choices, value=None, elem_id="document")
    shown = gr.State(None)
    info = gr.Markdown(elem_id="doc-info", latex_delimiters=[])
    return DocumentPanel(upload, document, shown, info, DocumentActions(settings, me), first_step)
