"""Contract review: every CUAD category asked of a document in one pass (inference/contract_review.py),
kept with the document as a `Review` that groups the pass's readings, and shown as a checklist table:
category, answer, the page(s) where its evidence entered the memory and the passage there.

`review` validates, commits and enqueues after the commit, like readings.ask (the API, the UI and the CLI
call it); `show_review` builds the table from the readings' checkpoints; `to_csv` and `to_markdown` export
it. All questions are asked together, so the runner reads them in lockstep, one batched call a chunk.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Annotated

from pydantic import Field
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from app.db import session_scope
from app.documents.base import page_of, page_unit, pages_label
from app.models import Checkpoint, Reading, Review
from app.queue import request_reading_pass
from app.services.documents import page_url, require_document
from app.services.errors import NotFound, valid_id
from app.services.provenance import answer_source
from app.services.readings import ReadingError, create_readings
from app.services.users import UserView, can_see, resolve_actor
from app.services.views import NOT_SERVED, reading_progress
from app.settings import Settings
from inference.contract_review import REVIEW_QUESTIONS, YES_NO, Kind, first_yes_no

#: the answer filters the UI offers (and `filtered` takes)
FILTERS = ("All", "Yes", "No", "Found", "Not found")


@dataclass(frozen=True)
class ReviewRow:
    category: str
    #: `extract` (a value: a date, the parties) or `yes-no` (is the clause there)
    kind: Kind
    reading_id: int
    status: str
    answer: str | None
    #: (and every later one did)
    step: Annotated[
        int | None, Field(description="the step whose memory first held the answer; None: no evidence found")
    ]
    #: None with step None
    first_page: Annotated[int | None, Field(description="the page (PDF) or section where the evidence passage starts")]
    last_page: int | None
    #: the passage of that step's chunk that holds the evidence, and its text
    passage_start: Annotated[
        int | None, Field(description="the evidence passage: character offsets in the document text")
    ]
    passage_end: int | None
    passage: str | None

    @property
    def found(self) -> bool:
        return self.step is not None


@dataclass(frozen=True)
class ReviewProgress:
    """Where a review's pass is: its readings go through the chunks together, then each answers."""

    step: Annotated[int, Field(description="chunks read so far (by the furthest of its readings)")]
    total: Annotated[int | None, Field(description="the document's chunks; None while the pass is queued")]
    answered: int
    questions: int
    eta_s: Annotated[float | None, Field(description="time left for the chunks at the pass's own pace")]


@dataclass(frozen=True)
class ReviewView:
    """A contract review: one row a CUAD category, in one pass over the document."""

    id: int
    document_id: int
    document_title: str
    #: `page` (PDF) or `section`
    page_unit: str
    created_at: datetime | None
    #: every reading of the review has finished (done, failed or cancelled)
    done: bool
    rows: list[ReviewRow]
    progress: ReviewProgress
    #: a PDF's printed page labels ("81"), for the Pages column (pages_label)
    page_labels: Annotated[list[str], NOT_SERVED] = field(default_factory=list)


class ReviewError(ReadingError):
    """A review request that cannot be met; the message is shown to the user (the API answers 422)."""


# --- the table, from a reading's checkpoints (pure: tested with fake readings) ----------------------


def find_evidence(
    kind: str, question: str, answer: str | None, steps: Sequence[Checkpoint], text: str
) -> tuple[int, int, int] | None:
    """(step, passage start, passage end) of the answer's evidence, or None: the passage provenance says the
    answer came from (`answer_source`, as the reading's "where did this come from" view shows it). A "No" to
    a clause question (or no yes or no) has none: the clause is absent."""
    if not steps or not answer or (kind == YES_NO and first_yes_no(answer) != "yes"):
        return None
    source = answer_source(
        text, [(c.start_char, c.end_char) for c in steps], [c.memory for c in steps], question, answer
    )
    return None if source is None else (source.step, source.start, source.end)


