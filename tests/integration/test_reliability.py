"""The runner under faults, against a real database with a scripted engine: the attempts cap, engine
outages (the readings wait in the queue, not counted as crashes) and resuming after the cap.
tests/faults/ runs the same with real processes."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from app.db import session_scope
from app.models import ReadingStatus, utcnow
from app.services import readings as reading_service
from app.services.documents import ingest
from app.services.readings import create_readings, get_reading
from app.services.runner import WAITING_FOR_ENGINE, count_claimable, run_readings
from app.settings import Settings
from inference.engines.base import EngineUnavailable
from tests.fakes import FakeEngine
from tests.integration.test_reading_service import TEXT, echo_last_line

pytestmark = pytest.mark.integration


@pytest.fixture
def db_settings(db_settings: Settings) -> Settings:
    """The folder's settings (a database of the test's own: a pass here takes every queued reading
    there is), with a cap of two attempts."""
    return db_settings.model_copy(update={"max_attempts": 2})


def _reading(s: Settings) -> int:
    with session_scope(s.resolved_database_url) as db:
        doc = ingest(db, s, "islands.txt", TEXT.encode())
        return create_readings(db, s, doc.id, ["Which island?"])[0].id


def _die_after(s: Settings, reading_id: int, tokenizer, calls: int) -> None:
    """A runner that stops after `calls` steps without any cleanup, as a killed worker does: its reading
    stays running with a heartbeat that then goes stale."""

    class Killed(BaseException):  # not an Exception: nothing in the runner handles it
        pass

    def respond(prompt: str) -> str:
        if len(engine.calls) > calls:
            raise Killed
        return echo_last_line(prompt)

    engine = FakeEngine(tokenizer, respond)
    with pytest.raises(Killed):
        run_readings(s, engine=engine)
    with session_scope(s.resolved_database_url) as db:
        r = get_reading(db, reading_id)
        assert r.status == ReadingStatus.running
        r.heartbeat_at = utcnow() - timedelta(seconds=s.stale_after_s + 1)


def test_a_reading_that_keeps_stopping_its_runner_fails_at_the_cap_and_resumes(db_settings, tokenizer):
    s, rid = db_settings, _reading(db_settings)
    _die_after(s, rid, tokenizer, 1)  # attempt 1: step 1, then dies
    _die_after(s, rid, tokenizer, 1)  # attempt 2: step 2, then dies
    idle = FakeEngine(tokenizer, echo_last_line)
    assert run_readings(s, engine=idle) == 0 and idle.calls == []  # not taken up a third time
    with session_scope(s.resolved_database_url) as db:
        r = get_reading(db, rid)
        assert r.status == ReadingStatus.failed and r.cursor == 2
        assert r.error.startswith(
            f"the worker stopped 2 times while reading this (last at chunk 3 of {r.total_chunks};"
        )
        assert count_claimable(db, s) == 0  # the sweepers stop asking for passes
        kept = [(c.id, c.step) for c in r.checkpoints]

    reading_service.retry(s, rid, enqueue=False)  # a person resumes it
    with session_scope(s.resolved_database_url) as db:
        assert get_reading(db, rid).attempts == 0
    engine = FakeEngine(tokenizer, echo_last_line)
    assert run_readings(s, engine=engine) == 1
    with session_scope(s.resolved_database_url) as db:
        r = get_reading(db, rid)
        assert r.status == ReadingStatus.done and r.attempts == 1 and r.error is None
        assert [(c.id, c.step) for c in r.checkpoints][:2] == kept  # the same rows: read on, not again
        assert [c.step for c in r.checkpoints] == list(range(1, r.total_chunks + 1))
    assert len(engine.calls) == r.total_chunks - 2 + 1


def test_an_unreachable_model_server_puts_the_readings_back_in_the_queue_uncounted(db_settings, tokenizer):
    s, rid = db_settings, _reading(db_settings)

    def respond(prompt: str) -> str:
        if len(down.calls) >= 3:
            raise EngineUnavailable("server at http://127.0.0.1:9/v1 could not be reached (ConnectError) (3 tries)")
        return echo_last_line(prompt)

    down = FakeEngine(tokenizer, respond)
    for _ in range(s.max_attempts + 2):  # outages, however many, are not crashes
        assert run_readings(s, engine=down) == 0  # the pass ends cleanly: nothing raised
        with session_scope(s.resolved_database_url) as db:
            r = get_reading(db, rid)
            assert (r.status, r.cursor, r.attempts) == (ReadingStatus.queued, 2, 0)
            assert r.error.startswith(f"{WAITING_FOR_ENGINE}: server at http://127.0.0.1:9/v1 could not be reached")
            assert count_claimable(db, s) == 1  # a worker's sweeper tries again later
    back = FakeEngine(tokenizer, echo_last_line)
    assert run_readings(s, engine=back) == 1
    with session_scope(s.resolved_database_url) as db:
        r = get_reading(db, rid)
        assert r.status == ReadingStatus.done and r.attempts == 1 and r.error is None
        assert [c.step for c in r.checkpoints] == list(range(1, r.total_chunks + 1))


def test_run_by_id_an_outage_fails_the_reading_with_the_reason(db_settings, tokenizer):
    """`longread ask` reads in its own process: there the outage is an error to show, resumable by retry."""
    s, rid = db_settings, _reading(db_settings)

    def respond(prompt: str) -> str:
        raise EngineUnavailable("server at http://127.0.0.1:9/v1 could not be reached (3 tries)")

    with pytest.raises(EngineUnavailable):
        run_readings(s, [rid], FakeEngine(tokenizer, respond))
    with session_scope(s.resolved_database_url) as db:
        r = get_reading(db, rid)
        assert r.status == ReadingStatus.failed and "could not be reached" in r.error


def _then_on_a_new_version(s: Settings, model: str) -> tuple[int, int]:
    """Two readings of one document: the first on the settings' model, the second on a version of `model`
    activated in between."""
    from app.services.models import register_version

    with session_scope(s.resolved_database_url) as db:
        doc = ingest(db, s, "islands.txt", TEXT.encode())
        (first,) = [r.id for r in create_readings(db, s, doc.id, ["Which island?"])]
        register_version(db, model, model, template_set=s.template_set, activate=True)
        (second,) = [r.id for r in create_readings(db, s, doc.id, ["Which island?"])]
    return first, second


def test_by_id_a_version_that_cannot_load_is_tried_once_a_pass(db_settings, tokenizer, monkeypatch):
    """A reading whose model version cannot be loaded fails; asked for by id beside a reading that goes on,
    it is not claimed again at every step of the pass (each claim loaded the version again)."""
    from app.services import runner

    fine, broken = _then_on_a_new_version(db_settings, "no-such-model")
    engine, loads = FakeEngine(tokenizer, echo_last_line), []

    def engine_for(settings: Settings) -> FakeEngine:
        if settings.model == "no-such-model":
            loads.append(settings.model)
            raise OSError("no such model")
        return engine

    monkeypatch.setattr(runner, "engine_for", engine_for)
    assert run_readings(db_settings, [fine, broken]) == 1
    assert len(loads) == 1
    with session_scope(db_settings.resolved_database_url) as db:
        assert get_reading(db, fine).status == ReadingStatus.done
        r = get_reading(db, broken)
        assert r.status == ReadingStatus.failed and "cannot load model version" in r.error


def test_a_claimed_reading_stays_fresh_while_the_next_ones_model_version_loads(db_settings, tokenizer, monkeypatch):
    """A pass claims a reading, then starts another's model version (a merge and a server start: minutes on a
    CPU). The first one's heartbeat is kept fresh meanwhile, else another worker would take it over and count
    an attempt against it (at the cap: failed, as if its worker had crashed)."""
    from app.services import runner

    s = db_settings.model_copy(update={"stale_after_s": 2})
    first, second = _then_on_a_new_version(s, "slow-to-load")
    engine, first_meanwhile = FakeEngine(tokenizer, echo_last_line), []

    def engine_for(settings: Settings) -> FakeEngine:
        if settings.model == "slow-to-load":
            time.sleep(s.stale_after_s * 2)
            with session_scope(s.resolved_database_url) as db:
                first_meanwhile.append((get_reading(db, first).status, count_claimable(db, s)))
        return engine

    monkeypatch.setattr(runner, "engine_for", engine_for)
    assert run_readings(s) == 2
    # held, and not claimable by another worker: the one claimable reading is the second, still queued
    assert first_meanwhile == [(ReadingStatus.running, 1)]
    with session_scope(s.resolved_database_url) as db:
        assert [get_reading(db, rid).attempts for rid in (first, second)] == [1, 1]
