"""A real Celery worker process with the real SmolLM2 model consumes readings: through the
embedded SQLite broker, through Redis (with PostgreSQL), and after being killed mid-reading."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from app.cli import worker_command
from app.db import session_scope
from app.migrate import upgrade
from app.models import ReadingStatus
from app.queue import request_reading_pass
from app.services.documents import ingest
from app.services.readings import create_readings, get_reading
from app.services.views import reading_progress
from app.settings import Settings
from tests.conftest import LIGHTHOUSE, MODEL_CACHE
from tests.processes import WorkerGroup, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.model, pytest.mark.waits]  # tests/suite.py: beside the model side

STORY = LIGHTHOUSE * 3


def _settings(tmp_path: Path, database_url: str, broker_url: str) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        broker_url=broker_url,
        model_cache_dir=MODEL_CACHE,
        chunk_tokens=96,
        memory_tokens=32,
        answer_tokens=16,
        stale_after_s=3,
    )


def _env(s: Settings) -> dict[str, str]:
    return {
        **os.environ,
        "LONGREAD_DATA_DIR": str(s.data_dir),
        "LONGREAD_DATABASE_URL": s.database_url,
        "LONGREAD_BROKER_URL": s.broker_url,
        "LONGREAD_MODEL_CACHE_DIR": str(s.model_cache_dir),
        "LONGREAD_STALE_AFTER_S": str(s.stale_after_s),
        "OMP_NUM_THREADS": "1",
        # In-process model: these tests are about the queue, and a vLLM start per worker would add
        # a minute each (the browser test runs the default vllm-local engine through a worker).
        "LONGREAD_ENGINE": "transformers",
    }


def Worker(settings: Settings, log: Path) -> WorkerGroup:
    return WorkerGroup(worker_command(), _env(settings), log)


def _ask(s: Settings, questions: list[str]) -> list[int]:
    upgrade(s.resolved_database_url)
    with session_scope(s.resolved_database_url) as db:
        doc = ingest(db, s, "lighthouse.txt", STORY.encode())
        ids = [r.id for r in create_readings(db, s, doc.id, questions)]
    request_reading_pass(s)
    return ids


def _statuses(s: Settings, ids: list[int]) -> list[ReadingStatus]:
    with session_scope(s.resolved_database_url) as db:
        return [get_reading(db, i).status for i in ids]


def _assert_complete(s: Settings, ids: list[int]) -> None:
    with session_scope(s.resolved_database_url) as db:
        for i in ids:
            r = get_reading(db, i)
            assert r.status == ReadingStatus.done, r.error
            assert r.total_chunks >= 3
            assert [c.step for c in r.checkpoints] == list(range(1, r.total_chunks + 1))
            assert all(c.memory.strip() for c in r.checkpoints)  # the real model wrote something
            assert r.final_output and r.answer


def _run(s: Settings, tmp_path: Path) -> None:
    ids = _ask(s, ["Where is the spare key to the lamp room?", "How many steps does Mara climb?"])
    worker = Worker(s, tmp_path / "worker.log")
    try:
        wait_for(lambda: all(st == ReadingStatus.done for st in _statuses(s, ids)), 400, worker, "readings")
    finally:
        worker.stop()
    _assert_complete(s, ids)


def test_worker_with_embedded_broker(tmp_path):
    s = _settings(tmp_path, f"sqlite:///{tmp_path / 'app.db'}", f"sqla+sqlite:///{tmp_path / 'broker.db'}")
    _run(s, tmp_path)


def test_worker_with_redis_and_postgres(tmp_path, own_postgres_url, redis_url):
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    # its own database: the session's holds other tests' queued readings, which the worker would read too
    _run(_settings(tmp_path, own_postgres_url, redis_url), tmp_path)


def test_killed_worker_is_resumed_from_the_last_checkpoint(tmp_path):
    s = _settings(tmp_path, f"sqlite:///{tmp_path / 'app.db'}", f"sqla+sqlite:///{tmp_path / 'broker.db'}")
    (reading_id,) = _ask(s, ["Where is the spare key to the lamp room?"])

    def checkpoints() -> int:
        with session_scope(s.resolved_database_url) as db:
            return len(get_reading(db, reading_id).checkpoints)

    first = Worker(s, tmp_path / "worker1.log")
    try:
        wait_for(lambda: checkpoints() >= 2, 300, first, "two checkpoints")
    finally:
        first.kill()
    killed_at = datetime.now(timezone.utc)
    done_before = checkpoints()
    time.sleep(s.stale_after_s + 1)  # let the heartbeat go stale, as after a real crash

    second = Worker(s, tmp_path / "worker2.log")
    try:
        wait_for(lambda: _statuses(s, [reading_id]) == [ReadingStatus.done], 400, second, "resumed reading")
    finally:
        second.stop()
    _assert_complete(s, [reading_id])
    with session_scope(s.resolved_database_url) as db:
        r = get_reading(db, reading_id)
        assert r.attempts == 2
        resumed = [c for c in r.checkpoints if c.step > done_before]
        assert resumed and all(c.created_at.replace(tzinfo=timezone.utc) > killed_at for c in resumed)
        # The time nobody read it (the dead worker, the stale window) is waiting, not reading.
        p = reading_progress(r, s.stale_after_s)
        assert p.waiting_s >= s.stale_after_s + 1
        assert p.reading_s + p.waiting_s == pytest.approx(p.elapsed_s)
        assert p.reading_s >= sum(c.seconds for c in r.checkpoints)
    assert "1 readings wait with no pass running" in (tmp_path / "worker2.log").read_text()


def test_killed_worker_resumes_a_branch_and_never_touches_its_parent(tmp_path, tokenizer):
    """Edit and resume through a real worker: the branch (edited at step 1) is read by the worker,
    the worker is killed mid-branch, another takes it up after the heartbeat goes stale and finishes
    it from the branch's last checkpoint; the parent's rows never change."""
    from app.models import Checkpoint
    from app.services import readings
    from app.services.runner import run_readings
    from tests.fakes import FakeEngine

    s = _settings(tmp_path, f"sqlite:///{tmp_path / 'app.db'}", f"sqla+sqlite:///{tmp_path / 'broker.db'}")
    upgrade(s.resolved_database_url)
    with session_scope(s.resolved_database_url) as db:
        doc = ingest(db, s, "lighthouse.txt", STORY.encode())
        (parent,) = [r.id for r in create_readings(db, s, doc.id, ["Where is the spare key to the lamp room?"])]
    # The parent is read quickly by a scripted engine (same tokenizer, same chunks as the worker's model).
    run_readings(s, [parent], FakeEngine(tokenizer, lambda p: "notes" if "<section>" in p else "\\boxed{nowhere}"))

    def rows(reading_id: int) -> list[tuple]:
        with session_scope(s.resolved_database_url) as db:
            return [
                (c.id, c.step, c.memory, c.origin)
                for c in db.query(Checkpoint).filter_by(reading_id=reading_id).order_by(Checkpoint.step)
            ]

    before = rows(parent)
    assert len(before) >= 4
    branch = readings.edit(s, parent, 1, "The spare key to the lamp room hangs behind the barometer.").id

    first = Worker(s, tmp_path / "worker1.log")
    try:
        wait_for(lambda: len(rows(branch)) >= 2, 300, first, "the branch's first new checkpoint")
    finally:
        first.kill()
    done_before = len(rows(branch))
    time.sleep(s.stale_after_s + 1)  # let the heartbeat go stale, as after a real crash

    second = Worker(s, tmp_path / "worker2.log")
    try:
        wait_for(lambda: _statuses(s, [branch]) == [ReadingStatus.done], 400, second, "resumed branch")
    finally:
        second.stop()
    got = readings.show(s, branch)
    assert got.answer
    assert [c.step for c in got.checkpoints] == list(range(1, len(before) + 1))
    assert [c.origin for c in got.checkpoints] == ["edited"] + ["agent"] * (len(before) - 1)
    assert all(c.memory.strip() for c in got.checkpoints)  # the real model wrote something
    assert len(rows(branch)) == len(before) > done_before  # the second worker wrote the rest
    assert rows(parent) == before
    with session_scope(s.resolved_database_url) as db:
        assert get_reading(db, branch).attempts == 2