def review_row(category: str, kind: str, reading, text: str, page_starts: list[int]) -> ReviewRow:
    """One row of the table: `reading` is a Reading (or anything with its id, status, question, answer and
    timeline())."""
    status = getattr(reading.status, "value", reading.status)
    found = (
        find_evidence(kind, reading.question, reading.answer, reading.timeline(), text) if status == "done" else None
    )
    if found is None:
        return ReviewRow(category, kind, reading.id, status, reading.answer, None, None, None, None, None, None)
    k, a, b = found
    first, last = page_of(page_starts, a), page_of(page_starts, max(a, b - 1))
    return ReviewRow(category, kind, reading.id, status, reading.answer, k, first, last, a, b, text[a:b])


def pages_text(row: ReviewRow, unit: str = "page", labels: list[str] | None = None) -> str:
    """Where the evidence is: "page 3", "pages 3–4", by the numbers printed on a PDF's pages where its labels
    differ ("page 81 (page 98 of the PDF)"), or sections with their headings; "" where none was found."""
    if row.first_page is None:
        return ""
    return pages_label(row.first_page, row.last_page, unit, labels)


def page_link(document_id: int, row: ReviewRow, unit: str = "page") -> str:
    """The PDF page the row's evidence is printed on, as the app serves it, its passage highlighted (as the
    panel shows it); "" for other formats."""
    if unit != "page" or row.first_page is None:
        return ""
    return page_url(document_id, row.first_page, row.passage_start, row.passage_end)


def answer_text(row: ReviewRow) -> str:
    """The answer cell of the table and its exports: the answer on one line, or the reading's status."""
    return " ".join((row.answer or "").split()) if row.status == "done" else f"({row.status})"


def filtered(view: ReviewView, which: str = "All") -> ReviewView:
    """The review with only the rows answered `Yes` or `No` (by the answer's first yes or no), with evidence
    (`Found`) or without (`Not found`), or all of them."""
    if which not in FILTERS:
        raise ReviewError(f"unknown filter {which!r}; choose one of {', '.join(FILTERS)}")
    keep = {
        "All": lambda r: True,
        "Yes": lambda r: r.status == "done" and first_yes_no(r.answer or "") == "yes",
        "No": lambda r: r.status == "done" and first_yes_no(r.answer or "") == "no",
        "Found": lambda r: r.found,
        "Not found": lambda r: not r.found,
    }[which]
    return replace(view, rows=[r for r in view.rows if keep(r)])


# --- exports: one function a format, used by the UI's downloads and the CLI's flags ----------------

EXPORT_COLUMNS = ("Category", "Kind", "Answer", "Pages", "Passage", "Page image", "Reading")


def _export_rows(view: ReviewView) -> list[list[str]]:
    return [
        [
            r.category,
            r.kind,
            answer_text(r),
            pages_text(r, view.page_unit, view.page_labels),
            " ".join((r.passage or "").split()),
            page_link(view.document_id, r, view.page_unit),
            str(r.reading_id),
        ]
        for r in view.rows
    ]


def to_csv(view: ReviewView) -> str:
    """The table (as `filtered` left it) as CSV, a header line first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    writer.writerows(_export_rows(view))
    return out.getvalue()


def _md_cell(value: str) -> str:
    return value.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def to_markdown(view: ReviewView) -> str:
    """The table (as `filtered` left it) as a Markdown document: a heading, then a pipe table."""
    lines = [
        f"# Contract review #{view.id}: {_md_cell(view.document_title)}",
        "",
        "| " + " | ".join(EXPORT_COLUMNS) + " |",
        "|" + "---|" * len(EXPORT_COLUMNS),
    ]
    for row in _export_rows(view):
        lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


# --- the use cases ------------------------------------------------------------------------------------


def require_review(session: Session, review_id: int, user: UserView | None = None) -> Review:
    """The review, or NotFound: also when its document is another user's (the same answer as a missing one)."""
    r = session.get(Review, review_id) if valid_id(review_id) else None
    if r is None or not can_see(user, require_document(session, r.document_id).owner_id):
        raise NotFound(f"no review {review_id}")
    return r


