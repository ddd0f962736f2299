"""`longread` command: serve, worker, migrate, ingest, ask, readings, checkpoints, edit, cancel, retry, feedback,
eval, train, runs, models, users.

The commands run on the server machine and act as the local admin `local` (app/services/users.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.settings import Settings, get_settings
from app.supervisor import die_with_supervisor

if TYPE_CHECKING:  # the commands import what they need when they run: `longread --help` stays fast
    from app.services.views import CheckpointView, ReadingView


def _migrate(settings: Settings) -> None:
    from app.migrate import upgrade

    upgrade(settings.resolved_database_url)


def _me(settings: Settings):  # noqa: ANN202 - a UserView
    """The local admin, whom every command acts as."""
    from app.services.users import local_actor

    return local_actor(settings)


def cmd_migrate(settings: Settings, _args: argparse.Namespace) -> int:
    _migrate(settings)
    print(f"database at head: {settings.resolved_database_url}")
    return 0


def worker_command(loglevel: str = "INFO", training: bool = False) -> list[str]:
    """A reading worker's Celery command, or (`training`) a training worker's. Both run tasks in the
    worker's own process (solo pool; app/queue.py prefetches one message): a reading worker holds one
    model in memory and batches readings itself; a training worker runs one run at a time, its trainer
    a child that dies with it (worker/training_worker.py)."""
    app, queue = ("worker.training_worker", "training") if training else ("worker.celery_app", "longread")
    node = ["--hostname=training@%h"] if training else []  # two workers on one host need two node names
    return [sys.executable, "-m", "celery", "-A", app, "worker", "--pool=solo", f"--queues={queue}", *node,
            f"--loglevel={loglevel}", "--without-gossip", "--without-mingle"]


def cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    _migrate(settings)
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
                print(f"Longread is ready at {url}: {h.summary()}" if h.ready else f"longread: {h.summary()}",
                      flush=True)
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
    _migrate(settings)
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
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning",
                    timeout_graceful_shutdown=settings.shutdown_timeout_s)
    finally:
        stopping.set()
        for supervisor in supervisors:
            supervisor.stop(timeout_s=30)
    return 0


def _ingest(settings: Settings, path: Path) -> int:
    from app.services.documents import UploadError, add_document

    try:
        doc, existing = add_document(settings, path.name, path.read_bytes(), user=_me(settings))
    except (OSError, UploadError) as exc:
        raise SystemExit(f"longread: {path}: {exc}") from None
    if doc.error:
        raise SystemExit(f"longread: {path}: {doc.error}")
    if existing:
        print(f"longread: {path}: already uploaded as document {doc.id} ({doc.title})", file=sys.stderr)
    return doc.id


def cmd_ingest(settings: Settings, args: argparse.Namespace) -> int:
    _migrate(settings)
    doc_id = _ingest(settings, Path(args.file))
    print(doc_id)
    return 0


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    from app.services import readings
    from app.services.errors import NotFound

    _migrate(settings)
    target = args.document
    if Path(target).is_file():
        doc_id = _ingest(settings, Path(target))
    elif target.isdigit():
        doc_id = int(target)
    else:
        raise SystemExit(f"longread: {target}: no such file or document id")
    try:  # read here, in this process: no worker is asked
        ids = [r.id for r in readings.ask(settings, doc_id, args.question, args.chunk_tokens, args.memory_tokens,
                                           enqueue=False, user=_me(settings))]  # fmt: skip
    except (readings.ReadingError, NotFound) as exc:
        raise SystemExit(f"longread ask: {exc}") from None
    _read_and_print(settings, ids, args.json)
    return 0


def _read_and_print(settings: Settings, ids: list[int], as_json: bool) -> None:
    """Read the readings to the end in this process, then print them (`as_json`: one JSON object)."""
    from app.services import readings
    from app.services.runner import run_readings

    started = time.monotonic()
    run_readings(settings, ids)
    elapsed = time.monotonic() - started
    me = _me(settings)
    out = [_reading_json(readings.show(settings, reading_id, user=me)) for reading_id in ids]
    if as_json:
        print(json.dumps({"readings": out}, ensure_ascii=False))
    else:
        for r in out:
            print(f"Q: {r['question']}\nA: {r['answer']}\n   ({r['status']}, {len(r['checkpoints'])} chunks)")
        print(f"read in {elapsed:.1f} s", file=sys.stderr)


def _checkpoint_json(c: CheckpointView) -> dict:
    out = {"step": c.step, "memory": c.memory, "start_char": c.start_char, "end_char": c.end_char,
           "origin": c.origin, "first_page": c.first_page, "last_page": c.last_page}  # fmt: skip
    if c.chunk is not None:
        out["chunk"] = c.chunk
    return out


def _reading_json(r: ReadingView, with_checkpoints: bool = True) -> dict:
    """A reading as `ask --json`, `readings --json` and `checkpoints --json` print it."""
    out = {"id": r.id, "document_id": r.document_id, "question": r.question, "answer": r.answer, "status": r.status,
           "error": r.error, "model": r.model, "chunk_tokens": r.chunk_tokens, "memory_tokens": r.memory_tokens,
           "steps": len(r.checkpoints), "total_chunks": r.total_chunks, "parent_reading_id": r.parent_reading_id,
           "branched_at_step": r.branched_at_step,
           "created_at": r.created_at.isoformat() if r.created_at else None}  # fmt: skip
    if with_checkpoints:
        out["checkpoints"] = [_checkpoint_json(c) for c in r.checkpoints]
    return out


def _reading_id(command: str, value: str) -> int:
    if not value.isdigit():
        raise SystemExit(f"longread {command}: {value!r} is not a reading id")
    return int(value)


def cmd_readings(settings: Settings, args: argparse.Namespace) -> int:
    """A document's readings, newest first: id, status, question, answer."""
    from app.services import readings
    from app.services.errors import NotFound

    _migrate(settings)
    if not args.document.isdigit():
        raise SystemExit(f"longread readings: {args.document!r} is not a document id")
    try:
        views = readings.document_readings(settings, int(args.document), user=_me(settings))
    except NotFound as exc:
        raise SystemExit(f"longread readings: {exc}") from None
    if args.json:
        rows = [_reading_json(r, with_checkpoints=False) for r in views]
        print(json.dumps({"document_id": int(args.document), "readings": rows}, ensure_ascii=False))
        return 0
    for r in views:
        steps = f"{len(r.checkpoints)}/{r.total_chunks}" if r.total_chunks else str(len(r.checkpoints))
        answer = " ".join((r.answer or "").split())
        branch = f" branch of #{r.parent_reading_id} at step {r.branched_at_step}" if r.parent_reading_id else ""
        print(f"#{r.id} {r.status} ({steps} chunks){branch} Q: {' '.join(r.question.split())}"
              + (f"\n   A: {answer}" if answer else "") + (f"\n   error: {r.error}" if r.error else ""))
    return 0


