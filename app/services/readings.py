"""Readings: one question on one document, advanced chunk by chunk by the memory agent.

Every step commits the new memory as a checkpoint together with the reading's cursor in one
transaction, guarded by the cursor it started from. Running a reading again therefore resumes
after its last checkpoint, and two runners can never write the same step twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from app.db import session_scope
from app.documents.parsing import page_of
from app.models import Checkpoint, Document, DocumentStatus, Reading, ReadingStatus, utcnow
from app.services.llm import engine_for
from app.settings import Settings
from inference.agent import AgentConfig, MemoryAgent
from inference.chunking import Chunk, split_into_chunks
from inference.engines.base import Completion, Engine

RESUMABLE = (ReadingStatus.queued, ReadingStatus.running, ReadingStatus.failed)


class ReadingError(ValueError):
    """A reading cannot be created; the message is shown to the user."""


def create_readings(
    session: Session,
    settings: Settings,
    document_id: int,
    questions: list[str],
    chunk_tokens: int | None = None,
    memory_tokens: int | None = None,
) -> list[Reading]:
    doc = session.get(Document, document_id)
    if doc is None:
        raise ReadingError(f"no document {document_id}")
    if doc.status != DocumentStatus.ready:
        raise ReadingError(f"document {document_id} is not ready to read ({doc.status.value})")
    questions = [q.strip() for q in questions]
    if not questions or not all(questions):
        raise ReadingError("a question must not be empty")
    config = AgentConfig(  # validates the sizes before anything is stored
        chunk_tokens=chunk_tokens or settings.chunk_tokens,
        memory_tokens=memory_tokens or settings.memory_tokens,
        answer_tokens=settings.answer_tokens,
        template_set=settings.template_set,
    )
    readings = [
        Reading(
            document_id=doc.id,
            question=q,
            model=settings.model,
            chunk_tokens=config.chunk_tokens,
            memory_tokens=config.memory_tokens,
            answer_tokens=config.answer_tokens,
            template_set=config.template_set,
        )
        for q in questions
    ]
    session.add_all(readings)
    session.flush()
    return readings


@dataclass
class _Live:
    """A reading in flight: what the loop needs between commits."""

    id: int
    question: str
    text: str
    page_starts: list[int]
    chunks: list[Chunk]
    cursor: int
    memory: str | None


def _agent_config(r: Reading) -> AgentConfig:
    return AgentConfig(r.chunk_tokens, r.memory_tokens, r.answer_tokens, r.template_set)


def run_readings(settings: Settings, reading_ids: list[int], engine: Engine | None = None) -> None:
    """Advance these readings to the end, together: one batched engine call per chunk step.

    Readings already done or cancelled are skipped; failed or interrupted ones resume at their
    cursor. Readings with different agent settings run as separate groups.
    """
    engine = engine or engine_for(settings)
    url = settings.resolved_database_url
    groups: dict[AgentConfig, list[_Live]] = {}
    tokenizer_chunks: dict[tuple[int, int], list[Chunk]] = {}
    with session_scope(url) as s:
        readings = s.scalars(
            select(Reading).where(Reading.id.in_(reading_ids), Reading.status.in_(RESUMABLE))
        ).all()
        now = utcnow()
        for r in readings:
            key = (r.document_id, r.chunk_tokens)
            if key not in tokenizer_chunks:
                tokenizer_chunks[key] = split_into_chunks(r.document.text or "", engine.tokenizer, r.chunk_tokens)
            chunks = tokenizer_chunks[key]
            last = r.checkpoints[-1].memory if r.checkpoints else None
            r.status, r.error, r.total_chunks = ReadingStatus.running, None, len(chunks)
            r.attempts += 1
            r.started_at = r.started_at or now
            r.heartbeat_at = now
            groups.setdefault(_agent_config(r), []).append(
                _Live(r.id, r.question, r.document.text or "", r.document.page_starts, chunks, r.cursor, last)
            )
    for config, live in groups.items():
        try:
            _run_group(url, MemoryAgent(engine, config), live)
        except Exception as exc:
            _fail(url, [x.id for x in live], exc)
            raise


def _run_group(url: str, agent: MemoryAgent, live: list[_Live]) -> None:
    while live:
        reading = [x for x in live if x.cursor < len(x.chunks)]
        if reading:
            started = time.monotonic()
            completions = agent.update(
                [(x.question, x.memory, x.chunks[x.cursor].text(x.text)) for x in reading]
            )
            seconds = time.monotonic() - started
            for x, c in zip(reading, completions):
                if not _commit_step(url, x, c, seconds):
                    live.remove(x)  # cancelled, or another runner got there first
        finishing = [x for x in live if x.cursor >= len(x.chunks)]
        if finishing:
            answers = agent.answer([(x.question, x.memory) for x in finishing])
            for x, a in zip(finishing, answers):
                _commit_answer(url, x, a.answer, a.output)
                live.remove(x)


def _commit_step(url: str, x: _Live, completion: Completion, seconds: float) -> bool:
    chunk = x.chunks[x.cursor]
    with session_scope(url) as s:
        moved = s.execute(
            update(Reading)
            .where(Reading.id == x.id, Reading.cursor == x.cursor, Reading.status == ReadingStatus.running)
            .values(cursor=x.cursor + 1, heartbeat_at=utcnow())
        ).rowcount
        if moved != 1:
            return False
        s.add(
            Checkpoint(
                reading_id=x.id,
                step=x.cursor + 1,
                memory=completion.text,
                start_token=chunk.start_token,
                end_token=chunk.end_token,
                start_char=chunk.start_char,
                end_char=chunk.end_char,
                first_page=page_of(x.page_starts, chunk.start_char),
                last_page=page_of(x.page_starts, max(chunk.start_char, chunk.end_char - 1)),
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens,
                seconds=seconds,
            )
        )
    x.cursor += 1
    x.memory = completion.text
    return True


def _commit_answer(url: str, x: _Live, answer: str, output: str) -> None:
    with session_scope(url) as s:
        s.execute(
            update(Reading)
            .where(Reading.id == x.id, Reading.status == ReadingStatus.running)
            .values(status=ReadingStatus.done, answer=answer, final_output=output, finished_at=utcnow(),
                    heartbeat_at=utcnow())
        )


def _fail(url: str, ids: list[int], exc: Exception) -> None:
    with session_scope(url) as s:
        s.execute(
            update(Reading)
            .where(Reading.id.in_(ids), Reading.status == ReadingStatus.running)
            .values(status=ReadingStatus.failed, error=f"{type(exc).__name__}: {exc}")
        )


def stalled_reading_ids(session: Session, settings: Settings) -> list[int]:
    """Readings whose runner is gone: running with an old heartbeat, or queued for too long."""
    cutoff = datetime.now(timezone.utc) - timedelta(seconds=settings.stale_after_s)
    return list(
        session.scalars(
            select(Reading.id).where(
                or_(
                    (Reading.status == ReadingStatus.running) & (Reading.heartbeat_at < cutoff),
                    (Reading.status == ReadingStatus.queued) & (Reading.created_at < cutoff),
                )
            )
        )
    )


def get_reading(session: Session, reading_id: int) -> Reading | None:
    return session.get(Reading, reading_id)


def list_readings(session: Session, document_id: int) -> list[Reading]:
    return list(
        session.scalars(select(Reading).where(Reading.document_id == document_id).order_by(Reading.id.desc()))
    )
