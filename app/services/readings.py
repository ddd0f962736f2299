"""Readings, the records: one question on one document, and what a person does with it (ask,
cancel, retry, edit a memory and resume from it, look at it). The runner that advances readings is
app/services/runner.py.

Each action is one function here that validates, commits and enqueues after the commit, and the
API, the UI and the CLI all call that same function: `ask`, `cancel`, `retry`, `edit`, `show`,
`branches`, `document_readings`. They return detached views (app/services/views.py). The session-level
helpers below them (`create_readings`, `require_reading`, …) are for services and tests that
already hold a session.

Every function that takes an id takes the acting user (`user`, app/services/users.py): a reading is
reached through its document's owner, and another user's reading answers NotFound exactly as a
missing one does.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from app.db import session_scope
from app.documents.base import page_unit
from app.models import Checkpoint, Document, DocumentStatus, Reading, ReadingStatus, utcnow
from app.queue import request_reading_pass
from app.services.documents import require_document
from app.services.errors import NotFound, valid_id
from app.services.models import active_version
from app.services.reading_config import reading_config
from app.services.users import UserView, can_see, resolve_actor
from app.services.views import ReadingView, StepView, checkpoint_view, reading_view
from app.settings import Settings

# One set of limits for every entry point (the API's schema states the same bounds for its docs).
MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS = 16, 200_000
MIN_MEMORY_TOKENS, MAX_MEMORY_TOKENS = 8, 16_000
MAX_QUESTION_CHARS = 4000
#: questions asked together (they are read in one pass)
MAX_QUESTIONS = 64
#: an edited memory, in characters (the agent's own are at most memory_tokens tokens)
MAX_MEMORY_CHARS = 20_000


class ReadingError(ValueError):
    """A reading cannot be created or changed; the message is shown to the user."""


def check_sizes(chunk_tokens: int | None, memory_tokens: int | None) -> None:
    """Refuse chunk or memory sizes out of bounds (None: the default), with a message saying what to change."""
    for name, value, low, high in (
        ("chunk_tokens", chunk_tokens, MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS),
        ("memory_tokens", memory_tokens, MIN_MEMORY_TOKENS, MAX_MEMORY_TOKENS),
    ):
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
        if "\x00" in q:
            raise ReadingError("a question must not contain NUL characters")
    return questions


def check_memory(memory: object) -> str:
    """An edited memory, stripped; ReadingError if it is not text, empty, too long or holds NULs."""
    if not isinstance(memory, str):
        raise ReadingError("the memory must be text")
    memory = memory.strip()
    if not memory:
        raise ReadingError("the edited memory must not be empty")
    if len(memory) > MAX_MEMORY_CHARS:
        raise ReadingError(f"the edited memory may have at most {MAX_MEMORY_CHARS:,} characters (got {len(memory):,})")
    if "\x00" in memory:
        raise ReadingError("the edited memory must not contain NUL characters")
    return memory


def create_readings(
    session: Session,
    settings: Settings,
    document_id: int,
    questions: list[str],
    chunk_tokens: int | None = None,
    memory_tokens: int | None = None,
    user: UserView | None = None,
) -> list[Reading]:
    """New queued readings in `session` (flushed, not committed). Use `ask` to also commit and enqueue."""
    check_sizes(chunk_tokens, memory_tokens)
    questions = check_questions(questions)
    doc = require_document(session, document_id, user)
    if doc.status != DocumentStatus.ready:
        raise ReadingError(f"document {document_id} is not ready to read ({doc.status.value})")
    version = active_version(session)  # None: the settings' model; else read with its weights and defaults
    config = reading_config(settings, version, chunk_tokens, memory_tokens)  # validates before anything is stored
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
            memory_policy=config.memory_policy,
        )
        for q in questions
    ]
    session.add_all(readings)
    session.flush()
    return readings


def cancel_reading(session: Session, reading_id: int, user: UserView | None = None) -> Reading:
    """Stop a queued or running reading; its runner notices at its next commit."""
    r = require_reading(session, reading_id, user)
    if r.status in (ReadingStatus.queued, ReadingStatus.running):
        r.status, r.finished_at = ReadingStatus.cancelled, utcnow()
    return r


def retry_reading(session: Session, reading_id: int, user: UserView | None = None) -> Reading:
    """Queue a failed or cancelled reading again; it resumes after its last checkpoint."""
    r = require_reading(session, reading_id, user)
    if r.status not in (ReadingStatus.failed, ReadingStatus.cancelled):
        raise ReadingError(f"reading {reading_id} is {r.status.value}; only failed or cancelled readings are retried")
    # attempts: the count of workers that stopped on it (the cap, settings.max_attempts) starts again
    r.status, r.error, r.finished_at, r.attempts = ReadingStatus.queued, None, None, 0
    return r


def branch_reading(
    session: Session,
    reading_id: int,
    step: int,
    memory: str,
    edited_by: str | None = None,
    user: UserView | None = None,
) -> Reading:
    """A new queued reading that shares `reading_id`'s steps before `step`, has `memory` as its own
    checkpoint at `step` (origin `edited`) and reads on from the next chunk (flushed, not committed).
    The original and its checkpoints are not touched; editing the last step only re-answers."""
    memory = check_memory(memory)
    parent = require_reading(session, reading_id, user)
    steps = parent.timeline()
    if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= len(steps):
        have = f"steps 1 to {len(steps)}" if steps else "no checkpoint yet"
        raise ReadingError(f"reading {reading_id} has {have}: it has no step {step} to edit")
    edited = steps[step - 1]
    branch = Reading(
        document_id=parent.document_id,
        question=parent.question,
        model=parent.model,
        model_version_id=parent.model_version_id,
        chunk_tokens=parent.chunk_tokens,
        memory_tokens=parent.memory_tokens,
        answer_tokens=parent.answer_tokens,
        template_set=parent.template_set,
        memory_policy=parent.memory_policy,
        parent_reading_id=parent.id,
        branched_at_step=step,
        cursor=step,
        total_chunks=parent.total_chunks,
    )
    session.add(branch)
    session.flush()
    session.add(
        Checkpoint(
            reading_id=branch.id,
            step=step,
            memory=memory,
            start_token=edited.start_token,
            end_token=edited.end_token,
            start_char=edited.start_char,
            end_char=edited.end_char,
            first_page=edited.first_page,
            last_page=edited.last_page,
            origin="edited",
            edited_by=(edited_by or "")[:200] or None,
            prompt_tokens=0,
            completion_tokens=0,
            seconds=0.0,
        )
    )
    session.flush()
    session.refresh(branch)
    return branch


def descendants(session: Session, reading_id: int, user: UserView | None = None) -> list[Reading]:
    """The reading's branches, their branches, and so on, by id; NotFound if there is no such reading.
    (Branches share their reading's document, so its owner.)"""
    require_reading(session, reading_id, user)
    found: list[Reading] = []
    frontier = [reading_id]
    while frontier:
        children = list(session.scalars(select(Reading).where(Reading.parent_reading_id.in_(frontier))))
        found += children
        frontier = [c.id for c in children]
    return sorted(found, key=lambda r: r.id)


def require_reading(session: Session, reading_id: int, user: UserView | None = None) -> Reading:
    """The reading, or NotFound: also when its document is another user's (the same answer as a
    missing one). `user` None: the system itself."""
    r = get_reading(session, reading_id, user)
    if r is None:
        raise NotFound(f"no reading {reading_id}")
    return r


def get_reading(session: Session, reading_id: int, user: UserView | None = None) -> Reading | None:
    r = session.get(Reading, reading_id) if valid_id(reading_id) else None
    return r if r is not None and can_see(user, r.document.owner_id) else None


def list_readings(session: Session, document_id: int, user: UserView | None = None) -> list[Reading]:
    """The document's readings, newest first; NotFound if there is no such document (or not the user's)."""
    require_document(session, document_id, user)
    return list(
        session.scalars(
            select(Reading)
            .where(Reading.document_id == document_id)
            .order_by(Reading.id.desc())
            .options(selectinload(Reading.checkpoints))
        )
    )


# --- the use cases: one transaction each, enqueued after the commit ---------------------------------


def ask(
    settings: Settings,
    document_id: int,
    questions: list[str],
    chunk_tokens: int | None = None,
    memory_tokens: int | None = None,
    *,
    enqueue: bool = True,
    user: UserView | None = None,
) -> list[ReadingView]:
    """Ask questions of a document: one reading each, committed, then a worker asked to read them
    (`enqueue=False`: the caller reads them itself, as `longread ask` does)."""
    with session_scope(settings.resolved_database_url) as s:
        rs = create_readings(
            s, settings, document_id, questions, chunk_tokens, memory_tokens, resolve_actor(s, settings, user)
        )
        views = [reading_view(r, settings.stale_after_s) for r in rs]
    # Committed before enqueueing, so the worker always finds the readings.
    if enqueue:
        request_reading_pass(settings)
    return views


def cancel(settings: Settings, reading_id: int, *, user: UserView | None = None) -> ReadingView:
    """Stop a queued or running reading (a finished one is left as it is)."""
    with session_scope(settings.resolved_database_url) as s:
        return reading_view(cancel_reading(s, reading_id, resolve_actor(s, settings, user)), settings.stale_after_s)


def retry(settings: Settings, reading_id: int, *, enqueue: bool = True, user: UserView | None = None) -> ReadingView:
    """Queue a failed or cancelled reading again, to resume after its last checkpoint."""
    with session_scope(settings.resolved_database_url) as s:
        view = reading_view(retry_reading(s, reading_id, resolve_actor(s, settings, user)), settings.stale_after_s)
    if enqueue:
        request_reading_pass(settings)
    return view


def edit(
    settings: Settings,
    reading_id: int,
    step: int,
    memory: str,
    edited_by: str | None = None,
    *,
    enqueue: bool = True,
    user: UserView | None = None,
) -> ReadingView:
    """Edit the memory at `step` and resume from it: a new branch reading (returned), committed, then
    a worker asked to read it (`enqueue=False`: the caller reads it, as `longread edit` does)."""
    with session_scope(settings.resolved_database_url) as s:
        actor = resolve_actor(s, settings, user)
        view = reading_view(branch_reading(s, reading_id, step, memory, edited_by, actor), settings.stale_after_s)
    if enqueue:
        request_reading_pass(settings)
    return view


def branches(settings: Settings, reading_id: int, *, user: UserView | None = None) -> list[ReadingView]:
    """Every branch made from the reading, and branches of those (a tree: follow parent_reading_id), by id."""
    with session_scope(settings.resolved_database_url) as s:
        return [
            reading_view(r, settings.stale_after_s)
            for r in descendants(s, reading_id, resolve_actor(s, settings, user))
        ]


def show(
    settings: Settings, reading_id: int, *, with_chunks: bool = False, user: UserView | None = None
) -> ReadingView:
    """A reading with its checkpoints (`with_chunks`: and the text of the chunk each one read); NotFound if none."""
    with session_scope(settings.resolved_database_url) as s:
        r = require_reading(s, reading_id, resolve_actor(s, settings, user))
        return reading_view(r, settings.stale_after_s, with_chunks=with_chunks)


def positions(
    settings: Settings, reading_ids: list[int], *, user: UserView | None = None
) -> dict[int, tuple[str, int]]:
    """Each reading's status and cursor, in one light query (no checkpoints): what a view that follows readings
    compares to tell which moved before it loads them. Missing: readings deleted, or not the user's."""
    with session_scope(settings.resolved_database_url) as s:
        actor = resolve_actor(s, settings, user)
        rows = s.execute(
            select(Reading.id, Reading.status, Reading.cursor, Document.owner_id)
            .join(Document)
            .where(Reading.id.in_([i for i in reading_ids if valid_id(i)]))
        )
        return {i: (status.value, cursor or 0) for i, status, cursor, owner in rows if can_see(actor, owner)}


def step_count(settings: Settings, reading_id: int, *, user: UserView | None = None) -> int:
    """How many steps the reading's timeline has, in one light query (no checkpoint is loaded): its own
    checkpoints and, a branch, the steps before the edited one it shares (`Reading.timeline`). NotFound if none."""
    own = select(func.count()).where(Checkpoint.reading_id == Reading.id).scalar_subquery()
    with session_scope(settings.resolved_database_url) as s:
        actor = resolve_actor(s, settings, user)
        row = (
            s.execute(
                select(Reading.parent_reading_id, Reading.branched_at_step, Document.owner_id, own)
                .join(Document)
                .where(Reading.id == reading_id)
            ).first()
            if valid_id(reading_id)
            else None
        )
    if row is None or not can_see(actor, row.owner_id):
        raise NotFound(f"no reading {reading_id}")
    parent, at, _, n = row
    return n + (at - 1 if parent is not None and at is not None else 0)


def step(settings: Settings, reading_id: int, k: int, *, user: UserView | None = None) -> StepView:
    """Step `k` (1-based) of the reading's timeline with the text of the chunk it read and the memory
    before it: one step's text at a time, so that a reading of hundreds of steps stays light."""
    with session_scope(settings.resolved_database_url) as s:
        r = require_reading(s, reading_id, resolve_actor(s, settings, user))
        steps = r.timeline()
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(steps):
            have = f"steps 1 to {len(steps)}" if steps else "no checkpoint yet"
            raise ReadingError(f"reading {reading_id} has {have}: no step {k}")
        chosen = checkpoint_view(steps[k - 1], r.document.text or "")
        return StepView(
            reading_id=r.id,
            steps=len(steps),
            checkpoint=chosen,
            previous_memory=steps[k - 2].memory if k > 1 else None,
            page_unit=page_unit(r.document.format),
            page_labels=list(r.document.page_labels or []),
            parent_reading_id=r.parent_reading_id,
            branched_at_step=r.branched_at_step,
        )


def document_readings(settings: Settings, document_id: int, *, user: UserView | None = None) -> list[ReadingView]:
    """The document's readings, newest first; NotFound if there is no such document (or not the user's)."""
    with session_scope(settings.resolved_database_url) as s:
        return [
            reading_view(r, settings.stale_after_s)
            for r in list_readings(s, document_id, resolve_actor(s, settings, user))
        ]
