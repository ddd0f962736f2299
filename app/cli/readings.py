"""`longread ingest`, `ask`, `readings`, `checkpoints`, `edit`, `cancel`, `retry`, `feedback`: documents and
their readings, read in this process."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.common import local_admin, migrate_db
from app.cli.reading_json import checkpoint_json, reading_json
from app.settings import Settings

if TYPE_CHECKING:  # the commands import what they need when they run: `longread --help` stays fast
    from app.services.views import ReadingView


def _ingest(settings: Settings, path: Path) -> int:
    from app.services.documents import UploadError, add_document

    try:
        doc, existing = add_document(settings, path.name, path.read_bytes(), user=local_admin(settings))
    except (OSError, UploadError) as exc:
        raise SystemExit(f"longread: {path}: {exc}") from None
    if doc.error:
        raise SystemExit(f"longread: {path}: {doc.error}")
    if existing:
        print(f"longread: {path}: already uploaded as document {doc.id} ({doc.title})", file=sys.stderr)
    return doc.id


def cmd_ingest(settings: Settings, args: argparse.Namespace) -> int:
    migrate_db(settings)
    doc_id = _ingest(settings, Path(args.file))
    print(doc_id)
    return 0


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    from app.services import readings
    from app.services.errors import NotFound

    migrate_db(settings)
    target = args.document
    if Path(target).is_file():
        doc_id = _ingest(settings, Path(target))
    elif target.isdigit():
        doc_id = int(target)
    else:
        raise SystemExit(f"longread: {target}: no such file or document id")
    # A running server's worker has its model up: hand it the questions rather than start a second model here.
    server = None if args.in_process else live_worker(settings)
    try:
        ids = [
            r.id
            for r in readings.ask(
                settings,
                doc_id,
                args.question,
                args.chunk_tokens,
                args.memory_tokens,
                enqueue=server is not None,
                user=local_admin(settings),
            )
        ]
    except (readings.ReadingError, NotFound) as exc:
        raise SystemExit(f"longread ask: {exc}") from None
    read = read_to_end(settings, "ask", ids, server, args.in_process)
    if read is None:
        return 130
    _print_read(*read, args.json)
    return 0


def live_worker(settings: Settings):
    """The workers of this database (app/services/health.py), if one is alive with its model up or starting."""
    from app.db import session_scope
    from app.services.health import health

    with session_scope(settings.resolved_database_url) as s:
        h = health(s)
    return h if h.engine_state in ("ready", "starting") else None


#: how often the terminal looks at readings it follows
POLL_S = 0.5
_FINISHED = ("done", "failed", "cancelled")


def _show_progress(progress, views: list[ReadingView]) -> None:
    """Readings asked together are read in step: the slowest one's chunk k of K."""
    totals = [v.total_chunks for v in views if v.total_chunks]
    progress.update(min(v.cursor for v in views), max(totals) if totals else None)


def read_to_end(
    settings: Settings, command: str, ids: list[int], server, in_process: bool = False
) -> tuple[list[ReadingView], str] | None:
    """Readings to the end, chunk k of K on stderr when it is a terminal: read in this process when `server` is
    None (no worker runs, or `in_process` asked for it), else followed while the server's worker reads them. Says
    which, and why, on stderr. Returns the readings and how long they took ("in 2.0 s", "by the server's worker in
    …"), or None when Ctrl-C stopped following."""
    if server is None:
        why = "as --in-process asks" if in_process else "no server's worker is running"
        print(f"longread {command}: reading in this process ({why})", file=sys.stderr)
        return _read_here(settings, ids)
    which = ", ".join(map(str, ids)) if len(ids) <= 5 else f"{ids[0]} to {ids[-1]}"  # a review asks 41
    print(
        f"longread {command}: submitted to the running server's queue: {server.summary()} "
        f"Following reading{'s' if len(ids) != 1 else ''} {which}.",
        file=sys.stderr,
    )
    return _follow(settings, command, ids)