def cmd_checkpoints(settings: Settings, args: argparse.Namespace) -> int:
    """Every checkpoint of a reading: step, origin, pages, characters and the memory (and the chunk read)."""
    from app.services import readings
    from app.services.errors import NotFound

    _migrate(settings)
    reading_id = _reading_id("checkpoints", args.reading)
    try:
        r = readings.show(settings, reading_id, with_chunks=args.with_chunks, user=_me(settings))
    except NotFound as exc:
        raise SystemExit(f"longread checkpoints: {exc}") from None
    if args.json:
        print(json.dumps({"reading_id": r.id, "checkpoints": [_checkpoint_json(c) for c in r.checkpoints]},
                         ensure_ascii=False))  # fmt: skip
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

    _migrate(settings)
    reading_id = _reading_id("edit", args.reading)
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid
        who = None
    try:
        branch = readings.edit(settings, reading_id, args.step, args.memory, f"cli:{who}" if who else "cli",
                               enqueue=False, user=_me(settings))  # fmt: skip
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

    _migrate(settings)
    try:
        r = readings.cancel(settings, _reading_id("cancel", args.reading), user=_me(settings))
    except NotFound as exc:
        raise SystemExit(f"longread cancel: {exc}") from None
    print(json.dumps(_reading_json(r, with_checkpoints=False)) if args.json else f"reading {r.id}: {r.status}")
    return 0


def cmd_retry(settings: Settings, args: argparse.Namespace) -> int:
    """Resume a failed or cancelled reading after its last checkpoint: here, as `ask` reads, or
    (`--queue`) by a worker."""
    from app.services import readings
    from app.services.errors import NotFound

    _migrate(settings)
    reading_id = _reading_id("retry", args.reading)
    try:
        r = readings.retry(settings, reading_id, enqueue=args.queue, user=_me(settings))
    except (readings.ReadingError, NotFound) as exc:
        raise SystemExit(f"longread retry: {exc}") from None
    if args.queue:
        print(json.dumps(_reading_json(r, with_checkpoints=False)) if args.json else
              f"reading {r.id}: queued for a worker")  # fmt: skip
        return 0
    _read_and_print(settings, [reading_id], args.json)
    return 0


