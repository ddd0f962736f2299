"""`longread serve`, `worker` and `migrate`: the web app, its Celery workers and the database schema."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading

from app.cli.common import migrate_db
from app.settings import Settings


def cmd_migrate(settings: Settings, _args: argparse.Namespace) -> int:
    migrate_db(settings)
    print(f"database at head: {settings.resolved_database_url}")
    return 0


def worker_command(loglevel: str = "INFO", training: bool = False) -> list[str]:
    """A reading worker's Celery command, or (`training`) a training worker's. Both run tasks in the
    worker's own process (solo pool; app/queue.py prefetches one message): a reading worker holds one
    model in memory and batches readings itself; a training worker runs one run at a time, its trainer
    a child that dies with it (worker/training_worker.py)."""
    app, queue = ("worker.training_worker", "training") if training else ("worker.celery_app", "longread")
    node = ["--hostname=training@%h"] if training else []  # two workers on one host need two node names
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        app,
        "worker",
        "--pool=solo",
        f"--queues={queue}",
        *node,
        f"--loglevel={loglevel}",
        "--without-gossip",
        "--without-mingle",
    ]


def cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    migrate_db(settings)
    os.execv(sys.executable, worker_command(args.loglevel, training=args.training))
    return 0  # not reached


def _announce_health(settings: Settings, url: str, stopping: threading.Event, poll_s: float = 2.0) -> None:
    """Say in the terminal when the model is ready, or failed, or no worker is running: what the
    page's status line says (app/services/health.py)."""
    from app.db import session_scope
    from app.services.health import health

    said = None
    while not stopping.wait(poll_s):
        try:
            with session_scope(settings.resolved_database_url) as s:
                h = health(s)
        except Exception:
            h = None
        # Before the first heartbeat the worker is still booting: nothing to say yet.
        if h is not None and not (said is None and h.engine_state == "none"):
            key = (h.engine_state, h.detail)
            if key != said:
                print(
                    f"Longread is ready at {url}: {h.summary()}" if h.ready else f"longread: {h.summary()}", flush=True
                )
                said = key


class _NoShutdownTracebacks(logging.Filter):
    """At shutdown uvicorn cancels the streams still open after the timeout (a browser tab's) and logs
    a traceback for each; its one line "Cancel N running task(s)…" says enough."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, asyncio.CancelledError) and "graceful shutdown" in str(exc))


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from app.services.llm import tokenizer_for
    from app.supervisor import Supervisor
    from app.web import UnsafeSettings, check_serving, create_app

    try:
        check_serving(settings)  # before anything starts: production needs a secret key and PostgreSQL
    except UnsafeSettings as exc:
        raise SystemExit(f"longread serve: {exc}") from None
    migrate_db(settings)
    tokenizer_for(settings)  # converts the bundled model once, before the first upload needs it
    # uvicorn re-raises the SIGTERM it caught once it has shut down; the default action would end
    # this process before `finally` stops the worker, so turn it into a normal exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    url = f"http://{settings.host}:{settings.port}/"
    stopping = threading.Event()
    supervisors = []
    if not args.no_worker:
        # A worker that dies (killed, crashed) is started again, with backoff; see app/supervisor.py.
        # The training worker runs the training runs admins start from the app, one at a time.
        supervisors = [Supervisor(worker_command()), Supervisor(worker_command(training=True), name="training worker")]
        for supervisor in supervisors:
            supervisor.start()
    try:
        app = create_app(settings)
        print(f"Longread is up at {url}; the model is starting (questions asked now wait for it).", flush=True)
        threading.Thread(target=_announce_health, args=(settings, url, stopping), name="health", daemon=True).start()
        # Open connections (a browser tab's event streams) get this long to finish once asked to stop;
        # without a bound, an open tab kept `serve` from stopping for good.
        logging.getLogger("uvicorn.error").addFilter(_NoShutdownTracebacks())
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            log_level="warning",
            timeout_graceful_shutdown=settings.shutdown_timeout_s,
        )
    finally:
        stopping.set()
        for supervisor in supervisors:
            supervisor.stop(timeout_s=30)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """serve, worker, migrate"""
    serve = sub.add_parser("serve", help="start the web app (and, by default, a worker)")
    serve.add_argument("--no-worker", action="store_true", help="do not start a Celery worker")
    serve.set_defaults(func=cmd_serve)
    worker = sub.add_parser("worker", help="run a Celery worker that reads documents (or, --training, runs training)")
    worker.add_argument("--loglevel", default="INFO", help="Celery's log level: DEBUG, INFO, WARNING, ERROR")
    worker.add_argument(
        "--training",
        action="store_true",
        help="run training runs and their evaluations (queue `training`), one at a time, instead",
    )
    worker.set_defaults(func=cmd_worker)
    sub.add_parser("migrate", help="bring the database schema up to date").set_defaults(func=cmd_migrate)
