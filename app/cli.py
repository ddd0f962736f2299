"""`longread` command: serve, worker, migrate, ingest, ask."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from app.settings import Settings, get_settings


def _migrate(settings: Settings) -> None:
    from app.migrate import upgrade

    upgrade(settings.resolved_database_url)


def cmd_migrate(settings: Settings, _args: argparse.Namespace) -> int:
    _migrate(settings)
    print(f"database at head: {settings.resolved_database_url}")
    return 0


def worker_command(loglevel: str = "INFO") -> list[str]:
    # One process, one model in memory; the service batches readings itself.
    return [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--pool=solo",
            "--queues=longread", f"--loglevel={loglevel}", "--without-gossip", "--without-mingle"]


def cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    _migrate(settings)
    os.execv(sys.executable, worker_command(args.loglevel))
    return 0  # not reached


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from app.services.llm import tokenizer_for
    from app.web import create_app

    _migrate(settings)
    tokenizer_for(settings)  # converts the bundled model once, before the first upload needs it
    # uvicorn re-raises the SIGTERM it caught once it has shut down; the default action would end
    # this process before `finally` stops the worker, so turn it into a normal exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    worker = None
    if not args.no_worker:
        worker = subprocess.Popen(worker_command())
    try:
        app = create_app(settings)
        print(f"Longread is ready at http://{settings.host}:{settings.port}/", flush=True)
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
    finally:
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
    return 0


def _ingest(settings: Settings, path: Path) -> int:
    from app.db import session_scope
    from app.services.documents import ingest

    with session_scope(settings.resolved_database_url) as s:
        doc = ingest(s, settings, path.name, path.read_bytes())
        if doc.error:
            raise SystemExit(f"longread: {path}: {doc.error}")
        return doc.id


def cmd_ingest(settings: Settings, args: argparse.Namespace) -> int:
    _migrate(settings)
    doc_id = _ingest(settings, Path(args.file))
    print(doc_id)
    return 0


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    from app.db import session_scope
    from app.services.readings import create_readings, get_reading, run_readings

    _migrate(settings)
    target = args.document
    if Path(target).is_file():
        doc_id = _ingest(settings, Path(target))
    elif target.isdigit():
        doc_id = int(target)
    else:
        raise SystemExit(f"longread: {target}: no such file or document id")
    with session_scope(settings.resolved_database_url) as s:
        ids = [r.id for r in create_readings(s, settings, doc_id, args.question,
                                              args.chunk_tokens, args.memory_tokens)]
    started = time.monotonic()
    run_readings(settings, ids)
    elapsed = time.monotonic() - started
    with session_scope(settings.resolved_database_url) as s:
        out = []
        for reading_id in ids:
            r = get_reading(s, reading_id)
            out.append({
                "question": r.question,
                "answer": r.answer,
                "status": r.status.value,
                "checkpoints": [
                    {"step": c.step, "memory": c.memory, "start_char": c.start_char, "end_char": c.end_char}
                    for c in r.checkpoints
                ],
            })
    if args.json:
        print(json.dumps({"readings": out}, ensure_ascii=False))
    else:
        for r in out:
            print(f"Q: {r['question']}\nA: {r['answer']}\n   ({r['status']}, {len(r['checkpoints'])} chunks)")
        print(f"read in {elapsed:.1f} s", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="longread", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the web app (and, by default, a worker)")
    serve.add_argument("--no-worker", action="store_true", help="do not start a Celery worker")
    serve.set_defaults(func=cmd_serve)
    worker = sub.add_parser("worker", help="run a Celery worker that reads documents")
    worker.add_argument("--loglevel", default="INFO")
    worker.set_defaults(func=cmd_worker)
    sub.add_parser("migrate", help="bring the database schema up to date").set_defaults(func=cmd_migrate)
    ingest = sub.add_parser("ingest", help="store and parse a file; prints the document id")
    ingest.add_argument("file")
    ingest.set_defaults(func=cmd_ingest)
    ask = sub.add_parser("ask", help="read a document in this process and print the answers")
    ask.add_argument("document", metavar="FILE_OR_DOCUMENT_ID")
    ask.add_argument("-q", "--question", action="append", required=True)
    ask.add_argument("--chunk-tokens", type=int)
    ask.add_argument("--memory-tokens", type=int)
    ask.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ask.set_defaults(func=cmd_ask)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(get_settings(), args)


if __name__ == "__main__":
    raise SystemExit(main())