def cmd_feedback(settings: Settings, args: argparse.Namespace) -> int:
    """Judge a reading's answer, list the verdicts on it, or export every judged reading as JSON Lines."""
    from dataclasses import asdict

    from app.services import feedback
    from app.services.errors import NotFound

    _migrate(settings)
    if args.target == "export":
        if not args.file or args.verdict or args.answer or args.comment:
            raise SystemExit("longread feedback: usage: longread feedback export FILE.jsonl [--with-text]")
        n = feedback.export_file(settings, Path(args.file), with_text=args.with_text, user=_me(settings))
        print(f"{n} judged reading{'s' if n != 1 else ''} written to {args.file}", file=sys.stderr)
        return 0
    if not args.target.isdigit() or args.file:
        raise SystemExit(f"longread feedback: {args.target!r} is not a reading id (or `export FILE.jsonl`)")
    reading_id = int(args.target)
    try:
        if args.verdict:
            views = [feedback.add_feedback(settings, reading_id, args.verdict, args.answer, args.comment,
                                           user=_me(settings))]
        elif args.answer or args.comment:
            raise SystemExit("longread feedback: --answer and --comment go with --verdict correct|incorrect")
        else:
            views = feedback.reading_feedback(settings, reading_id, user=_me(settings))
    except (feedback.FeedbackError, NotFound) as exc:
        raise SystemExit(f"longread feedback: {exc}") from None
    if args.json:
        rows = [{**asdict(v), "created_at": v.created_at.isoformat()} for v in views]
        print(json.dumps(rows[0] if args.verdict else {"feedback": rows}, ensure_ascii=False))
    elif args.verdict:
        print(f"feedback {views[0].id} on reading {reading_id}: {views[0].verdict}")
    else:
        for v in views:
            extra = "".join(f"; {k}: {x}" for k, x in (("corrected answer", v.corrected_answer),
                                                        ("comment", v.comment)) if x)  # fmt: skip
            print(f"{v.created_at:%Y-%m-%d %H:%M} {v.verdict}{extra}")
    return 0


def _eval_settings(settings: Settings, args: argparse.Namespace) -> tuple[Settings, str]:
    """Settings for the model under evaluation, and a label naming it."""
    updates: dict = {}
    if args.engine:
        updates["engine"] = args.engine
    if args.model:
        updates["model"] = args.model
    if args.openai_url:
        if args.adapter:
            raise SystemExit("longread eval: --adapter merges into a local model; a served model (--openai-url) "
                             "must be served with its adapter")
        updates.update(engine="openai", openai_base_url=args.openai_url)
    if args.openai_model:
        updates["openai_model"] = args.openai_model
    model = updates.get("model", settings.model)
    label = f"served {args.openai_model or ''} at {args.openai_url}".replace("  ", " ") if args.openai_url else model
    if args.adapter:
        from inference.adapters import merged_model
        from inference.models import base_of, resolve_model_path

        model = base_of(model)
        base = resolve_model_path(model, settings.model_cache_dir)
        updates["model"] = str(merged_model(base, Path(args.adapter), settings.model_cache_dir / "merged"))
        label = f"{model} + {args.adapter}"
    return Settings(**{**settings.model_dump(), **updates}), label


