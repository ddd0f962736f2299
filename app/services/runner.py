"""The runner: claims readings, advances them chunk by chunk (one batched engine call per step) and
commits every step.

Every step commits the new memory as a checkpoint together with the reading's cursor in one
transaction, guarded by the cursor it started from. Running a reading again therefore resumes
after its last checkpoint, and two runners can never write the same step twice. What a reading is
(created, cancelled, retried) is app/services/readings.py; this module only moves readings along.

Faults: a runner that dies leaves its readings running; their heartbeat goes stale and any worker's
pass takes them up (`attempts` counts the claims), until `settings.max_attempts` runners stopped on one:
then it fails with an error saying so (`crash_error`), and a person's retry starts the count again. An
unreachable model server (`EngineUnavailable`, after the engine's own retries) or a lost database
connection is no crash: the pass ends and its readings go back to the queue uncounted, the former
with the note `WAITING_FOR_ENGINE`, for the sweepers to try again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import case, func, select, tuple_, update
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session

from app.db import session_scope
from app.documents.parsing import page_of
from app.models import Checkpoint, ModelVersion, Reading, ReadingStatus, utcnow
from app.services.corrections import correction, keep
from app.services.llm import engine_for
from app.services.models import serving_settings
from app.settings import Settings
from inference.agent import AgentConfig, MemoryAgent
from inference.chunking import Chunk, split_into_chunks
from inference.engines.base import Completion, Engine, EngineUnavailable

log = logging.getLogger(__name__)

#: the database went away (restarted, network): transient, like an engine outage
_DB_GONE = (OperationalError, InterfaceError)
#: the note a reading carries while it waits, queued, for the model server to come back
WAITING_FOR_ENGINE = "waiting for the model server"


@dataclass
class _Live:
    """A reading in flight: what the loop needs between commits."""

    id: int
    config: AgentConfig
    #: the model version it is read with (None: the settings' model) and that version's engine
    version_id: int | None
    engine: Engine
    question: str
    text: str
    page_starts: list[int]
    chunks: list[Chunk]
    cursor: int
    memory: str | None
    #: what a person wrote in the memory and the reader must keep (app/services/corrections.py)
    pinned: str | None = None


def _claimable(settings: Settings, explicit: bool):  # an SQL condition
    """Queued readings, and running ones whose runner's heartbeat went stale; a reading that
    failed is resumed only when asked for by id (the CLI, a user's retry)."""
    stale = utcnow() - timedelta(seconds=settings.stale_after_s)
    cond = (Reading.status == ReadingStatus.queued) | (
        (Reading.status == ReadingStatus.running) & ((Reading.heartbeat_at < stale) | Reading.heartbeat_at.is_(None))
    )
    return cond | (Reading.status == ReadingStatus.failed) if explicit else cond


def crash_error(attempts: int, max_attempts: int, cursor: int, total_chunks: int | None) -> str | None:
    """What a reading left running by a runner that stopped (its heartbeat went stale) says when it has
    been taken up `attempts` times since it was last queued by a person, each time ending that way:
    None to take it up again, else the error it fails with, once `max_attempts` runners stopped on it
    (a document that crashes every worker that reads it must not crash them forever)."""
    if attempts < max_attempts:
        return None
    where = f"chunk {cursor + 1}" + (f" of {total_chunks}" if total_chunks else "")
    return (
        f"the worker stopped {attempts} time{'s' if attempts != 1 else ''} while reading this (last at {where}; "
        f"killed, out of memory or crashed: its log says why); resume to try again from the last checkpoint"
    )


#: the engine that serves a model version's weights (None: the settings' model)
EngineOf = Callable[[int | None], Engine]


def _engines(settings: Settings, engine: Engine | None) -> EngineOf:
    """`engine` for every version when one is given; else each version's own engine (engine_for keeps
    one per model folder and settings, so a version activated since the worker started gets its own
    and readings begun on an older version finish on it)."""
    if engine is not None:
        return lambda _version_id: engine
    served: dict[int | None, Engine] = {}

    def engine_of(version_id: int | None) -> Engine:
        if version_id not in served:
            with session_scope(settings.resolved_database_url) as s:
                version = s.get(ModelVersion, version_id) if version_id is not None else None
            served[version_id] = engine_for(serving_settings(settings, version))
        return served[version_id]

    return engine_of


def _claim(
    settings: Settings,
    engines: EngineOf,
    ids: set[int] | None,
    limit: int,
    chunk_cache: dict[tuple, list[Chunk]],
    heartbeat: _Heartbeat,
) -> list[_Live]:
    """Take up to `limit` readings for this runner. Each claim is a guarded UPDATE, so two
    workers never take the same reading. Ids tried are removed from `ids`: a reading asked for by id
    is tried once a pass (one that fails, being claimable by id, would else be taken up every step).
    Each reading claimed joins the heartbeat at once: loading the next one's model version can outlast
    `stale_after_s`, and another worker would take it over."""
    url = settings.resolved_database_url
    claimed = []
    if ids is not None and not ids:
        return claimed
    with session_scope(url) as s:
        query = (
            select(Reading.id, Reading.model_version_id)
            .where(_claimable(settings, explicit=ids is not None))
            .order_by(Reading.id)
        )
        if ids is not None:
            query = query.where(Reading.id.in_(ids))
        candidates = s.execute(query.limit(limit)).all()
        if ids is None:  # readings whose runners keep stopping fail here rather than stop another one
            candidates = _fail_crashed(s, settings, candidates)
        else:
            ids.difference_update(reading_id for reading_id, _ in candidates)
    for reading_id, version_id in candidates:
        try:  # outside any transaction: a version's first merge or server start takes a while
            engine = engines(version_id)
        except Exception as exc:
            log.exception("cannot serve model version %s for reading %s", version_id, reading_id)
            what = f"model version {version_id}" if version_id is not None else "the model"
            _fail_unclaimed(settings, reading_id, ids is not None, what, exc)
            continue
        with session_scope(url) as s:
            now = utcnow()
            taken = s.execute(
                update(Reading)
                .where(Reading.id == reading_id, _claimable(settings, explicit=ids is not None))
                .values(status=ReadingStatus.running, heartbeat_at=now, error=None, attempts=Reading.attempts + 1)
            ).rowcount
            if taken != 1:
                continue
            heartbeat.hold(reading_id)
            r = s.get(Reading, reading_id)
            log.info("claimed reading %d at chunk %d (attempt %d)", r.id, r.cursor + 1, r.attempts)
            config = _agent_config(r)
            key = (r.document_id, r.chunk_tokens, version_id, config.whole_sentences)
            if key not in chunk_cache:
                chunk_cache[key] = split_into_chunks(
                    r.document.text or "", engine.tokenizer, r.chunk_tokens, whole_sentences=config.whole_sentences
                )
            r.total_chunks = len(chunk_cache[key])
            r.started_at = r.started_at or now
            # The memory to read on from: the last step, a branch's edited one included (Reading.timeline).
            steps = r.timeline()
            memory = steps[-1].memory if steps else None
            claimed.append(
                _Live(
                    r.id,
                    config,
                    version_id,
                    engine,
                    r.question,
                    r.document.text or "",
                    r.document.page_starts,
                    chunk_cache[key],
                    r.cursor,
                    memory,
                    correction(r),
                )
            )
    return claimed


def _fail_crashed(s: Session, settings: Settings, candidates: list) -> list:
    """The candidates minus the stale running readings that reached the attempts cap, which are failed
    (guarded: only while still stale) with an error that says what happened."""
    keep = []
    stale = utcnow() - timedelta(seconds=settings.stale_after_s)
    for row in candidates:
        r = s.get(Reading, row[0])
        error = None
        if r.status == ReadingStatus.running:
            error = crash_error(r.attempts, settings.max_attempts, r.cursor, r.total_chunks)
        if error is None:
            keep.append(row)
            continue
        failed = s.execute(
            update(Reading)
            .where(
                Reading.id == r.id,
                Reading.status == ReadingStatus.running,
                (Reading.heartbeat_at < stale) | Reading.heartbeat_at.is_(None),
            )
            .values(status=ReadingStatus.failed, error=error, finished_at=utcnow())
            .execution_options(synchronize_session=False)
        ).rowcount
        if failed:
            log.error("reading %d failed: %s", r.id, error)
    return keep


def _agent_config(r: Reading) -> AgentConfig:
    return AgentConfig.of(r)


def run_readings(settings: Settings, reading_ids: list[int] | None = None, engine: Engine | None = None) -> int:
    """Advance readings to the end, all together: each step makes one batched engine call per
    group of readings with the same agent settings, whatever document or chunk each is on.

    With `reading_ids`, exactly those (failed or interrupted ones resume at their cursor; done or
    cancelled ones are skipped). Without, every queued or stalled reading, and readings queued
    while the pass is under way join it at the next step. Up to `settings.max_batch` at once: the
    rest join at the next step after others finish.
    Returns how many readings this call finished.
    """
    engines = _engines(settings, engine)
    url = settings.resolved_database_url
    chunk_cache: dict[tuple, list[Chunk]] = {}
    heartbeat = _Heartbeat(url, settings.stale_after_s / 4)
    try:
        return _run(settings, engines, reading_ids, chunk_cache, heartbeat)
    finally:
        heartbeat.stop()


class _Heartbeat:
    """Keeps the heartbeat of the readings this runner holds fresh while the runner lives, however
    long a step takes; readings of a runner that died go stale within `stale_after_s` and are taken
    over (the sweeper of any live worker)."""

    def __init__(self, url: str, interval_s: float):
        self.url, self.interval_s = url, interval_s
        self.ids: frozenset[int] = frozenset()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reading-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            ids = self.ids
            if not ids:
                continue
            try:
                with session_scope(self.url) as s:
                    s.execute(
                        update(Reading)
                        .where(Reading.id.in_(ids), Reading.status == ReadingStatus.running)
                        .values(heartbeat_at=utcnow())
                    )
            except Exception:  # a database hiccup must not end the heartbeat
                log.exception("could not refresh the heartbeat of readings %s", sorted(ids))

    def hold(self, reading_id: int) -> None:
        """One more reading kept fresh (the loop sets `ids` to those in flight at every step)."""
        self.ids = self.ids | {reading_id}

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _run(
    settings: Settings,
    engines: EngineOf,
    reading_ids: list[int] | None,
    chunk_cache: dict[tuple, list[Chunk]],
    heartbeat: _Heartbeat,
) -> int:
    url = settings.resolved_database_url
    todo = None if reading_ids is None else set(reading_ids)  # by id: those not tried yet this pass
    live = _claim(settings, engines, todo, settings.max_batch, chunk_cache, heartbeat)
    finished = 0
    try:
        while live:
            heartbeat.ids = frozenset(x.id for x in live)
            groups: dict[tuple[int | None, AgentConfig], list[_Live]] = {}
            for x in live:  # one batch per model version and agent settings
                groups.setdefault((x.version_id, x.config), []).append(x)
            for (_, config), group in groups.items():
                try:
                    done = _step(url, MemoryAgent(group[0].engine, config), group)
                except (EngineUnavailable, *_DB_GONE):
                    raise  # transient: handled below
                except Exception as exc:
                    _fail(url, [x.id for x in live], exc)
                    raise
                finished += len(done)
                live = [x for x in live if x.id not in done]
            if len(live) < settings.max_batch:  # by id: the rest of those ids (more than max_batch were asked)
                live += _claim(settings, engines, todo, settings.max_batch - len(live), chunk_cache, heartbeat)
    except EngineUnavailable as exc:
        # An outage, not a crash and not the reading's fault: its checkpoints stay, it goes back to the
        # queue with a note that says why it waits, and the sweeper of any worker tries again later.
        # Run by id (the CLI reads them itself), it fails with the reason instead; retry resumes it.
        if reading_ids is not None:
            _fail(url, [x.id for x in live], exc)
            raise
        log.warning("the model server is unreachable; %d readings wait for it in the queue: %s", len(live), exc)
        _release(url, [x.id for x in live], f"{WAITING_FOR_ENGINE}: {exc}", settings.stale_after_s)
    except _DB_GONE as exc:
        # The database went away mid-step (restarted): what was committed stays; put the readings back
        # in the queue as soon as it answers again, else their heartbeat goes stale and another runner
        # (counting an attempt) takes them over.
        log.warning(
            "lost the database mid-reading (%s); putting %d readings back in the queue", type(exc).__name__, len(live)
        )
        heartbeat.ids = frozenset()
        _release(url, [x.id for x in live], None, settings.stale_after_s)
        if reading_ids is not None:
            raise
    return finished


def _release(url: str, ids: list[int], note: str | None, patience_s: float) -> None:
    """Readings this runner holds back to the queue, not counted as an attempt, with `note` as what
    they wait for; retried for up to `patience_s` while the database does not answer."""
    if not ids:
        return
    deadline = time.monotonic() + patience_s
    while True:
        try:
            with session_scope(url) as s:
                s.execute(
                    update(Reading)
                    .where(Reading.id.in_(ids), Reading.status == ReadingStatus.running)
                    .values(
                        status=ReadingStatus.queued,
                        error=note,
                        attempts=case((Reading.attempts > 0, Reading.attempts - 1), else_=0),
                    )
                )
            return
        except _DB_GONE:
            if time.monotonic() > deadline:
                log.exception(
                    "could not put readings %s back in the queue; they go stale and are taken over", sorted(ids)
                )
                return
            time.sleep(0.5)


def _step(url: str, agent: MemoryAgent, group: list[_Live]) -> set[int]:
    """Read the next chunk of every reading in `group`, answer those that reached the end.
    Returns the ids that left the loop (answered, cancelled, or taken over by another runner)."""
    gone: set[int] = set()
    reading = [x for x in group if x.cursor < len(x.chunks)]
    if reading:
        started = time.monotonic()
        items = [(x.question, x.memory, x.chunks[x.cursor].text(x.text)) for x in reading]
        completions = agent.update(items, documents=[x.text for x in reading])
        gone |= _commit_steps(url, list(zip(reading, completions)), time.monotonic() - started)
    finishing = [x for x in group if x.cursor >= len(x.chunks) and x.id not in gone]
    if finishing:
        answers = agent.answer([(x.question, x.memory) for x in finishing])
        _commit_answers(url, [(x, a.answer, a.output) for x, a in zip(finishing, answers)])
        gone |= {x.id for x in finishing}
    return gone


def _commit_steps(url: str, steps: list[tuple[_Live, Completion]], seconds: float) -> set[int]:
    """Every reading's checkpoint of one step, in one transaction and one UPDATE: a review's 41 readings committed
    one at a time took most of its reading on SQLite (docs/experiments/2026-12-07-yes-by-capture.md). A reading
    whose row did not move (cancelled, or taken over by another runner) stores nothing; its id is returned."""
    with session_scope(url) as s:
        moved = set(
            s.scalars(
                update(Reading)
                .where(
                    tuple_(Reading.id, Reading.cursor).in_([(x.id, x.cursor) for x, _ in steps]),
                    Reading.status == ReadingStatus.running,
                )
                .values(cursor=Reading.cursor + 1, heartbeat_at=utcnow())
                .returning(Reading.id)
                .execution_options(synchronize_session=False)
            )
        )
        stored = [(x, keep(c.text, x.pinned), c) for x, c in steps if x.id in moved]
        s.add_all(_checkpoint(x, memory, c, seconds) for x, memory, c in stored)
    for x, memory, _ in stored:  # committed: the readings move on
        x.cursor += 1
        x.memory = memory
    return {x.id for x, _ in steps} - moved


def _checkpoint(x: _Live, memory: str, completion: Completion, seconds: float) -> Checkpoint:
    chunk = x.chunks[x.cursor]
    return Checkpoint(
        reading_id=x.id,
        step=x.cursor + 1,
        memory=memory,
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


def _commit_answers(url: str, answered: list[tuple[_Live, str, str]]) -> None:
    with session_scope(url) as s:
        for x, answer, output in answered:
            s.execute(
                update(Reading)
                .where(Reading.id == x.id, Reading.status == ReadingStatus.running)
                .values(
                    status=ReadingStatus.done,
                    answer=answer,
                    final_output=output,
                    finished_at=utcnow(),
                    heartbeat_at=utcnow(),
                )
            )


def _fail(url: str, ids: list[int], exc: Exception) -> None:
    with session_scope(url) as s:
        s.execute(
            update(Reading)
            .where(Reading.id.in_(ids), Reading.status == ReadingStatus.running)
            .values(status=ReadingStatus.failed, error=f"{type(exc).__name__}: {exc}")
        )


def _fail_unclaimed(settings: Settings, reading_id: int, explicit: bool, what: str, exc: Exception) -> None:
    """A reading this runner could not take because `what` failed: failed with the reason (a retry resumes it)."""
    with session_scope(settings.resolved_database_url) as s:
        s.execute(
            update(Reading)
            .where(Reading.id == reading_id, _claimable(settings, explicit))
            .values(status=ReadingStatus.failed, error=f"cannot load {what}: {type(exc).__name__}: {exc}")
        )


def count_claimable(session: Session, settings: Settings) -> int:
    """Readings a worker's pass would take now: queued, or running with a stale heartbeat."""
    return session.scalar(select(func.count()).select_from(Reading).where(_claimable(settings, explicit=False)))
