"""`celery -A worker.celery_app worker` (or `longread worker`) runs this."""

from __future__ import annotations

import logging
import threading
import time

from celery.signals import worker_ready

from app.db import session_scope
from app.queue import READ_TASK, celery_app, request_reading_pass
from app.services.llm import engine_for
from app.services.readings import count_claimable, run_readings
from app.settings import get_settings

log = logging.getLogger(__name__)
settings = get_settings()
app = celery_app(settings)
_pass_running = threading.Event()


@app.task(name=READ_TASK)
def read_pending() -> None:
    """One pass: claim queued and stalled readings and advance them together until none is left;
    readings queued meanwhile join it."""
    _pass_running.set()
    try:
        finished = run_readings(settings)
        log.info("reading pass finished %d readings", finished)
    finally:
        _pass_running.clear()


def _sweep() -> None:
    """Find readings that no task will pick up: left running by a dead worker (their heartbeat
    goes stale) or queued while the broker lost its message. The DB, not the broker, is the truth."""
    while True:
        if not _pass_running.is_set():
            with session_scope(settings.resolved_database_url) as s:
                n = count_claimable(s, settings)
            if n:
                log.warning("%d readings wait with no pass running: starting one", n)
                request_reading_pass(settings)
        time.sleep(max(1.0, settings.stale_after_s / 2))


@worker_ready.connect
def _on_ready(**_kwargs: object) -> None:
    threading.Thread(target=_sweep, name="longread-sweeper", daemon=True).start()
    if settings.engine == "vllm-local":
        # Start the local vLLM server now rather than at the first question (30-65 s on 2 cores), and
        # from the main thread, so that the kernel stops it if this worker dies. Tasks wait meanwhile.
        try:
            engine_for(settings)
        except Exception:  # the first reading fails with the same error, where the user sees it
            log.exception("could not start the local vLLM server")
