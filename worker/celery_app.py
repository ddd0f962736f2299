"""`celery -A worker.celery_app worker` (or `longread worker`) runs this."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from celery.signals import worker_ready, worker_shutdown

from app.db import session_scope
from app.queue import READ_TASK, celery_app, request_reading_pass
from app.services import health
from app.services.llm import engine_for, release_engines
from app.services.models import active_serving_settings, active_version, serving_settings
from app.services.runner import count_claimable, run_readings
from app.settings import get_settings
from app.supervisor import die_with_supervisor

die_with_supervisor()  # started by `longread serve`: stop when it dies, even by SIGKILL

log = logging.getLogger(__name__)
settings = get_settings()
app = celery_app(settings)
_pass_running = threading.Event()
NAME = f"{socket.gethostname()}:{os.getpid()}"
#: what this worker's heartbeat says about its engine, and the model version it is up for
_engine = {"state": "starting", "detail": None, "version": None}


def _start_engine() -> None:
    """Build (or reuse) the active model version's engine, recording its state for the heartbeat; raises
    what it raised. A version activated since the last pass is merged and started now, which takes
    minutes on a CPU: the heartbeat says "starting" meanwhile, so estimates count the start."""
    with session_scope(settings.resolved_database_url) as s:
        version = active_version(s)
    version_id = version.id if version is not None else None
    if _engine["state"] != "ready" or _engine["version"] != version_id:
        _engine.update(state="starting", detail=None)
    try:
        engine_for(serving_settings(settings, version))
    except Exception as exc:
        _engine.update(state="failed", detail=f"{type(exc).__name__}: {exc}"[-8000:])
        raise
    _engine.update(state="ready", detail=None, version=version_id)


def _beat() -> None:
    """Tell the database this worker is alive and how its engine is, every HEARTBEAT_S seconds."""
    while True:
        try:
            with session_scope(settings.resolved_database_url) as s:
                health.beat(s, NAME, settings.engine, _engine["state"], _engine["detail"])
        except Exception:  # a database hiccup must not end the heartbeat
            log.exception("could not record this worker's heartbeat")
        time.sleep(health.HEARTBEAT_S)


@app.task(name=READ_TASK)
def read_pending() -> None:
    """One pass: claim queued and stalled readings and advance them together until none is left;
    readings queued meanwhile join it."""
    _pass_running.set()
    try:
        _start_engine()  # usually started already (at worker start); a failed start is retried here
        finished = run_readings(settings)
        log.info("reading pass finished %d readings", finished)
        release_engines(keep=active_serving_settings(settings))  # those of versions no longer active
    finally:
        _pass_running.clear()


def _sweep() -> None:
    """Find readings that no task will pick up: left running by a dead worker (their heartbeat
    goes stale) or queued while the broker lost its message. The DB, not the broker, is the truth.
    A reading of a dead worker is so taken up by a live one within about 1.5 x stale_after_s; one
    waiting for the model server is tried again every stale_after_s / 2."""
    while True:
        try:
            if not _pass_running.is_set():
                with session_scope(settings.resolved_database_url) as s:
                    n = count_claimable(s, settings)
                if n:
                    log.warning("%d readings wait with no pass running: starting one", n)
                    request_reading_pass(settings)
        except Exception:  # the database or the broker restarting must not end the sweeper
            log.exception("the sweeper could not look for waiting readings; trying again")
        time.sleep(max(1.0, settings.stale_after_s / 2))


@worker_ready.connect
def _on_ready(**_kwargs: object) -> None:
    threading.Thread(target=_beat, name="longread-heartbeat", daemon=True).start()
    threading.Thread(target=_sweep, name="longread-sweeper", daemon=True).start()
    # Start the engine now rather than at the first question (a local vLLM server takes 30-65 s on
    # 2 cores); tasks wait meanwhile, and the heartbeat says the model is starting.
    try:
        _start_engine()
        log.info("engine %s ready", settings.engine)
    except Exception:  # the heartbeat shows the error; the next pass tries again
        log.exception("could not start the %s engine", settings.engine)


@worker_shutdown.connect
def _on_shutdown(**_kwargs: object) -> None:
    try:
        with session_scope(settings.resolved_database_url) as s:
            health.retire(s, NAME)
    except Exception:
        log.exception("could not remove this worker's heartbeat")
