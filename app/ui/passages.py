"""A passage of a reading's document shown in its place, highlighted, and for a PDF beside the page it is
printed on (the passage marked there): what a provenance sentence and a contract review row open."""

from __future__ import annotations

import gradio as gr

from app.services import documents, provenance
from app.services.errors import NotFound
from app.services.users import UserView
from app.settings import Settings
from app.ui.read_views import page_image_html
from app.ui.text import text_md


def build_passage_view(category: str, elem_prefix: str) -> tuple[gr.HighlightedText, gr.HTML]:
    """The passage, highlighted in its place, and beside it the PDF page it is printed on, both hidden until one is
    opened (open_passage); `category` names the highlight, `elem_prefix` the ids (`-passage`, `-page`)."""
    with gr.Row():
        passage = gr.HighlightedText(
            label="The passage, in its place in the document",
            combine_adjacent=False,
            show_legend=False,
            show_inline_category=False,
            color_map={category: "yellow"},
            visible=False,
            elem_id=f"{elem_prefix}-passage",
        )
        page = gr.HTML(visible=False, elem_id=f"{elem_prefix}-page")
    return passage, page


def chosen_row(evt: gr.SelectData) -> int:
    """The row of a table's select event (its index is [row, column])."""
    return evt.index[0] if isinstance(evt.index, list | tuple) else evt.index


def no_passage(note: str = "") -> tuple:
    """The passage view emptied and hidden, `note` (Markdown) in its place: passage, note, page image."""
    return gr.update(value=[], visible=False), note, gr.update(value="", visible=False)


def _labels(settings: Settings, user: UserView | None, document_id: int) -> list[str]:
    """The document's page labels (a PDF's printed page numbers: base.printed_pages); none if it is gone."""
    try:
        return documents.page_labels(settings, document_id, user=user)[1]
    except NotFound:
        return []


def open_passage(
    settings: Settings,
    user: UserView | None,
    reading_id: int,
    start: int,
    end: int,
    label: str,
    note: str,
    pdf_page: tuple[int, int] | None = None,
) -> tuple:
    """The passage text[start:end] of the reading's document highlighted as `label` in its place, `note`
    under it, and with `pdf_page` (document id, page) that page beside it, the passage marked on it
    (GET /api/documents/{id}/pages/{n}.png). Emptied if the reading is gone or not the user's."""
    try:
        before, passage, after = provenance.passage_in_context(settings, reading_id, int(start), int(end), user=user)
    except NotFound:
        return no_passage()
    image = gr.update(value="", visible=False)
    if pdf_page:
        document_id, page = (int(x) for x in pdf_page)
        labels = _labels(settings, user, document_id)
        printed, place = labels[page - 1] if 0 < page <= len(labels) else str(page), f"page {page} of the PDF"
        note += (
            f", printed on {place} (beside it, highlighted)"
            if printed == str(page)
            else f", printed on page {text_md(printed)} ({place}, beside it, highlighted)"
        )
        image = gr.update(value=page_image_html(document_id, page, int(start), int(end)), visible=True)
    return gr.update(value=[(before, None), (passage, label), (after, None)], visible=True), note + ".", image
