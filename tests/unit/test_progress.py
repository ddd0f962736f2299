"""A reading's progress keeps the time the agent spent reading apart from the time it waited (in the
queue, for a worker that died): elapsed, reading and waiting time, and an ETA only while it reads."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from app.models import Checkpoint, Reading, ReadingStatus
from app.services.views import reading_progress

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def reading(steps: list[tuple[float, float]], **kw) -> Reading:
    """Asked at T0, started 2 s later; `steps`: (committed at, seconds) of each checkpoint."""
    r = Reading(created_at=T0, started_at=at(2), total_chunks=10, cursor=len(steps), **kw)
    r.checkpoints = [Checkpoint(step=i + 1, seconds=sec, created_at=at(t)) for i, (t, sec) in enumerate(steps)]
    return r


STEPS = [(12, 10.0), (22, 10.0), (32, 10.0)]


def test_a_reading_whose_worker_died_counts_the_wait_as_waiting_not_reading():
    # Three 10-s steps, then the worker died after step 3 (its last heartbeat); now is 5 minutes on.
    r = reading(STEPS, status=ReadingStatus.running, heartbeat_at=at(32))
    p = reading_progress(r, stale_after_s=30, now=at(332))
    assert p.stalled
    assert p.reading_s == 30.0  # the three steps, not the 5 minutes
    assert p.waiting_s == 302.0  # 2 s in the queue, 300 s for a worker
    assert p.elapsed_s == 332.0
    assert p.eta_s is None  # no pace to promise while nothing reads it


def test_a_reading_under_way_counts_its_current_step_as_reading():
    r = reading(STEPS, status=ReadingStatus.running, heartbeat_at=at(35))
    p = reading_progress(r, stale_after_s=30, now=at(38))
    assert not p.stalled
    assert p.reading_s == 36.0 and p.waiting_s == 2.0  # 6 s into step 4
    assert p.eta_s == 70.0  # 7 chunks left at 10 s each


def test_a_resumed_reading_that_finished_keeps_the_wait_apart():
    # Steps 1-2, a dead worker for 200 s, then steps 3-4 and the answer (3 s).
    r = reading(
        [(12, 10.0), (22, 10.0), (232, 10.0), (242, 10.0)],
        status=ReadingStatus.done,
        finished_at=at(245),
        heartbeat_at=at(245),
    )
    r.total_chunks = 4
    p = reading_progress(r, stale_after_s=30, now=at(1000))
    assert (p.reading_s, p.waiting_s, p.elapsed_s, p.eta_s) == (43.0, 202.0, 245.0, None)


def test_a_queued_reading_is_all_waiting():
    r = Reading(created_at=T0, status=ReadingStatus.queued, cursor=0)
    r.checkpoints = []
    p = reading_progress(r, stale_after_s=30, now=at(50))
    assert (p.reading_s, p.waiting_s, p.eta_s, p.stalled) == (None, 50.0, None, False)