def cmd_eval(settings: Settings, args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from app.services.llm import engine_for
    from inference.agent import AgentConfig, MemoryAgent
    from training import evaluate as ev
    from training.tasks import KINDS, case_documents, cases_tasks, with_doc_tokens

    die_with_supervisor()  # started by a training worker to evaluate a run: stop when it dies
    settings, label = _eval_settings(settings, args)
    config = AgentConfig(
        chunk_tokens=args.chunk_tokens or settings.chunk_tokens,
        memory_tokens=args.memory_tokens or settings.memory_tokens,
        answer_tokens=args.answer_tokens or settings.answer_tokens,
        template_set=args.template or settings.template_set,
    )
    batch = args.batch or settings.max_batch
    if args.cases:
        tasks = cases_tasks(Path(args.cases))  # validate the file before starting an engine
        agent = MemoryAgent(engine_for(settings), config)
        tasks = with_doc_tokens(tasks, agent.engine.tokenizer)
        results = ev.evaluate(agent, tasks, "cases", lambda t: "cases", batch)
        out = ev.cases_json(results, case_documents(Path(args.cases)))
        if args.out:
            ev.write({"config": {"label": label, "agent": asdict(config), "engine": agent.engine.name,
                                 "cases": args.cases},
                      "summary": ev.summarize(results), "cases": [asdict(r) for r in results]}, Path(args.out))  # fmt: skip
        if args.json:
            print(json.dumps(out, ensure_ascii=False))
        else:
            for c in out["cases"]:
                print(f"{'✓' if c['correct'] else '✗'} {c['question']}\n  → {c['answer']}")
            print(f"sub-EM {out['sub_em']:.1%}, exact match {out['exact_match']:.1%} on {len(results)} cases")
        return 0
    kinds = list(KINDS) if args.kinds == "all" else [k.strip() for k in args.kinds.split(",") if k.strip()]
    categories = [c.strip() for c in args.categories.split(",") if c.strip()] if args.categories else None
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    agent = MemoryAgent(engine_for(settings), config)
    out_dir = Path(args.out or f"artifacts/eval/{time.strftime('%Y%m%d-%H%M%S')}")
    out = ev.run(agent, out_dir, ev.parse_lengths(args.lengths), args.n, kinds, categories, suites, args.seed, batch,
                 label)  # fmt: skip
    if args.json:
        print(json.dumps({"summary": out["summary"], "timing": out["timing"], "out": str(out_dir)}))
    else:
        print((out_dir / "table.md").read_text(encoding="utf-8"))
        print(f"results, table and plot in {out_dir}/", file=sys.stderr)
    return 0


def cmd_train(settings: Settings, args: argparse.Namespace) -> int:
    """Run (or resume) a training run: SFT warm start and/or GRPO, as the config says."""
    from inference.models import resolve_model_path
    from training.config import ConfigError, load_config
    from training.run import train

    die_with_supervisor()  # started by a training worker: stop when it dies, even by SIGKILL
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"longread train: {exc}") from None
    if args.queue:
        return _queue_training(settings, config, args)
    from app.services.documents import document_text

    def lookup(document_id: int) -> str:  # feedback lines name their document by id; only they touch the database
        return document_text(settings, document_id, user=_me(settings))

    run_dir = Path(args.resume or args.run_dir or Path("runs") / time.strftime("%Y%m%d-%H%M%S"))
    train(config, run_dir, resolve_model_path(config.model, settings.model_cache_dir), resume=bool(args.resume),
          max_steps=args.max_steps, stop_file=Path(args.stop_file) if args.stop_file else None,
          max_minutes=args.max_minutes, documents=lookup, vllm_python=settings.vllm_python)
    return 0


def _queue_training(settings: Settings, config, args: argparse.Namespace) -> int:  # noqa: ANN001 - a TrainConfig
    """`longread train CONFIG --queue`: a run of the app (`longread runs`), executed by a training worker."""
    from app.services import training_runs

    if args.resume or args.run_dir or args.max_steps or args.stop_file or args.max_minutes:
        raise SystemExit("longread train: --queue takes only --name (the run's folder is the app's: LONGREAD_TRAINING_DIR)")
    _migrate(settings)
    try:
        run = training_runs.queue_config(settings, config, name=args.name or Path(args.config).stem,
                                         user=_me(settings))
    except training_runs.RunError as exc:
        raise SystemExit(f"longread train: {exc}") from None
    print(f"run {run.id} {run.name!r} queued ({run.total_steps} steps) in {run.run_dir}; "
          f"`longread runs` shows it, a training worker (`longread worker --training`) runs it")
    return 0


def _models_table(settings: Settings, versions: list[dict]) -> str:
    from app.services.models import key_metrics

    rows = [("id", "name", "base", "adapter", "active", "key metrics (sub-EM)")]
    rows.append(("0", "base", settings.model, "-", "" if any(v["active"] for v in versions) else "*",
                 "the settings' model (LONGREAD_MODEL)"))
    for v in versions:
        metrics = ", ".join(f"{k} {x:.0%}" for k, x in key_metrics(v["metrics"]).items()) or "-"
        rows.append((str(v["id"]), v["name"], v["base_model"], v["adapter_path"] or "-", "*" if v["active"] else "",
                     metrics))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows)