def _follow(settings: Settings, command: str, ids: list[int]) -> tuple[list[ReadingView], str] | None:
    """Follow readings a worker reads (polling the database) to the end. Should every worker stop
    meanwhile, this process reads on from their last checkpoints."""
    from app.cli.progress import Progress
    from app.services import readings
    from app.services.runner import run_readings

    me = local_admin(settings)
    fell_back = False  # every worker stopped at some point: this process reads (some of) it
    try:
        with Progress("chunk") as progress:
            while True:
                views = [readings.show(settings, i, user=me) for i in ids]
                _show_progress(progress, views)
                left = [v.id for v in views if v.status not in _FINISHED]
                if not left:
                    break
                if live_worker(settings) is None:
                    if not fell_back:  # said once: run_readings takes nothing until the heartbeat is stale
                        progress.write(f"longread {command}: the server's worker stopped; reading on in this process")
                        fell_back = True
                    run_readings(settings, left)  # running ones are taken up once their heartbeat is stale
                time.sleep(POLL_S)
    except KeyboardInterrupt:
        if fell_back:  # this process was (or was about to be) the reader: nobody reads on until a worker runs
            print(
                f"\nlongread {command}: stopped; the reading keeps its checkpoints and a server's worker reads on "
                f"from the last one once one runs (`longread checkpoints {ids[0]}` shows how far)",
                file=sys.stderr,
            )
        else:
            print(
                f"\nlongread {command}: stopped following; the server reads on (`longread checkpoints {ids[0]}` "
                f"shows how far, `longread cancel {ids[0]}` stops it)",
                file=sys.stderr,
            )
        return None
    read = max((v.progress.reading_s or 0.0) for v in views)
    waited = max((v.progress.waiting_s or 0.0) for v in views)
    by = "by the server's worker, then this process," if fell_back else "by the server's worker"
    return views, f"{by} in {read:.1f} s (after {waited:.1f} s in its queue)"


def _read_here(settings: Settings, ids: list[int]) -> tuple[list[ReadingView], str]:
    """Read the readings to the end in this process: the readings, and how long it took."""
    import threading

    from app.cli.progress import Progress
    from app.services import readings
    from app.services.runner import run_readings

    me = local_admin(settings)
    started = time.monotonic()
    with Progress("chunk") as progress:
        done = threading.Event()

        def watch() -> None:  # the runner commits every step: the database says how far it is
            while not done.wait(POLL_S):
                _show_progress(progress, [readings.show(settings, i, user=me) for i in ids])

        watcher = threading.Thread(target=watch, name="reading-progress", daemon=True)
        if progress.shown:
            watcher.start()
        try:
            run_readings(settings, ids)
        finally:
            done.set()
            if progress.shown:
                watcher.join()
        views = [readings.show(settings, reading_id, user=me) for reading_id in ids]
        _show_progress(progress, views)
    return views, f"in {time.monotonic() - started:.1f} s"


def _read_and_print(settings: Settings, ids: list[int], as_json: bool) -> None:
    """Read the readings to the end in this process, then print them (`as_json`: one JSON object)."""
    _print_read(*_read_here(settings, ids), as_json)


def _print_read(views: list[ReadingView], took: str, as_json: bool) -> None:
    """The readings on stdout, and (unless `as_json`) how long they took on stderr."""
    _print_readings(views, as_json)
    if not as_json:
        print(f"read {took}", file=sys.stderr)


def _print_readings(views: list[ReadingView], as_json: bool) -> None:
    out = [reading_json(v) for v in views]
    if as_json:
        print(json.dumps({"readings": out}, ensure_ascii=False))
    else:
        for r in out:
            print(f"Q: {r['question']}\nA: {r['answer']}\n   ({r['status']}, {len(r['checkpoints'])} chunks)")


def _reading_id(command: str, value: str) -> int:
    if not value.isdigit():
        raise SystemExit(f"longread {command}: {value!r} is not a reading id")
    return int(value)


def cmd_readings(settings: Settings, args: argparse.Namespace) -> int:
    """A document's readings, newest first: id, status, question, answer."""
    from app.services import readings
    from app.services.errors import NotFound

    migrate_db(settings)
    if not args.document.isdigit():
        raise SystemExit(f"longread readings: {args.document!r} is not a document id")
    try:
        views = readings.document_readings(settings, int(args.document), user=local_admin(settings))
    except NotFound as exc:
        raise SystemExit(f"longread readings: {exc}") from None
    if args.json:
        rows = [reading_json(r, with_checkpoints=False) for r in views]
        print(json.dumps({"document_id": int(args.document), "readings": rows}, ensure_ascii=False))
        return 0
    for r in views:
        steps = f"{len(r.checkpoints)}/{r.total_chunks}" if r.total_chunks else str(len(r.checkpoints))
        answer = " ".join((r.answer or "").split())
        branch = f" branch of #{r.parent_reading_id} at step {r.branched_at_step}" if r.parent_reading_id else ""
        print(
            f"#{r.id} {r.status} ({steps} chunks){branch} Q: {' '.join(r.question.split())}"
            + (f"\n   A: {answer}" if answer else "")
            + (f"\n   error: {r.error}" if r.error else "")
        )
    return 0