def _view(session: Session, review: Review) -> ReviewView:
    doc = require_document(session, review.document_id)
    text, starts = doc.text or "", list(doc.page_starts or [])
    kinds = {q: (category, kind) for category, kind, q in REVIEW_QUESTIONS}
    # the readings with their checkpoints in two queries, not one a row (the panel asks every 3 s)
    rs = session.scalars(
        select(Reading)
        .where(Reading.review_id == review.id)
        .order_by(Reading.id)
        .options(selectinload(Reading.checkpoints))
    ).all()
    rows = [review_row(*kinds.get(r.question, (r.question, "extract")), r, text, starts) for r in rs]
    done = all(r.status in ("done", "failed", "cancelled") for r in rows)
    unit, labels = page_unit(doc.format), list(doc.page_labels or [])
    return ReviewView(review.id, doc.id, doc.title, unit, review.created_at, done, rows, _progress(rs), labels)


def _progress(rs: Sequence[Reading]) -> ReviewProgress:
    ps = [reading_progress(r) for r in rs]
    totals = [p.total for p in ps if p.total is not None]
    etas = [p.eta_s for p in ps if p.eta_s is not None]
    answered = sum(getattr(r.status, "value", r.status) == "done" for r in rs)
    step = max((p.step for p in ps), default=0)
    return ReviewProgress(step, max(totals) if totals else None, answered, len(rs), max(etas) if etas else None)


def review(
    settings: Settings,
    document_id: int,
    chunk_tokens: int | None = None,
    memory_tokens: int | None = None,
    *,
    enqueue: bool = True,
    user: UserView | None = None,
) -> ReviewView:
    """Review a contract: all 41 CUAD questions as readings of one new review, committed, then a worker asked
    to read them in one pass (`enqueue=False`: the caller reads them, as `longread review` does)."""
    with session_scope(settings.resolved_database_url) as s:
        actor = resolve_actor(s, settings, user)
        questions = [q for _, _, q in REVIEW_QUESTIONS]
        rs = create_readings(s, settings, document_id, questions, chunk_tokens, memory_tokens, actor)
        r = Review(document_id=document_id)
        s.add(r)
        s.flush()
        for reading in rs:
            reading.review_id = r.id
        s.flush()
        s.refresh(r)
        view = _view(s, r)
    if enqueue:  # committed first, so the worker always finds the readings
        request_reading_pass(settings)
    return view


def show_review(settings: Settings, review_id: int, *, user: UserView | None = None) -> ReviewView:
    """The review's checklist table as it stands (rows of unfinished readings have no answer yet)."""
    with session_scope(settings.resolved_database_url) as s:
        return _view(s, require_review(s, review_id, resolve_actor(s, settings, user)))


def review_state(settings: Settings, review_id: int, *, user: UserView | None = None) -> list[list[object]]:
    """Each reading of the review as [id, status, chunks read, answer], read without the checkpoints: what the
    table and its progress line change with, so whoever follows the review redraws only when this changed
    (NotFound as show_review)."""
    with session_scope(settings.resolved_database_url) as s:
        require_review(s, review_id, resolve_actor(s, settings, user))
        found = s.execute(
            select(Reading.id, Reading.status, Reading.cursor, Reading.answer)
            .where(Reading.review_id == review_id)
            .order_by(Reading.id)
        )
        return [[i, getattr(status, "value", status), cursor, answer] for i, status, cursor, answer in found]


def document_reviews(settings: Settings, document_id: int, *, user: UserView | None = None) -> list[int]:
    """The ids of the document's reviews, newest first (NotFound if no such document, or not the user's)."""
    with session_scope(settings.resolved_database_url) as s:
        require_document(s, document_id, resolve_actor(s, settings, user))
        return list(s.scalars(select(Review.id).where(Review.document_id == document_id).order_by(Review.id.desc())))
