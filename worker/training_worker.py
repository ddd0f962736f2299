"""`celery -A worker.training_worker worker --queues=training` (or `longread worker --training`) runs this:
training runs and their evaluations (queue `training`), one at a time, each as a child process
(app/services/train_runner.py). It starts no reading engine; reading workers (worker/celery_app.py)
never take these tasks.

It runs with the solo pool: a task runs in the worker's main process, so the trainer it starts dies
with the worker whatever kills it, the sweeper knows whether this worker is busy, and a shutdown
(SIGTERM, Ctrl-C) stops the trainer at once and puts its run back in the queue instead of waiting
hours for the run to end.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from celery.signals import worker_ready, worker_shutting_down

from app.queue import EVAL_TASK, TRAIN_TASK, celery_app
from app.services import train_runner
from app.settings import get_settings
from app.supervisor import die_with_supervisor

die_with_supervisor()  # started by `longread serve`: stop when it dies, even by SIGKILL

log = logging.getLogger(__name__)
settings = get_settings()
app = celery_app(settings)
NAME = f"training@{socket.gethostname()}:{os.getpid()}"
#: touched by every successful sweep: docker-compose's health check of the `trainer` service reads its age
ALIVE_FILE = Path(tempfile.gettempdir()) / "longread-training-worker.alive"
_busy = threading.Event()
_stopping = threading.Event()


@app.task(name=TRAIN_TASK)
def train_run(run_id: int) -> None:
    _busy.set()
    try:
        train_runner.execute(settings, run_id, NAME, _stopping)
    finally:
        _busy.clear()


@app.task(name=EVAL_TASK)
def evaluate_run(run_id: int) -> None:
    _busy.set()
    try:
        train_runner.evaluate(settings, run_id, NAME, _stopping)
    finally:
        _busy.clear()


def _sweep() -> None:
    """Take up runs whose worker died and re-enqueue runs whose task was lost (the database, not the
    broker, is the truth), every stale_after_s / 2."""
    while True:
        try:
            train_runner.sweep(settings, idle=not _busy.is_set())
            ALIVE_FILE.touch()
        except Exception:  # the database or the broker restarting must not end the sweeper
            log.exception("the training sweeper could not look for runs; trying again")
        time.sleep(max(1.0, settings.stale_after_s / 2))


@worker_ready.connect
def _on_ready(**_kwargs: object) -> None:
    threading.Thread(target=_sweep, name="longread-training-sweeper", daemon=True).start()


@worker_shutting_down.connect
def _on_shutdown(**_kwargs: object) -> None:
    _stopping.set()  # the task under way ends its child process and requeues its run