def cmd_checkpoints(settings: Settings, args: argparse.Namespace) -> int:
    """Every checkpoint of a reading: step, origin, pages, characters and the memory (and the chunk read)."""
    from app.services import readings
    from app.services.errors import NotFound

    migrate_db(settings)
    reading_id = _reading_id("checkpoints", args.reading)
    try:
        r = readings.show(settings, reading_id, with_chunks=args.with_chunks, user=local_admin(settings))
    except NotFound as exc:
        raise SystemExit(f"longread checkpoints: {exc}") from None
    if args.json:
        print(
            json.dumps(
                {"reading_id": r.id, "checkpoints": [checkpoint_json(c) for c in r.checkpoints]}, ensure_ascii=False
            )
        )
        return 0
    for c in r.checkpoints:
        pages = f"page {c.first_page}" if c.first_page == c.last_page else f"pages {c.first_page}-{c.last_page}"
        print(f"step {c.step} ({c.origin}, {pages}, characters {c.start_char}-{c.end_char})")
        if c.chunk is not None:
            print("  chunk:  " + c.chunk.replace("\n", "\n          "))
        print("  memory: " + c.memory.replace("\n", "\n          "))
    return 0


def cmd_edit(settings: Settings, args: argparse.Namespace) -> int:
    """Edit the memory at a step and resume from it: a new branch, read to the end in this process."""
    import getpass

    from app.services import readings
    from app.services.errors import NotFound

    migrate_db(settings)
    reading_id = _reading_id("edit", args.reading)
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid
        who = None
    try:
        branch = readings.edit(
            settings,
            reading_id,
            args.step,
            args.memory,
            f"cli:{who}" if who else "cli",
            enqueue=False,
            user=local_admin(settings),
        )
    except (readings.ReadingError, NotFound) as exc:
        raise SystemExit(f"longread edit: {exc}") from None
    if not args.json:
        print(f"branch {branch.id} of reading {reading_id} at step {args.step}", file=sys.stderr)
    _read_and_print(settings, [branch.id], args.json)
    return 0


def cmd_cancel(settings: Settings, args: argparse.Namespace) -> int:
    """Stop a queued or running reading (a worker's, or another `ask`); its checkpoints stay."""
    from app.services import readings
    from app.services.errors import NotFound

    migrate_db(settings)
    try:
        r = readings.cancel(settings, _reading_id("cancel", args.reading), user=local_admin(settings))
    except NotFound as exc:
        raise SystemExit(f"longread cancel: {exc}") from None
    print(json.dumps(reading_json(r, with_checkpoints=False)) if args.json else f"reading {r.id}: {r.status}")
    return 0


def cmd_retry(settings: Settings, args: argparse.Namespace) -> int:
    """Resume a failed or cancelled reading after its last checkpoint: here, as `ask` reads, or
    (`--queue`) by a worker."""
    from app.services import readings
    from app.services.errors import NotFound

    migrate_db(settings)
    reading_id = _reading_id("retry", args.reading)
    try:
        r = readings.retry(settings, reading_id, enqueue=args.queue, user=local_admin(settings))
    except (readings.ReadingError, NotFound) as exc:
        raise SystemExit(f"longread retry: {exc}") from None
    if args.queue:
        print(
            json.dumps(reading_json(r, with_checkpoints=False)) if args.json else f"reading {r.id}: queued for a worker"
        )
        return 0
    _read_and_print(settings, [reading_id], args.json)
    return 0


