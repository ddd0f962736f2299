"""The contract review panel of the Read tab: a Review button for the open document (all 41 CUAD categories in one
pass, app/services/review.py), its checklist table (filterable), the passage of a chosen row highlighted in place
beside its PDF page, and the table as CSV and Markdown downloads."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr

from app.services import review
from app.services.errors import NotFound
from app.services.users import UserView
from app.settings import Settings
from app.ui.passages import build_passage_view, chosen_row, no_passage, open_passage
from app.ui.read_views import review_of_row
from app.ui.tables import table
from app.ui.text import fmt_seconds, text_md
from app.ui.ticks import Ticks

REVIEW_COLUMNS = ["Category", "Answer", "Pages", "Passage (choose a row to open it on its page)"]
#: where the downloads are written (Gradio serves files from the system's temporary folder)
EXPORT_DIR = Path(tempfile.gettempdir()) / "longread-reviews"


class Shown(NamedTuple):
    """What a redraw of the review fills, by name: the panel's components, or the values an event sends them
    (one order for both, so no output is counted by hand)."""

    status: Any
    table: Any
    kept: Any  #: the shown rows' passages, kept for a row's choice (on_row)
    csv_file: Any
    md_file: Any
    passage: Any
    note: Any
    page: Any
    seen: Any  #: what they show (the filter and the review's state): on_tick redraws only when it changes


#: every output left as it is
KEEP = Shown(*(gr.update(),) * len(Shown._fields))


def table_rows(view: review.ReviewView) -> list[list[str]]:
    """The checklist as the table shows it: category, answer (or the reading's status), pages, passage."""
    out = []
    for r in view.rows:
        passage = " ".join((r.passage or "").split())
        out.append(
            [
                r.category,
                review.answer_text(r),
                review.pages_text(r, view.page_unit, view.page_labels) or "–",
                f"open ›  {passage[:160]}" if r.found else "",
            ]
        )
    return out


def describe_review(view: review.ReviewView) -> str:
    """The review's line above its checklist: while it runs, how far its pass is (chunk k of K, questions
    answered, the time left at its own pace); once done, what it found. Its downloads come when it is done."""
    answered = sum(r.status == "done" for r in view.rows)
    found = sum(r.found for r in view.rows)
    if not view.done:
        p = view.progress
        if p.total is None:
            where = "queued: it starts when a worker is free"
        elif p.step < p.total:
            eta = f", about {fmt_seconds(p.eta_s)} left for the chunks" if p.eta_s is not None else ""
            where = f"chunk {min(p.step + 1, p.total)} of {p.total}{eta}"
        else:
            where = "every chunk read, answering"
        return (
            f"**Review #{view.id}:** reading all {len(view.rows)} questions in one pass: {where}; "
            f"{answered} of {len(view.rows)} answered. The downloads come when it is done."
        )
    failed = [r.category for r in view.rows if r.status != "done"]
    return (
        f"**Review #{view.id}** of {text_md(view.document_title)}: {answered} of {len(view.rows)} answered, "
        f"{found} with the passage their evidence came from."
        + (f" Not answered: {text_md(', '.join(failed))}." if failed else "")
    )


def _exports(view: review.ReviewView, which: str) -> tuple[str, str]:
    """The (filtered) table written as CSV and Markdown files for the downloads."""
    EXPORT_DIR.mkdir(parents=True, exist_ok=True)
    stem = f"review-{view.id}" + ("" if which == "All" else "-" + which.lower().replace(" ", "-"))
    csv_path, md_path = EXPORT_DIR / f"{stem}.csv", EXPORT_DIR / f"{stem}.md"
    csv_path.write_text(review.to_csv(view), encoding="utf-8")
    md_path.write_text(review.to_markdown(view), encoding="utf-8")
    return str(csv_path), str(md_path)


@dataclass(eq=False)  # eq=False: hashable, as Gradio needs its handlers (these bound methods) to be
class ReviewPanel:
    settings: Settings
    me: Callable[[], UserView | None]
    box: gr.Accordion  #: the whole panel (hidden with no document and for a failed upload: read_events.on_parts)
    start: gr.Button
    which: gr.Dropdown  #: the filter
    out: Shown  #: the components a redraw fills
    review_id: gr.State  #: the review shown

    def render(self, review_id: int | None, which: str | None) -> Shown:
        """The review as it is now, filtered by `which`; the passage view emptied."""
        hidden = gr.update(value=None, visible=False)
        passage, note, page = no_passage()
        empty = Shown("", [], [], hidden, hidden, passage, note, page, None)
        if review_id is None:
            return empty
        try:  # its state first: a reading that finishes after it is drawn at the next tick
            seen = [review_id, which or "All", review.review_state(self.settings, review_id, user=self.me())]
            view = review.show_review(self.settings, review_id, user=self.me())
        except NotFound:
            return empty
        shown = review.filtered(view, which or "All")
        kept = [
            [
                r.reading_id,
                r.passage_start,
                r.passage_end,
                r.step,
                view.document_id,
                r.first_page if view.page_unit == "page" else None,
            ]
            for r in shown.rows
        ]
        drawn = empty._replace(status=describe_review(view), table=table_rows(shown), kept=kept, seen=seen)
        if not view.done:  # a half-answered checklist is not one to download
            return drawn
        csv_path, md_path = _exports(shown, which or "All")
        return drawn._replace(
            csv_file=gr.update(value=csv_path, visible=True), md_file=gr.update(value=md_path, visible=True)
        )

    def _opened(self, review_id: int | None, shown: Shown) -> dict:
        """An event's values for the review it opens (or None) and its redraw, by component."""
        return {self.review_id: review_id, **dict(zip(self.out, shown, strict=True))}

    def on_document(self, document_id: int | None, which: str | None) -> dict:
        """The document's latest review, if it has one."""
        try:
            ids = review.document_reviews(self.settings, document_id, user=self.me()) if document_id is not None else []
        except NotFound:
            ids = []
        latest = ids[0] if ids else None
        return self._opened(latest, self.render(latest, which))

    def on_history(self, evt: gr.SelectData, which: str | None) -> dict:
        """A review's line of the readings table chosen (read_views.history_rows): its checklist opens."""
        review_id = review_of_row(evt.row_value)
        if review_id is None:  # a reading's line: read_events.on_open opens it
            return gr.skip()
        return self._opened(review_id, self.render(review_id, which)) | {self.box: gr.update(open=True)}

    def on_review(self, document_id: int | None, which: str | None) -> dict:
        if document_id is None:
            refusal = "**Cannot review:** upload or choose a document first."
            return self._opened(None, self.render(None, which)._replace(status=refusal))
        try:
            started = review.review(self.settings, document_id, user=self.me())
        except (NotFound, ValueError) as exc:  # ReadingError is a ValueError
            return self._opened(None, self.render(None, which)._replace(status=f"**Cannot review:** {text_md(exc)}"))
        return self._opened(started.id, self.render(started.id, which))

    def on_tick(self, review_id: int | None, which: str | None, seen: list | None) -> Shown:
        """Follow a review under way: the table is redrawn when a reading's state changed, the opened
        row's passage left as it is; nothing changes (no flicker, no files rewritten) otherwise."""
        try:
            state = review.review_state(self.settings, review_id, user=self.me()) if review_id is not None else None
        except NotFound:
            return KEEP
        if state is None or seen == [review_id, which or "All", state]:
            return KEEP
        return self.render(review_id, which)._replace(passage=KEEP.passage, note=KEEP.note, page=KEEP.page)

    def on_row(self, evt: gr.SelectData, kept: list | None) -> tuple:
        """The chosen row's passage, highlighted in its place in the document, beside its PDF page."""
        row = chosen_row(evt)
        if not kept or row >= len(kept) or kept[row][1] is None:
            return no_passage("No evidence was found for that row: its answer is in no passage the memory kept.")
        reading_id, start, end, k, document_id, page = kept[row]
        return open_passage(
            self.settings,
            self.me(),
            reading_id,
            start,
            end,
            "evidence",
            f"Its evidence entered the memory at step {k}: the passage of that step's chunk it came from",
            (document_id, page) if page else None,
        )

    def connect(self, document: gr.components.Component, history: gr.Dataframe, list_timer: Ticks) -> None:
        """Wire the panel to the Read tab's document menu, its readings table and its 3-second timer."""
        out, both = list(self.out), [self.review_id, *self.out]
        history.select(self.on_history, [self.which], [self.box, *both], show_progress="hidden")
        document.change(self.on_document, [document, self.which], both, show_progress="hidden")
        self.start.click(self.on_review, [document, self.which], both, show_progress="hidden")
        self.which.input(self.render, [self.review_id, self.which], out, show_progress="hidden")
        list_timer.tick(self.on_tick, [self.review_id, self.which, self.out.seen], out, show_progress="hidden")
        passage = [self.out.passage, self.out.note, self.out.page]
        self.out.table.select(self.on_row, self.out.kept, passage, show_progress="hidden")


def build_review_panel(settings: Settings, me: Callable[[], UserView | None]) -> ReviewPanel:
    """The panel's components, in the current layout context; its `connect(document, history, list_timer)` wires
    them."""
    with gr.Accordion(
        "Contract review: every CUAD clause in one pass", open=True, visible=False, elem_id="review-box"
    ) as box:
        with gr.Row():
            start = gr.Button("Review this contract (41 questions, one pass)", size="sm", elem_id="review-start")
            which = gr.Dropdown(
                list(review.FILTERS), value="All", label="Show", elem_id="review-filter", scale=0, min_width=160
            )
            csv_file = gr.DownloadButton("Download CSV", visible=False, size="sm", elem_id="review-csv")
            md_file = gr.DownloadButton("Download Markdown", visible=False, size="sm", elem_id="review-md")
        status = gr.Markdown(elem_id="review-status", latex_delimiters=[])
        rows = table(REVIEW_COLUMNS, "review-table", max_height=420, column_widths=["20%", "25%", "10%", "45%"])
        note = gr.Markdown(elem_id="review-note", latex_delimiters=[])
        passage, page = build_passage_view("evidence", "review")
    out = Shown(status, rows, gr.State([]), csv_file, md_file, passage, note, page, gr.State(None))
    return ReviewPanel(settings, me, box, start, which, out, review_id=gr.State(None))
