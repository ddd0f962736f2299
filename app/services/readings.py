"""Readings: one question on one document, advanced chunk by chunk by the memory agent.

Every step commits the new memory as a checkpoint together with the reading's cursor in one
transaction, guarded by the cursor it started from. Running a reading again therefore resumes
after its last checkpoint, and two runners can never write the same step twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db import session_scope
from app.documents.parsing import page_of
from app.models import Checkpoint, Document, DocumentStatus, Reading, ReadingStatus, utcnow
from app.services.llm import engine_for
from app.settings import Settings
from inference.agent import AgentConfig, MemoryAgent
from inference.chunking import Chunk, split_into_chunks
from inference.engines.base import Completion, Engine

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
    config: AgentConfig
    question: str
    text: str
    page_starts: list[int]
    chunks: list[Chunk]
    cursor: int
    memory: str | None


def _claimable(settings: Settings, explicit: bool):  # noqa: ANN202 - an SQL condition
    """Queued readings, and running ones whose runner's heartbeat went stale; a reading that
    failed is resumed only when asked for by id (the CLI, a user's retry)."""
    stale = utcnow() - timedelta(seconds=settings.stale_after_s)
    cond = (Reading.status == ReadingStatus.queued) | (
        (Reading.status == ReadingStatus.running) & ((Reading.heartbeat_at < stale) | Reading.heartbeat_at.is_(None))
    )
    return cond | (Reading.status == ReadingStatus.failed) if explicit else cond


def _claim(settings: Settings, engine: Engine, ids: list[int] | None, limit: int,
           chunk_cache: dict[tuple[int, int], list[Chunk]]) -> list[_Live]:
    """Take up to `limit` readings for this runner. Each claim is a guarded UPDATE, so two
    workers never take the same reading."""
    url = settings.resolved_database_url
    claimed = []
    with session_scope(url) as s:
        query = select(Reading.id).where(_claimable(settings, explicit=ids is not None)).order_by(Reading.id)
        if ids is not None:
            query = query.where(Reading.id.in_(ids))
        candidates = list(s.scalars(query.limit(limit)))
    for reading_id in candidates:
        with session_scope(url) as s:
            now = utcnow()
            taken = s.execute(
                update(Reading)
                .where(Reading.id == reading_id, _claimable(settings, explicit=ids is not None))
                .values(status=ReadingStatus.running, heartbeat_at=now, error=None, attempts=Reading.attempts + 1)
            ).rowcount
            if taken != 1:
                continue
            r = s.get(Reading, reading_id)
            key = (r.document_id, r.chunk_tokens)
            if key not in chunk_cache:
                chunk_cache[key] = split_into_chunks(r.document.text or "", engine.tokenizer, r.chunk_tokens)
            r.total_chunks = len(chunk_cache[key])
            r.started_at = r.started_at or now
            memory = r.checkpoints[-1].memory if r.checkpoints else None
            claimed.append(_Live(r.id, _agent_config(r), r.question, r.document.text or "",
                                 r.document.page_starts, chunk_cache[key], r.cursor, memory))
    return claimed


def _agent_config(r: Reading) -> AgentConfig:
    return AgentConfig(r.chunk_tokens, r.memory_tokens, r.answer_tokens, r.template_set)


def run_readings(settings: Settings, reading_ids: list[int] | None = None, engine: Engine | None = None) -> int:
    """Advance readings to the end, all together: each step makes one batched engine call per
    group of readings with the same agent settings, whatever document or chunk each is on.

    With `reading_ids`, exactly those (failed or interrupted ones resume at their cursor; done or
    cancelled ones are skipped). Without, every queued or stalled reading, and readings queued
    while the pass is under way join it at the next step, up to `settings.max_batch` at once.
    Returns how many readings this call finished.
    """
    engine = engine or engine_for(settings)
    url = settings.resolved_database_url
    chunk_cache: dict[tuple[int, int], list[Chunk]] = {}
    live = _claim(settings, engine, reading_ids, settings.max_batch, chunk_cache)
    finished = 0
    while live:
        groups: dict[AgentConfig, list[_Live]] = {}
        for x in live:
            groups.setdefault(x.config, []).append(x)
        for config, group in groups.items():
            try:
                done = _step(url, MemoryAgent(engine, config), group)
            except Exception as exc:
                _fail(url, [x.id for x in live], exc)
                raise
            finished += len(done)
            live = [x for x in live if x.id not in done]
        if reading_ids is None and len(live) < settings.max_batch:
            live += _claim(settings, engine, None, settings.max_batch - len(live), chunk_cache)
    return finished


def _step(url: str, agent: MemoryAgent, group: list[_Live]) -> set[int]:
    """Read the next chunk of every reading in `group`, answer those that reached the end.
    Returns the ids that left the loop (answered, cancelled, or taken over by another runner)."""
    gone: set[int] = set()
    reading = [x for x in group if x.cursor < len(x.chunks)]
    if reading:
        started = time.monotonic()
        completions = agent.update([(x.question, x.memory, x.chunks[x.cursor].text(x.text)) for x in reading])
        seconds = time.monotonic() - started
        for x, c in zip(reading, completions):
            if not _commit_step(url, x, c, seconds):
                gone.add(x.id)
    finishing = [x for x in group if x.cursor >= len(x.chunks) and x.id not in gone]
    if finishing:
        answers = agent.answer([(x.question, x.memory) for x in finishing])
        for x, a in zip(finishing, answers):
            _commit_answer(url, x, a.answer, a.output)
            gone.add(x.id)
    return gone


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


def cancel_reading(session: Session, reading_id: int) -> Reading:
    """Stop a queued or running reading; its runner notices at its next commit."""
    r = _get_or_raise(session, reading_id)
    if r.status in (ReadingStatus.queued, ReadingStatus.running):
        r.status, r.finished_at = ReadingStatus.cancelled, utcnow()
    return r


def retry_reading(session: Session, reading_id: int) -> Reading:
    """Queue a failed or cancelled reading again; it resumes after its last checkpoint."""
    r = _get_or_raise(session, reading_id)
    if r.status not in (ReadingStatus.failed, ReadingStatus.cancelled):
        raise ReadingError(f"reading {reading_id} is {r.status.value}; only failed or cancelled readings are retried")
    r.status, r.error, r.finished_at = ReadingStatus.queued, None, None
    return r


def _get_or_raise(session: Session, reading_id: int) -> Reading:
    r = session.get(Reading, reading_id)
    if r is None:
        raise ReadingError(f"no reading {reading_id}")
    return r


def count_claimable(session: Session, settings: Settings) -> int:
    """Readings a worker's pass would take now: queued, or running with a stale heartbeat."""
    return session.scalar(select(func.count()).select_from(Reading).where(_claimable(settings, explicit=False)))


def get_reading(session: Session, reading_id: int) -> Reading | None:
    return session.get(Reading, reading_id)


def list_readings(session: Session, document_id: int) -> list[Reading]:
    return list(
        session.scalars(select(Reading).where(Reading.document_id == document_id).order_by(Reading.id.desc()))
    )