def cmd_feedback(settings: Settings, args: argparse.Namespace) -> int:
    """Judge a reading's answer, list the verdicts on it, or export every judged reading as JSON Lines."""
    from dataclasses import asdict

    from app.services import feedback
    from app.services.errors import NotFound

    migrate_db(settings)
    if args.target == "export":
        if not args.file or args.verdict or args.answer or args.comment:
            raise SystemExit("longread feedback: usage: longread feedback export FILE.jsonl [--with-text]")
        n = feedback.export_file(settings, Path(args.file), with_text=args.with_text, user=local_admin(settings))
        print(f"{n} judged reading{'s' if n != 1 else ''} written to {args.file}", file=sys.stderr)
        return 0
    if not args.target.isdigit() or args.file:
        raise SystemExit(f"longread feedback: {args.target!r} is not a reading id (or `export FILE.jsonl`)")
    reading_id = int(args.target)
    try:
        if args.verdict:
            views = [
                feedback.add_feedback(
                    settings, reading_id, args.verdict, args.answer, args.comment, user=local_admin(settings)
                )
            ]
        elif args.answer or args.comment:
            raise SystemExit("longread feedback: --answer and --comment go with --verdict correct|incorrect")
        else:
            views = feedback.reading_feedback(settings, reading_id, user=local_admin(settings))
    except (feedback.FeedbackError, NotFound) as exc:
        raise SystemExit(f"longread feedback: {exc}") from None
    if args.json:
        rows = [{**asdict(v), "created_at": v.created_at.isoformat()} for v in views]
        print(json.dumps(rows[0] if args.verdict else {"feedback": rows}, ensure_ascii=False))
    elif args.verdict:
        print(f"feedback {views[0].id} on reading {reading_id}: {views[0].verdict}")
    else:
        for v in views:
            extra = "".join(
                f"; {k}: {x}" for k, x in (("corrected answer", v.corrected_answer), ("comment", v.comment)) if x
            )
            print(f"{v.created_at:%Y-%m-%d %H:%M} {v.verdict}{extra}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """ingest, ask, readings, checkpoints, edit, cancel, retry, feedback"""
    ingest = sub.add_parser("ingest", help="store and parse a file; prints the document id")
    ingest.add_argument("file", help="a PDF, DOCX, EPUB, HTML, Markdown or text file")
    ingest.set_defaults(func=cmd_ingest)
    ask = sub.add_parser(
        "ask",
        help="read a document and print the answers: by the running server's worker, else in this process",
        description="With a worker of this database alive (`longread serve`), the questions go to its queue and "
        "this command follows the reading there; with none, it reads here. Stderr says which, and shows chunk "
        "k of K with an ETA when it is a terminal.",
    )
    ask.add_argument("document", metavar="FILE_OR_DOCUMENT_ID", help="a file to upload first, or a document's id")
    ask.add_argument(
        "-q",
        "--question",
        action="append",
        required=True,
        help="a question (repeat for several: they are read in one pass)",
    )
    ask.add_argument("--chunk-tokens", type=int, help="tokens per chunk the agent reads (default: settings)")
    ask.add_argument("--memory-tokens", type=int, help="at most this many tokens of memory (default: settings)")
    ask.add_argument(
        "--in-process",
        action="store_true",
        help="read here even when a server's worker is running (starts this process's own model)",
    )
    ask.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ask.set_defaults(func=cmd_ask)
    rd = sub.add_parser("readings", help="a document's readings, newest first: status, question, answer")
    rd.add_argument("document", metavar="DOCUMENT_ID", help="the document's id (`longread ingest` prints it)")
    rd.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    rd.set_defaults(func=cmd_readings)
    cp = sub.add_parser("checkpoints", help="every checkpoint of a reading: the memory after each chunk")
    cp.add_argument("reading", metavar="READING_ID", help="the reading's id")
    cp.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    cp.add_argument("--with-chunks", action="store_true", help="add the text of the chunk each step read")
    cp.set_defaults(func=cmd_checkpoints)
    ed = sub.add_parser(
        "edit",
        help="edit the memory at a step and resume from it: a new branch, read here",
        description="Makes a branch of the reading: it shares steps 1..K-1, has MEMORY as step K "
        "and reads on from chunk K+1 to a new answer, in this process as `ask` does. The lines MEMORY adds "
        "or changes stay in every later memory. The original reading never changes; editing the last step "
        "only re-answers.",
    )
    ed.add_argument("reading", metavar="READING_ID", help="the reading to branch from")
    ed.add_argument("--step", type=int, required=True, metavar="K", help="the step (1-based) whose memory to replace")
    ed.add_argument("--memory", required=True, metavar="TEXT", help="the new memory at step K")
    ed.add_argument("--json", action="store_true", help="print one JSON object on stdout (as `ask --json`)")
    ed.set_defaults(func=cmd_edit)
    cancel = sub.add_parser("cancel", help="stop a queued or running reading (its checkpoints stay)")
    cancel.add_argument("reading", metavar="READING_ID", help="the reading to stop")
    cancel.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    cancel.set_defaults(func=cmd_cancel)
    retry = sub.add_parser("retry", help="resume a failed or cancelled reading after its last checkpoint")
    retry.add_argument("reading", metavar="READING_ID", help="the reading to resume")
    retry.add_argument("--queue", action="store_true", help="leave it to a worker instead of reading it here")
    retry.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    retry.set_defaults(func=cmd_retry)
    fb = sub.add_parser(
        "feedback",
        help="judge a reading's answer, list its verdicts, or export them: feedback export FILE.jsonl",
        description="`longread feedback READING_ID --verdict correct|incorrect [--answer TEXT] [--comment TEXT]` "
        "judges a finished reading's answer; without --verdict it lists the verdicts on the reading. "
        "`longread feedback export FILE.jsonl` writes one line per judged reading (its latest verdict) "
        "for training (README: Feedback export format).",
    )
    fb.add_argument("target", metavar="READING_ID|export", help="the reading to judge or list, or `export`")
    fb.add_argument("file", nargs="?", metavar="FILE.jsonl", help="with `export`: where to write")
    fb.add_argument("--verdict", choices=["correct", "incorrect"], help="judge the answer (without it: list verdicts)")
    fb.add_argument("--answer", help="the right answer (for incorrect: what the model should have said)")
    fb.add_argument("--comment", help="a note on the answer, kept with the verdict")
    fb.add_argument(
        "--with-text",
        action="store_true",
        help="with `export`: add each document's whole text (document_text), so training needs no database",
    )
    fb.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    fb.set_defaults(func=cmd_feedback)
