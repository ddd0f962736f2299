"""Pydantic models of what the API returns."""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import BaseModel, Field

from app.models import Checkpoint, Document, Reading
from app.settings import Settings


class ReadingEstimateOut(BaseModel):
    """How long one question would take to read the whole document on the active engine."""

    chunks: int
    seconds: float | None = Field(description="None when there is no speed figure for the engine")
    engine: str
    chunk_tokens: int
    memory_tokens: int
    basis: str


class PageOut(BaseModel):
    page: int = Field(description="1-based number, as in a checkpoint's first_page/last_page")
    start: int = Field(description="character offset in the document's text where it starts")
    label: str = Field(description="printed page label (PDF) or the section's heading")


class DocumentOut(BaseModel):
    id: int
    title: str
    filename: str | None
    format: str
    status: str
    error: str | None
    size_bytes: int
    pages: int = Field(description="number of pages (PDF) or sections (other formats)")
    page_unit: str = Field(description="`page` for PDF, `section` (a heading and what follows) otherwise")
    char_count: int
    token_count: int | None
    estimate: ReadingEstimateOut | None = None
    page_map: list[PageOut] | None = Field(None, description="on single-document responses only")
    created_at: datetime

    @classmethod
    def of(cls, d: Document, settings: Settings | None = None, with_page_map: bool = False) -> DocumentOut:
        from app.services.documents import document_page_unit, estimate_reading, page_map

        estimate = None
        if settings is not None and d.token_count:
            e = estimate_reading(d.token_count, settings)
            estimate = ReadingEstimateOut(chunks=e.chunks, seconds=e.seconds, engine=e.engine,
                                          chunk_tokens=settings.chunk_tokens,
                                          memory_tokens=settings.memory_tokens, basis=e.basis)
        return cls(id=d.id, title=d.title, filename=d.filename, format=d.format, status=d.status.value,
                   error=d.error, size_bytes=d.size_bytes, pages=len(d.page_starts or []),
                   page_unit=document_page_unit(d), char_count=d.char_count, token_count=d.token_count,
                   estimate=estimate,
                   page_map=[PageOut(**p) for p in page_map(d)] if with_page_map else None,
                   created_at=d.created_at)


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=4000)
    chunk_tokens: int | None = Field(None, ge=16, le=200_000)
    memory_tokens: int | None = Field(None, ge=8, le=16_000)


class CheckpointOut(BaseModel):
    step: int
    memory: str
    start_char: int
    end_char: int
    first_page: int
    last_page: int
    completion_tokens: int
    seconds: float

    @classmethod
    def of(cls, c: Checkpoint) -> CheckpointOut:
        return cls(step=c.step, memory=c.memory, start_char=c.start_char, end_char=c.end_char,
                   first_page=c.first_page, last_page=c.last_page,
                   completion_tokens=c.completion_tokens, seconds=c.seconds)


class Progress(BaseModel):
    step: int
    total: int | None
    elapsed_s: float | None
    eta_s: float | None

    @classmethod
    def of(cls, r: Reading) -> Progress:
        elapsed = None
        if r.started_at:
            end = r.finished_at or datetime.now(timezone.utc)
            elapsed = (_aware(end) - _aware(r.started_at)).total_seconds()
        eta = None
        if r.total_chunks is not None and r.checkpoints and not r.finished_at:
            per_step = sum(c.seconds for c in r.checkpoints) / len(r.checkpoints)
            eta = per_step * (r.total_chunks - r.cursor)
        return cls(step=r.cursor, total=r.total_chunks, elapsed_s=elapsed, eta_s=eta)


def _aware(t: datetime) -> datetime:
    # SQLite hands datetimes back without a zone; we only ever store UTC.
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


class ReadingOut(BaseModel):
    id: int
    document_id: int
    question: str
    status: str
    answer: str | None
    final_output: str | None
    error: str | None
    model: str
    chunk_tokens: int
    memory_tokens: int
    template_set: str
    progress: Progress
    checkpoints: list[CheckpointOut]

    @classmethod
    def of(cls, r: Reading) -> ReadingOut:
        return cls(id=r.id, document_id=r.document_id, question=r.question, status=r.status.value,
                   answer=r.answer, final_output=r.final_output, error=r.error, model=r.model,
                   chunk_tokens=r.chunk_tokens, memory_tokens=r.memory_tokens,
                   template_set=r.template_set, progress=Progress.of(r),
                   checkpoints=[CheckpointOut.of(c) for c in r.checkpoints])