def cmd_models(settings: Settings, args: argparse.Namespace) -> int:
    """List model versions, register one (`add`), or choose the one new readings use (`activate`)."""
    from app.db import session_scope
    from app.services import models as mv
    from app.services.errors import NotFound

    _migrate(settings)
    me = _me(settings)
    try:
        with session_scope(settings.resolved_database_url) as s:
            if args.models_command == "add":
                v = mv.register_version(s, args.name, activate=args.activate, user=me,
                                        **_version_fields(settings, args))
                print(f"model version {v.id} {v.name!r} registered" + (", active" if args.activate else
                      f"; `longread models activate {v.id}` makes new readings use it"))  # fmt: skip
                return 0
            if args.models_command == "activate":
                target = 0 if args.id == "base" else int(args.id) if args.id.isdigit() else -1
                if target < 0:
                    raise mv.ModelVersionError(f"{args.id!r} is not a version id (or 0 / base)")
                v = mv.activate_version(s, target, me)
                print(f"new readings use model version {v.id} {v.name!r}" if v else
                      f"new readings use the settings' model ({settings.model})")  # fmt: skip
                return 0
            versions = [mv.version_dict(v) for v in mv.list_versions(s, me)]
    except (mv.ModelVersionError, NotFound) as exc:
        raise SystemExit(f"longread models: {exc}") from None
    if args.json:
        active = next((v["id"] for v in versions if v["active"]), None)
        print(json.dumps({"active": active, "base_model": settings.model, "versions": versions}, ensure_ascii=False))
    else:
        print(_models_table(settings, versions))
    return 0


