"""Pydantic models of what the API returns."""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import BaseModel, Field

from app.models import Checkpoint, Document, Reading


class DocumentOut(BaseModel):
    id: int
    title: str
    format: str
    status: str
    error: str | None
    size_bytes: int
    pages: int
    char_count: int
    token_count: int | None
    created_at: datetime

    @classmethod
    def of(cls, d: Document) -> DocumentOut:
        return cls(id=d.id, title=d.title, format=d.format, status=d.status.value, error=d.error,
                   size_bytes=d.size_bytes, pages=len(d.page_starts or []), char_count=d.char_count,
                   token_count=d.token_count, created_at=d.created_at)


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
