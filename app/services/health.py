"""Is anything reading, and is its model up? Workers publish a heartbeat and their engine's state
in the database (they may run on other machines); the web app, the API and `longread serve` read
it back as one `Health`.

A worker beats every HEARTBEAT_S seconds from a thread of its own, also while its engine starts
(a local vLLM server takes a minute or more). It counts as alive while its last beat is younger than
ALIVE_S; a worker killed with SIGKILL stops beating and drops out after that.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.models import Worker, utcnow

HEARTBEAT_S = 5.0
ALIVE_S = 3 * HEARTBEAT_S
#: rows of workers gone longer than this are deleted by the next beat of any worker
FORGET_AFTER = timedelta(hours=1)
ENGINE_STATES = ("starting", "ready", "failed")


def beat(session: Session, name: str, engine: str, state: str, detail: str | None = None) -> None:
    """Record that worker `name` is alive and its engine is in `state` (starting | ready | failed)."""
    if state not in ENGINE_STATES:
        raise ValueError(f"unknown engine state {state!r}")
    now = utcnow()
    w = session.get(Worker, name)
    if w is None:
        w = Worker(name=name, engine=engine, started_at=now)
        session.add(w)
    if w.engine_state != state or w.engine_since is None:
        w.engine_since = now
    w.engine, w.engine_state, w.engine_detail, w.heartbeat_at = engine, state, detail, now
    session.execute(delete(Worker).where(Worker.heartbeat_at < now - FORGET_AFTER))


def retire(session: Session, name: str) -> None:
    """A worker that stops cleanly leaves at once rather than after ALIVE_S."""
    session.execute(delete(Worker).where(Worker.name == name))


@dataclass(frozen=True)
class Health:
    #: workers whose heartbeat is fresh
    workers: int
    #: none (no worker alive) | starting | ready | failed: the best state among live workers
    engine_state: str
    #: the engine of a worker in that state (vllm-local, transformers, openai)
    engine: str | None
    #: for `failed`: the error with the last lines of the engine's log
    detail: str | None
    #: for `starting`: seconds since the engine began to start (with the worker, or when a version was activated)
    starting_for_s: float | None

    @property
    def ready(self) -> bool:
        return self.engine_state == "ready"

    def summary(self) -> str:
        """One line of plain text for a person (the page's status line, the terminal)."""
        if self.engine_state == "none":
            return (
                "No worker is running: questions wait in the queue and readings in progress are "
                "paused until one starts."
            )
        workers = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
        if self.engine_state == "ready":
            return f"Ready: the model ({self.engine}) is up ({workers} alive)."
        if self.engine_state == "starting":
            waited = f" for {int(self.starting_for_s)} s" if self.starting_for_s is not None else ""
            return (
                f"The model ({self.engine}) is starting{waited}: questions asked now wait in the queue "
                "and start as soon as it is up."
            )
        # The error's last line is where a log tail ends: what went wrong (the whole tail is in `detail`).
        lines = [line.strip() for line in (self.detail or "").splitlines() if line.strip()]
        return f"The model ({self.engine}) failed to start: {lines[-1] if lines else 'no reason given'}"


def health(session: Session, now: datetime | None = None) -> Health:
    now = now or utcnow()
    alive = list(
        session.scalars(
            select(Worker).where(Worker.heartbeat_at >= now - timedelta(seconds=ALIVE_S)).order_by(Worker.started_at)
        )
    )
    if not alive:
        return Health(0, "none", None, None, None)
    for state in ("ready", "starting", "failed"):
        found = [w for w in alive if w.engine_state == state]
        if found:
            w = found[0]
            since = w.engine_since or w.started_at
            return Health(
                workers=len(alive),
                engine_state=state,
                engine=w.engine,
                detail=w.engine_detail if state == "failed" else None,
                starting_for_s=(now - since).total_seconds() if state == "starting" else None,
            )
    raise AssertionError("unreachable: beat() stores only known states")