def _version_fields(settings: Settings, args: argparse.Namespace) -> dict:
    """What `models add` registers: its flags, else what the adapter's training run says, else settings."""
    from app.services import models as mv

    run = mv.run_defaults(args.adapter) if args.adapter else {}
    metrics = None
    if args.metrics:
        try:
            metrics = mv.eval_metrics(json.loads(Path(args.metrics).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise mv.ModelVersionError(f"--metrics {args.metrics}: {exc}") from None
    return dict(
        base_model=args.base or run.get("base_model") or settings.model, adapter_path=args.adapter, metrics=metrics,
        template_set=args.template or run.get("template_set") or settings.template_set, engine=args.engine,
        chunk_tokens=args.chunk_tokens or run.get("chunk_tokens"), memory_tokens=args.memory_tokens or run.get("memory_tokens"),
        training_run=args.training_run or run.get("training_run"),
    )  # fmt: skip


def _run_json(r) -> dict:  # noqa: ANN001 - a RunView
    from dataclasses import asdict

    out = asdict(r)
    for key in ("created_at", "started_at", "finished_at"):
        out[key] = out[key].isoformat() if out[key] else None
    return out


def _evaluation_figure(evaluation: dict | None) -> str:
    """The evaluation in a few words: mean sub-EM of the baseline → the run, or where it stands."""
    from app.services.models import key_metrics

    if not evaluation:
        return "-"
    if evaluation.get("status") != "done":
        return f"evaluation {evaluation.get('status')}"
    means = []
    for side in ("baseline", "candidate"):
        scores = key_metrics({"summary": evaluation[side]["summary"]})
        means.append(sum(scores.values()) / len(scores) if scores else 0.0)
    return f"sub-EM {means[0]:.0%} (active) → {means[1]:.0%}"


def cmd_runs(settings: Settings, args: argparse.Namespace) -> int:
    """Training runs of the app: list them, or cancel, resume, evaluate or promote one."""
    from app.services import training_runs as tr
    from app.services.errors import NotFound

    _migrate(settings)
    me = _me(settings)
    try:
        if args.runs_command == "promote":
            version_id = tr.promote_run(settings, _run_id(args.id), user=me)
            print(json.dumps({"run_id": int(args.id), "version_id": version_id}) if args.json else
                  f"run {args.id} is model version {version_id}, now active: new readings use it")  # fmt: skip
            return 0
        if args.runs_command:
            act = {"cancel": tr.cancel_run, "resume": tr.resume_run, "evaluate": tr.evaluate_run}[args.runs_command]
            r = act(settings, _run_id(args.id), user=me)
            said = f"evaluation {r.evaluation['status']}" if args.runs_command == "evaluate" else r.status
            print(json.dumps(_run_json(r)) if args.json else f"run {r.id}: {said}")
            return 0
        runs = tr.list_runs(settings, user=me)
    except (tr.RunError, NotFound) as exc:
        raise SystemExit(f"longread runs: {exc}") from None
    if args.json:
        print(json.dumps({"runs": [_run_json(r) for r in runs]}, ensure_ascii=False))
        return 0
    for r in runs:
        where = f" (#{r.queue_position} in the queue)" if r.queue_position else ""
        print(f"#{r.id} {r.name}: {r.status}{where}, step {r.step}/{r.total_steps}, created "
              f"{r.created_at:%Y-%m-%d %H:%M}, {_evaluation_figure(r.evaluation)}"
              + (f"\n   error: {r.error.splitlines()[0]}" if r.error else ""))  # fmt: skip
    return 0


def _run_id(value: str) -> int:
    if not value.isdigit():
        raise SystemExit(f"longread runs: {value!r} is not a run id")
    return int(value)


def _read_password(prompt: str) -> str:
    """A password from standard input: asked for without echo (twice) on a terminal, else its first line."""
    import getpass

    if sys.stdin.isatty():
        first = getpass.getpass(prompt)
        if getpass.getpass("Again: ") != first:
            raise SystemExit("longread users: the two passwords differ")
        return first
    return sys.stdin.readline().rstrip("\r\n")


def cmd_users(settings: Settings, args: argparse.Namespace) -> int:
    """Users: add (password from standard input), list, set-role, set-password, disable, enable."""
    from dataclasses import asdict

    from app.services import users
    from app.services.errors import NotFound

    _migrate(settings)
    me = _me(settings)
    try:
        if args.users_command == "add":
            u = users.add_user(settings, args.name, _read_password(f"Password for {args.name}: "), args.role, user=me)
            print(f"user {u.id} {u.username!r} added ({u.role})")
        elif args.users_command == "set-role":
            u = users.update_user(settings, users.find_user(settings, args.name, user=me).id, role=args.role, user=me)
            print(f"{u.username} is now {u.role}")
        elif args.users_command == "set-password":
            target = users.find_user(settings, args.name, user=me)
            users.update_user(settings, target.id, password=_read_password(f"New password for {args.name}: "), user=me)
            print(f"password of {target.username} changed (their sessions and tokens end)")
        elif args.users_command in ("disable", "enable"):
            u = users.update_user(settings, users.find_user(settings, args.name, user=me).id,
                                  disabled=args.users_command == "disable", user=me)  # fmt: skip
            print(f"{u.username} is {'disabled' if u.disabled else 'enabled'}")
        else:
            listed = users.list_users(settings, me)
            if args.json:
                print(json.dumps({"users": [{**asdict(u), "created_at": u.created_at.isoformat() if u.created_at
                                             else None} for u in listed]}))  # fmt: skip
            else:
                for u in listed:
                    state = "disabled" if u.disabled else "active"
                    print(f"{u.id:>4}  {u.username:<24} {u.role:<7} {state}"
                          + ("" if u.has_password else "  (no password: cannot sign in)"))
    except (users.UserError, NotFound) as exc:
        raise SystemExit(f"longread users: {exc}") from None
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="longread", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the web app (and, by default, a worker)")
    serve.add_argument("--no-worker", action="store_true", help="do not start a Celery worker")
    serve.set_defaults(func=cmd_serve)
    worker = sub.add_parser("worker", help="run a Celery worker that reads documents (or, --training, runs training)")
    worker.add_argument("--loglevel", default="INFO")
    worker.add_argument("--training", action="store_true",
                        help="run training runs and their evaluations (queue `training`), one at a time, instead")
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
    rd = sub.add_parser("readings", help="a document's readings, newest first: status, question, answer")
    rd.add_argument("document", metavar="DOCUMENT_ID")
    rd.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    rd.set_defaults(func=cmd_readings)
    cp = sub.add_parser("checkpoints", help="every checkpoint of a reading: the memory after each chunk")
    cp.add_argument("reading", metavar="READING_ID")
    cp.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    cp.add_argument("--with-chunks", action="store_true", help="add the text of the chunk each step read")
    cp.set_defaults(func=cmd_checkpoints)
    ed = sub.add_parser("edit", help="edit the memory at a step and resume from it: a new branch, read here",
                        description="Makes a branch of the reading: it shares steps 1..K-1, has MEMORY as step K "
                        "and reads on from chunk K+1 to a new answer, in this process as `ask` does. The original "
                        "reading never changes; editing the last step only re-answers.")
    ed.add_argument("reading", metavar="READING_ID")
    ed.add_argument("--step", type=int, required=True, metavar="K", help="the step (1-based) whose memory to replace")
    ed.add_argument("--memory", required=True, metavar="TEXT", help="the new memory at step K")
    ed.add_argument("--json", action="store_true", help="print one JSON object on stdout (as `ask --json`)")
    ed.set_defaults(func=cmd_edit)
    cancel = sub.add_parser("cancel", help="stop a queued or running reading (its checkpoints stay)")
    cancel.add_argument("reading", metavar="READING_ID")
    cancel.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    cancel.set_defaults(func=cmd_cancel)
    retry = sub.add_parser("retry", help="resume a failed or cancelled reading after its last checkpoint")
    retry.add_argument("reading", metavar="READING_ID")
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
    fb.add_argument("target", metavar="READING_ID|export")
    fb.add_argument("file", nargs="?", metavar="FILE.jsonl", help="with `export`: where to write")
    fb.add_argument("--verdict", choices=["correct", "incorrect"])
    fb.add_argument("--answer", help="the right answer (for incorrect: what the model should have said)")
    fb.add_argument("--comment")
    fb.add_argument("--with-text", action="store_true",
                    help="with `export`: add each document's whole text (document_text), so training needs no database")
    fb.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    fb.set_defaults(func=cmd_feedback)
    ev = sub.add_parser(
        "eval",
        help="score a model on held-out planted facts per length and contracts per category, or on --cases",
        description="Held-out synthetic facts (novel pg37106) per document length and held-out contracts "
        "(training/tasks.py: HELD_OUT_CONTRACTS) per question category: sub-EM and exact match as a "
        "Markdown table, a PNG plot and results.json in --out. With --cases FILE.jsonl (one "
        '{"document", "question", "answers"} a line) it scores that set instead.',
    )
    ev.add_argument("--cases", metavar="FILE.jsonl", help="a user's set instead of the held-out suites")
    ev.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ev.add_argument("--out", metavar="DIR", help="where results.json, table.md and plot.png go "
                    "(default artifacts/eval/TIMESTAMP; with --cases only when given)")
    ev.add_argument("--lengths", default="2048,8192,32768,131072,book",
                    help="document lengths in tokens (8K style allowed), 'book' for the whole held-out novel")
    ev.add_argument("--n", type=int, default=16, help="synthetic questions per length")
    ev.add_argument("--kinds", default="single-needle",
                    help="synthetic task kinds, comma-separated, or 'all' (single-needle, multi-needle, "
                    "multi-hop, variable-tracking); 'absent' asks for a fact the document does not hold (correct: "
                    "the answer says the document does not say)")
    ev.add_argument("--categories", help="contract question categories, comma-separated (default all), "
                    "e.g. 'Governing Law'")
    ev.add_argument("--suites", default="synthetic,contracts", help="synthetic, contracts, or both")
    ev.add_argument("--seed", type=int, default=0, help="synthetic task seed (same seed, same tasks)")
    ev.add_argument("--model", help="'smollm2-reader' (bundled, trained), 'smollm2' (bundled, untrained) or a "
                    "Hugging Face folder (default: settings)")
    ev.add_argument("--adapter", metavar="DIR", help="a peft LoRA folder, merged into the base once and cached")
    ev.add_argument("--engine", choices=["vllm-local", "transformers", "openai"], help="default: settings")
    ev.add_argument("--openai-url", help="evaluate a served model at this OpenAI-compatible base URL")
    ev.add_argument("--openai-model", help="model name on that server (default: its only model)")
    ev.add_argument("--template", help="template set (default: settings)")
    ev.add_argument("--chunk-tokens", type=int)
    ev.add_argument("--memory-tokens", type=int)
    ev.add_argument("--answer-tokens", type=int)
    ev.add_argument("--batch", type=int, help="questions read together (default: settings' max_batch)")
    ev.set_defaults(func=cmd_eval)
    train = sub.add_parser("train", help="train the memory agent (SFT warm start and/or multi-conversation GRPO)")
    train.add_argument("config", help="a TOML config file, or a preset name: small, memagent")
    train.add_argument("--run-dir", help="where the run writes (default runs/DATE-TIME)")
    train.add_argument("--resume", metavar="RUN_DIR", help="continue this run from its last checkpoint")
    train.add_argument("--max-steps", type=int, help="stop after this many more steps (resume later)")
    train.add_argument("--stop-file", metavar="PATH", help="between steps, if this file exists: save a checkpoint "
                       "and stop (resume later)")
    train.add_argument("--max-minutes", type=float, help="after this many minutes, save a checkpoint after the step "
                       "under way and stop (resume later)")
    train.add_argument("--queue", action="store_true", help="do not train here: queue the run for a training "
                       "worker, as the app does (`longread runs` lists it)")
    train.add_argument("--name", help="with --queue: the run's name (default: the config file's name)")
    train.set_defaults(func=cmd_train)
    runs = sub.add_parser("runs", help="training runs of the app: list, cancel, resume, evaluate, promote",
                          description="Without a subcommand: list the runs, newest first.")
    runs.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    runs.set_defaults(func=cmd_runs, runs_command=None)
    runs_sub = runs.add_subparsers(dest="runs_command")
    for verb, text in (("cancel", "stop a queued or running run (it saves a checkpoint first)"),
                       ("resume", "queue a cancelled or failed run again: it goes on from its last checkpoint"),
                       ("evaluate", "evaluate a finished run beside the active model version (a training worker does)"),
                       ("promote", "make a finished run's adapter a model version, active for new readings")):  # fmt: skip
        verb_parser = runs_sub.add_parser(verb, help=text)
        verb_parser.add_argument("id", metavar="ID")
        verb_parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    models = sub.add_parser("models", help="model versions: list, add a trained adapter, activate one",
                            description="Without a subcommand: list model versions (* marks the one new readings use).")
    models.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    models.set_defaults(func=cmd_models, models_command=None)
    models_sub = models.add_subparsers(dest="models_command")
    add = models_sub.add_parser("add", help="register a model version (a LoRA adapter on a base model)",
                                description="Defaults come from the adapter's training run (RUN_DIR/config.json "
                                "beside RUN_DIR/adapter), else from the settings.")
    add.add_argument("name")
    add.add_argument("--adapter", metavar="DIR", help="a peft LoRA adapter folder (e.g. runs/RUN/adapter)")
    add.add_argument("--base", help="base model: 'smollm2' or a Hugging Face folder; with engine openai the "
                     "base's served name (default: the training run's, else settings)")
    add.add_argument("--metrics", metavar="RESULTS.json", help="`longread eval` results to keep with it")
    add.add_argument("--template", help="template set it was trained on (default: the run's, else settings)")
    add.add_argument("--chunk-tokens", type=int, help="chunk size it was trained for (default: the run's)")
    add.add_argument("--memory-tokens", type=int, help="memory size it was trained for (default: the run's)")
    add.add_argument("--engine", choices=["vllm-local", "transformers", "openai"], help="default: settings")
    add.add_argument("--training-run", metavar="RUN_DIR", help="default: the adapter's parent when it is a run")
    add.add_argument("--activate", action="store_true", help="new readings use it from now on")
    activate = models_sub.add_parser(
        "activate", help="new readings use this version (0 or 'base': the settings' model, LONGREAD_MODEL)"
    )
    activate.add_argument("id", metavar="ID")
    us = sub.add_parser("users", help="users: list, add, set-role, set-password, disable, enable",
                        description="Without a subcommand: list users. Passwords are read from standard input "
                        "(asked for without echo on a terminal).")
    us.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    us.set_defaults(func=cmd_users, users_command=None)
    us_sub = us.add_subparsers(dest="users_command")
    us_list = us_sub.add_parser("list", help="every user")
    us_list.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    us_add = us_sub.add_parser("add", help="add a user; the password is read from standard input")
    us_add.add_argument("name")
    us_add.add_argument("--role", choices=["reader", "admin"], default="reader")
    us_role = us_sub.add_parser("set-role", help="make a user a reader or an admin")
    us_role.add_argument("name")
    us_role.add_argument("role", choices=["reader", "admin"])
    us_pw = us_sub.add_parser("set-password", help="a new password, read from standard input")
    us_pw.add_argument("name")
    for verb, text in (("disable", "the user can no longer sign in; their sessions and tokens stop working"),
                       ("enable", "undo disable")):  # fmt: skip
        us_sub.add_parser(verb, help=text).add_argument("name")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(get_settings(), args)


if __name__ == "__main__":
    raise SystemExit(main())
