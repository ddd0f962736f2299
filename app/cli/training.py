"""`longread train` and `longread runs`: train here, or queue and manage the app's training runs."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from app.cli.common import add_sub_json, local_admin, migrate_db
from app.settings import Settings


def cmd_train(settings: Settings, args: argparse.Namespace) -> int:
    """Run (or resume) a training run: SFT warm start and/or GRPO, as the config says."""
    from app.cli.progress import Progress
    from app.services.train_job import train_run
    from training.config import ConfigError, load_config

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"longread train: {exc}") from None
    if args.queue:
        return _queue_training(settings, config, args)
    run_dir = Path(args.resume or args.run_dir or Path("runs") / time.strftime("%Y%m%d-%H%M%S"))
    with Progress("step") as progress:
        train_run(
            settings,
            config,
            run_dir,
            resume=bool(args.resume),
            max_steps=args.max_steps,
            stop_file=Path(args.stop_file) if args.stop_file else None,
            max_minutes=args.max_minutes,
            log=lambda line: progress.write(line, sys.stdout),
            progress=progress.update,
        )
    return 0


def _queue_training(settings: Settings, config, args: argparse.Namespace) -> int:
    """`longread train CONFIG --queue`: a run of the app (`longread runs`), executed by a training worker."""
    from app.services import training_runs

    if args.resume or args.run_dir or args.max_steps or args.stop_file or args.max_minutes:
        raise SystemExit(
            "longread train: --queue takes only --name (the run's folder is the app's: LONGREAD_TRAINING_DIR)"
        )
    migrate_db(settings)
    try:
        run = training_runs.queue_config(
            settings, config, name=args.name or Path(args.config).stem, user=local_admin(settings)
        )
    except training_runs.RunError as exc:
        raise SystemExit(f"longread train: {exc}") from None
    print(
        f"run {run.id} {run.name!r} queued ({run.total_steps} steps) in {run.run_dir}; "
        f"`longread runs` shows it, a training worker (`longread worker --training`) runs it"
    )
    return 0


def _run_json(r) -> dict:
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

    migrate_db(settings)
    me = local_admin(settings)
    try:
        if args.runs_command == "promote":
            version_id = tr.promote_run(settings, _run_id(args.id), user=me)
            print(
                json.dumps({"run_id": int(args.id), "version_id": version_id})
                if args.json
                else f"run {args.id} is model version {version_id}, now active: new readings use it"
            )
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
        print(
            f"#{r.id} {r.name}: {r.status}{where}, step {r.step}/{r.total_steps}, created "
            f"{r.created_at:%Y-%m-%d %H:%M}, {_evaluation_figure(r.evaluation)}"
            + (f"\n   error: {r.error.splitlines()[0]}" if r.error else "")
        )
    return 0


def _run_id(value: str) -> int:
    if not value.isdigit():
        raise SystemExit(f"longread runs: {value!r} is not a run id")
    return int(value)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """train, runs"""
    train = sub.add_parser("train", help="train the memory agent (SFT warm start and/or multi-conversation GRPO)")
    train.add_argument("config", help="a TOML config file, or a preset name: small, memagent")
    train.add_argument("--run-dir", help="where the run writes (default runs/DATE-TIME)")
    train.add_argument("--resume", metavar="RUN_DIR", help="continue this run from its last checkpoint")
    train.add_argument("--max-steps", type=int, help="stop after this many more steps (resume later)")
    train.add_argument(
        "--stop-file",
        metavar="PATH",
        help="between steps, if this file exists: save a checkpoint and stop (resume later)",
    )
    train.add_argument(
        "--max-minutes",
        type=float,
        help="after this many minutes, save a checkpoint after the step under way and stop (resume later)",
    )
    train.add_argument(
        "--queue",
        action="store_true",
        help="do not train here: queue the run for a training worker, as the app does (`longread runs` lists it)",
    )
    train.add_argument("--name", help="with --queue: the run's name (default: the config file's name)")
    train.set_defaults(func=cmd_train)
    runs = sub.add_parser(
        "runs",
        help="training runs of the app: list, cancel, resume, evaluate, promote",
        description="Without a subcommand: list the runs, newest first.",
    )
    runs.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    runs.set_defaults(func=cmd_runs, runs_command=None)
    runs_sub = runs.add_subparsers(dest="runs_command")
    for verb, text in (
        ("cancel", "stop a queued or running run (it saves a checkpoint first)"),
        ("resume", "queue a cancelled or failed run again: it goes on from its last checkpoint"),
        ("evaluate", "evaluate a finished run beside the active model version (a training worker does)"),
        ("promote", "make a finished run's adapter a model version, active for new readings"),
    ):
        verb_parser = runs_sub.add_parser(verb, help=text)
        verb_parser.add_argument("id", metavar="ID", help="the run's id (`longread runs` lists them)")
        add_sub_json(verb_parser)
