"""The contract review panel of the Read tab: a Review button for the open document (all 41 CUAD categories in one
pass, app/services/review.py), its checklist table (filterable), the passage of a chosen row highlighted in place
beside its PDF page, and the table as CSV and Markdown downloads."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from app.services import review
from app.services.errors import NotFound
from app.services.users import UserView
from app.settings import Settings
from app.ui.passages import chosen_row, no_passage, open_passage
from app.ui.text import text_md

REVIEW_COLUMNS = ["Category", "Answer", "Pages", "Passage (choose a row to open it on its page)"]
#: where the downloads are written (Gradio serves files from the system's temporary folder)
EXPORT_DIR = Path(tempfile.gettempdir()) / "longread-reviews"


@dataclass(frozen=True)
class ReviewPanel:
    connect: Callable[[gr.components.Component, gr.Timer], None]
    box: gr.Accordion  #: the whole panel (hidden for a failed upload: read_tab.py)
    #: the handlers connect wires, for tests
    render: Callable
    on_tick: Callable
    on_row: Callable


def table_rows(view: review.ReviewView) -> list[list[str]]:
    """The checklist as the table shows it: category, answer (or the reading's status), pages, passage."""
    out = []
    for r in view.rows:
        passage = " ".join((r.passage or "").split())
        out.append([r.category, review.answer_text(r), review.pages_text(r, view.page_unit) or "–",
                    f"open ›  {passage[:160]}" if r.found else ""])  # fmt: skip
    return out


def describe_review(view: review.ReviewView) -> str:
    answered = sum(r.status == "done" for r in view.rows)
    found = sum(r.found for r in view.rows)
    if not view.done:
        return (f"**Review #{view.id}:** reading all {len(view.rows)} questions in one pass… "
                f"{answered} of {len(view.rows)} answered.")  # fmt: skip
    failed = [r.category for r in view.rows if r.status != "done"]
    return (f"**Review #{view.id}** of {text_md(view.document_title)}: {answered} of {len(view.rows)} answered, "
            f"{found} with the passage their evidence came from."
            + (f" Not answered: {text_md(', '.join(failed))}." if failed else ""))  # fmt: skip


def _exports(view: review.ReviewView, which: str) -> tuple[str, str]:
    """The (filtered) table written as CSV and Markdown files for the downloads."""
    EXPORT_DIR.mkdir(parents=True, exist_ok=True)
    stem = f"review-{view.id}" + ("" if which == "All" else "-" + which.lower().replace(" ", "-"))
    csv_path, md_path = EXPORT_DIR / f"{stem}.csv", EXPORT_DIR / f"{stem}.md"
    csv_path.write_text(review.to_csv(view), encoding="utf-8")
    md_path.write_text(review.to_markdown(view), encoding="utf-8")
    return str(csv_path), str(md_path)


def build_review_panel(settings: Settings, me: Callable[[], UserView | None]) -> ReviewPanel:
    """The panel's components, in the current layout context; `connect(document, list_timer)` wires them to
    the Read tab's document menu and its 3-second timer."""

    def render(review_id: int | None, which: str | None):
        """Status line, table, the rows' passages (kept for a row's choice), the downloads, the passage view,
        and what they show (the filter and the review's state: on_tick redraws them only when it changes)."""
        hidden = gr.update(value=None, visible=False)
        if review_id is None:
            return "", [], [], hidden, hidden, *no_passage(), None
        try:  # its state first: a reading that finishes after it is drawn at the next tick
            seen = [review_id, which or "All", review.review_state(settings, review_id, user=me())]
            view = review.show_review(settings, review_id, user=me())
        except NotFound:
            return "", [], [], hidden, hidden, *no_passage(), None
        shown = review.filtered(view, which or "All")
        kept = [[r.reading_id, r.passage_start, r.passage_end, r.step, view.document_id,
                 r.first_page if view.page_unit == "page" else None] for r in shown.rows]  # fmt: skip
        csv_path, md_path = _exports(shown, which or "All")
        return (describe_review(view), table_rows(shown), kept, gr.update(value=csv_path, visible=True),
                gr.update(value=md_path, visible=True), *no_passage(), seen)  # fmt: skip

    def on_document(document_id: int | None, which: str | None):
        """The document's latest review, if it has one."""
        try:
            ids = review.document_reviews(settings, document_id, user=me()) if document_id is not None else []
        except NotFound:
            ids = []
        return ids[0] if ids else None, *render(ids[0] if ids else None, which)

    def on_review(document_id: int | None, which: str | None):
        if document_id is None:
            return None, "**Cannot review:** upload or choose a document first.", *render(None, which)[1:]
        try:
            started = review.review(settings, document_id, user=me())
        except (NotFound, ValueError) as exc:  # ReadingError is a ValueError
            return None, f"**Cannot review:** {text_md(exc)}", *render(None, which)[1:]
        return started.id, *render(started.id, which)

    def on_tick(review_id: int | None, which: str | None, seen: list | None):
        """Follow a review under way: the table is redrawn when a reading's state changed, the opened
        row's passage left as it is; nothing changes (no flicker, no files rewritten) otherwise."""
        keep = (gr.update(),) * 9
        try:
            state = review.review_state(settings, review_id, user=me()) if review_id is not None else None
        except NotFound:
            return keep
        if state is None or seen == [review_id, which or "All", state]:
            return keep
        status, table, rows, csv_file, md_file, *_, now = render(review_id, which)
        return status, table, rows, csv_file, md_file, *keep[:3], now

    def on_row(evt: gr.SelectData, kept: list | None):
        """The chosen row's passage, highlighted in its place in the document, beside its PDF page."""
        row = chosen_row(evt)
        if not kept or row >= len(kept) or kept[row][1] is None:
            return no_passage("No evidence was found for that row: its answer is in no passage the memory kept.")
        reading_id, start, end, k, document_id, page = kept[row]
        return open_passage(settings, me(), reading_id, start, end, "evidence",
                            f"Its evidence entered the memory at step {k}: the passage of that step's chunk it "
                            f"came from", (document_id, page) if page else None)  # fmt: skip

    review_id = gr.State(None)
    kept = gr.State([])
    seen = gr.State(None)
    with gr.Accordion("Contract review: every CUAD clause in one pass", open=True, elem_id="review-box") as box:
        with gr.Row():
            start = gr.Button("Review this contract (41 questions, one pass)", size="sm", elem_id="review-start")
            which = gr.Dropdown(
                list(review.FILTERS), value="All", label="Show", elem_id="review-filter", scale=0, min_width=160
            )
            csv_file = gr.DownloadButton("Download CSV", visible=False, size="sm", elem_id="review-csv")
            md_file = gr.DownloadButton("Download Markdown", visible=False, size="sm", elem_id="review-md")
        status = gr.Markdown(elem_id="review-status", latex_delimiters=[])
        table = gr.Dataframe(
            value=[],
            headers=REVIEW_COLUMNS,
            type="array",
            interactive=False,
            wrap=True,
            max_height=420,
            elem_id="review-table",
            column_widths=["20%", "25%", "10%", "45%"],
        )
        note = gr.Markdown(elem_id="review-note", latex_delimiters=[])
        with gr.Row():
            passage = gr.HighlightedText(
                label="The passage, in its place in the document",
                combine_adjacent=False,
                show_legend=False,
                show_inline_category=False,
                color_map={"evidence": "yellow"},
                visible=False,  # until a row is opened (open_passage)
                elem_id="review-passage",
            )
            page = gr.HTML(visible=False, elem_id="review-page")

    def connect(document: gr.components.Component, list_timer: gr.Timer) -> None:
        shown = [status, table, kept, csv_file, md_file, passage, note, page, seen]
        document.change(on_document, [document, which], [review_id, *shown], show_progress="hidden")
        start.click(on_review, [document, which], [review_id, *shown], show_progress="hidden")
        which.input(render, [review_id, which], shown, show_progress="hidden")
        list_timer.tick(on_tick, [review_id, which, seen], shown, show_progress="hidden")
        table.select(on_row, kept, [passage, note, page], show_progress="hidden")

    return ReviewPanel(connect, box, render, on_tick, on_row)
