"""What the page's status line and GET /api/health say about the workers and their model, from the
heartbeats workers write to the database (the workers themselves: tests/integration/test_serve.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from app.db import session_scope
from app.models import Reading, ReadingStatus, Worker, utcnow
from app.services import health
from app.services import models as mv
from app.services.documents import ingest
from app.services.readings import create_readings, get_reading
from app.services.views import reading_progress
from app.ui.read_views import describe_health, describe_progress
from app.web import create_app

pytestmark = pytest.mark.integration


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as c:
        yield c


def _beat(settings, name, state, detail=None, age_s=0.0):
    with session_scope(settings.resolved_database_url) as s:
        health.beat(s, name, "vllm-local", state, detail)
        if age_s:
            s.flush()
            s.execute(
                update(Worker).where(Worker.name == name).values(heartbeat_at=utcnow() - timedelta(seconds=age_s))
            )


def test_the_health_of_workers_and_their_model(client, settings):
    assert client.get("/api/health").json()["engine_state"] == "none"

    _beat(settings, "a:1", "starting")
    h = client.get("/api/health").json()
    assert (h["workers"], h["engine_state"], h["engine"]) == (1, "starting", "vllm-local")
    assert "starting" in h["summary"] and "wait" in h["summary"]

    log = "INFO loading weights\nRuntimeError: no KV cache space\n"
    _beat(settings, "a:1", "failed", f"EngineError: vLLM server exited with code 3 while starting; log:\n{log}")
    h = client.get("/api/health").json()
    assert h["engine_state"] == "failed" and h["detail"].endswith(log)
    assert h["summary"] == "The model (vllm-local) failed to start: RuntimeError: no KV cache space"

    _beat(settings, "b:2", "ready")  # any ready worker makes the model ready
    assert client.get("/api/health").json() | {"summary": ""} == {
        "workers": 2,
        "engine_state": "ready",
        "engine": "vllm-local",
        "detail": None,
        "starting_for_s": None,
        "summary": "",
    }

    # a worker killed with SIGKILL stops beating: it drops out; one that stops cleanly leaves at once
    _beat(settings, "b:2", "ready", age_s=health.ALIVE_S + 1)
    assert client.get("/api/health").json()["engine_state"] == "failed"
    with session_scope(settings.resolved_database_url) as s:
        health.retire(s, "a:1")
    h = client.get("/api/health").json()
    assert (h["workers"], h["engine_state"]) == (0, "none")
    assert h["summary"].startswith("No worker is running")


def test_the_page_says_a_reading_waits_for_a_worker_instead_of_a_frozen_eta(settings):
    with session_scope(settings.resolved_database_url) as s:
        doc = ingest(s, settings, "a.txt", b"Some words to read. " * 200)
        (r,) = create_readings(s, settings, doc.id, ["What?"])
        rid = r.id
    with session_scope(settings.resolved_database_url) as s:
        h = health.health(s)
        line = describe_progress("queued", reading_progress(get_reading(s, rid), settings.stale_after_s), None, h)
    assert line.startswith("Queued: no worker is running")
    assert describe_health(h).startswith("**Status:** No worker is running")

    # it was being read, then its worker died: its heartbeat goes stale
    with session_scope(settings.resolved_database_url) as s:
        s.execute(
            update(Reading)
            .where(Reading.id == rid)
            .values(
                status=ReadingStatus.running,
                cursor=2,
                total_chunks=9,
                created_at=utcnow() - timedelta(seconds=610),
                started_at=utcnow() - timedelta(seconds=600),
                heartbeat_at=utcnow() - timedelta(seconds=settings.stale_after_s + 5),
            )
        )
    _beat(settings, "c:3", "ready")  # another worker is alive; this reading's is not
    with session_scope(settings.resolved_database_url) as s:
        h = health.health(s)
        p = reading_progress(get_reading(s, rid), settings.stale_after_s)
        line = describe_progress("running", p, None, h)
    assert p.stalled and p.eta_s is None
    assert line.startswith("Paused after chunk 2 of 9: no worker is reading it")
    assert "ETA" not in line and "waited 10 min" in line


def test_a_version_activated_later_is_shown_starting_and_timed_from_then(settings, monkeypatch):
    """A worker up for ten minutes, then an admin activates a new version: the next pass merges and
    starts it (minutes on a CPU). Meanwhile the heartbeat says "starting", counted from that moment,
    not from the worker's start (else the estimate takes the start as long over)."""
    import worker.celery_app as worker

    seen = []

    def engine_for(serving):  # the heartbeat thread's view while the engine is built
        with session_scope(settings.resolved_database_url) as s:
            health.beat(s, "w:1", "vllm-local", worker._engine["state"])
        with session_scope(settings.resolved_database_url) as s:
            seen.append((worker._engine["state"], health.health(s).starting_for_s))

    monkeypatch.setattr(worker, "settings", settings)
    monkeypatch.setattr(worker, "engine_for", engine_for)
    monkeypatch.setattr(worker, "_engine", {"state": "ready", "detail": None, "version": None})
    _beat(settings, "w:1", "ready")
    with session_scope(settings.resolved_database_url) as s:
        s.execute(update(Worker).values(started_at=utcnow() - timedelta(seconds=600)))

    worker._start_engine()  # the same version: nothing to start
    assert seen == [("ready", None)]

    with session_scope(settings.resolved_database_url) as s:
        version_id = mv.register_version(s, "newer", "smollm2", template_set="chunk-first", activate=True).id
    worker._start_engine()
    state, starting_for_s = seen[-1]
    assert state == "starting" and starting_for_s is not None and starting_for_s < 60
    assert worker._engine == {"state": "ready", "detail": None, "version": version_id}
