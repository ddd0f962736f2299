"""Readings, the records: one question on one document, and what a person does with it (ask,
cancel, retry, look at it). The runner that advances readings is app/services/runner.py.

Each action is one function here that validates, commits and enqueues after the commit, and the
API, the UI and the CLI all call that same function: `ask`, `cancel`, `retry`, `show`,
`document_readings`. They return detached views (app/services/views.py). The session-level
helpers below them (`create_readings`, `require_reading`, …) are for services and tests that
already hold a session.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from app.db import session_scope
from app.models import Document, DocumentStatus, Reading, ReadingStatus, utcnow
from app.queue import request_reading_pass
from app.services.errors import NotFound
from app.services.models import active_version
from app.services.views import ReadingView, reading_view
from app.settings import Settings
from inference.agent import AgentConfig

# One set of limits for every entry point (the API's schema states the same bounds for its docs).
MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS = 16, 200_000
MIN_MEMORY_TOKENS, MAX_MEMORY_TOKENS = 8, 16_000
MAX_QUESTION_CHARS = 4000
#: questions asked together (they are read in one pass)
MAX_QUESTIONS = 64


class ReadingError(ValueError):
    """A reading cannot be created or changed; the message is shown to the user."""


def check_sizes(chunk_tokens: int | None, memory_tokens: int | None) -> None:
    """Refuse chunk or memory sizes out of bounds (None: the default), with a message saying what to change."""
    for name, value, low, high in (("chunk_tokens", chunk_tokens, MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS),
                                   ("memory_tokens", memory_tokens, MIN_MEMORY_TOKENS, MAX_MEMORY_TOKENS)):  # fmt: skip
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ReadingError(f"{name} must be a whole number of tokens, not {value!r}")
        if not low <= value <= high:
            raise ReadingError(f"{name} must be between {low:,} and {high:,} tokens (got {value:,})")


def check_questions(questions: list[str]) -> list[str]:
    """The questions, stripped; ReadingError if there is none, one is empty or one is too long."""
    questions = [(q or "").strip() for q in questions]
    if not questions or not all(questions):
        raise ReadingError("a question must not be empty")
    if len(questions) > MAX_QUESTIONS:
        raise ReadingError(f"at most {MAX_QUESTIONS} questions at once (got {len(questions)})")
    for q in questions:
        if len(q) > MAX_QUESTION_CHARS:
            raise ReadingError(f"a question may have at most {MAX_QUESTION_CHARS:,} characters (got {len(q):,})")
    return questions


def create_readings(
    session: Session,
    settings: Settings,
    document_id: int,
    questions: list[str],
    chunk_tokens: int | None = None,
    memory_tokens: int | None = None,
) -> list[Reading]:
    """New queued readings in `session` (flushed, not committed). Use `ask` to also commit and enqueue."""
    check_sizes(chunk_tokens, memory_tokens)
    questions = check_questions(questions)
    doc = session.get(Document, document_id)
    if doc is None:
        raise NotFound(f"no document {document_id}")
    if doc.status != DocumentStatus.ready:
        raise ReadingError(f"document {document_id} is not ready to read ({doc.status.value})")
    version = active_version(session)  # None: the settings' model; else read with its weights and defaults
    config = AgentConfig(  # validates the template set before anything is stored
        chunk_tokens=chunk_tokens or (version and version.chunk_tokens) or settings.chunk_tokens,
        memory_tokens=memory_tokens or (version and version.memory_tokens) or settings.memory_tokens,
        answer_tokens=settings.answer_tokens,
        template_set=version.template_set if version else settings.template_set,
    )
    readings = [
        Reading(
            document_id=doc.id,
            question=q,
            model=version.name if version else settings.model,
            model_version_id=version.id if version else None,
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


def cancel_reading(session: Session, reading_id: int) -> Reading:
    """Stop a queued or running reading; its runner notices at its next commit."""
    r = require_reading(session, reading_id)
    if r.status in (ReadingStatus.queued, ReadingStatus.running):
        r.status, r.finished_at = ReadingStatus.cancelled, utcnow()
    return r


def retry_reading(session: Session, reading_id: int) -> Reading:
    """Queue a failed or cancelled reading again; it resumes after its last checkpoint."""
    r = require_reading(session, reading_id)
    if r.status not in (ReadingStatus.failed, ReadingStatus.cancelled):
        raise ReadingError(f"reading {reading_id} is {r.status.value}; only failed or cancelled readings are retried")
    r.status, r.error, r.finished_at = ReadingStatus.queued, None, None
    return r


def require_reading(session: Session, reading_id: int) -> Reading:
    """The reading, or NotFound."""
    r = session.get(Reading, reading_id)
    if r is None:
        raise NotFound(f"no reading {reading_id}")
    return r


def get_reading(session: Session, reading_id: int) -> Reading | None:
    return session.get(Reading, reading_id)


def list_readings(session: Session, document_id: int) -> list[Reading]:
    """The document's readings, newest first; NotFound if there is no such document."""
    if session.get(Document, document_id) is None:
        raise NotFound(f"no document {document_id}")
    return list(
        session.scalars(
            select(Reading)
            .where(Reading.document_id == document_id)
            .order_by(Reading.id.desc())
            .options(selectinload(Reading.checkpoints))
        )
    )


# --- the use cases: one transaction each, enqueued after the commit ---------------------------------


def ask(settings: Settings, document_id: int, questions: list[str], chunk_tokens: int | None = None,
        memory_tokens: int | None = None, *, enqueue: bool = True) -> list[ReadingView]:
    """Ask questions of a document: one reading each, committed, then a worker asked to read them
    (`enqueue=False`: the caller reads them itself, as `longread ask` does)."""
    with session_scope(settings.resolved_database_url) as s:
        rs = create_readings(s, settings, document_id, questions, chunk_tokens, memory_tokens)
        views = [reading_view(r, settings.stale_after_s) for r in rs]
    # Committed before enqueueing, so the worker always finds the readings.
    if enqueue:
        request_reading_pass(settings)
    return views


def cancel(settings: Settings, reading_id: int) -> ReadingView:
    """Stop a queued or running reading (a finished one is left as it is)."""
    with session_scope(settings.resolved_database_url) as s:
        return reading_view(cancel_reading(s, reading_id), settings.stale_after_s)


def retry(settings: Settings, reading_id: int, *, enqueue: bool = True) -> ReadingView:
    """Queue a failed or cancelled reading again, to resume after its last checkpoint."""
    with session_scope(settings.resolved_database_url) as s:
        view = reading_view(retry_reading(s, reading_id), settings.stale_after_s)
    if enqueue:
        request_reading_pass(settings)
    return view


def show(settings: Settings, reading_id: int, *, with_chunks: bool = False) -> ReadingView:
    """A reading with its checkpoints (`with_chunks`: and the text of the chunk each one read); NotFound if none."""
    with session_scope(settings.resolved_database_url) as s:
        return reading_view(require_reading(s, reading_id), settings.stale_after_s, with_chunks=with_chunks)


def document_readings(settings: Settings, document_id: int) -> list[ReadingView]:
    """The document's readings, newest first; NotFound if there is no such document."""
    with session_scope(settings.resolved_database_url) as s:
        return [reading_view(r, settings.stale_after_s) for r in list_readings(s, document_id)]
