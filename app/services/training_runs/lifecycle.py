"""A run's life: start it (or queue a ready config), list and show runs, cancel, resume, evaluate and
promote one."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from datetime import date
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db import session_scope
from app.models import ModelVersion, RunStatus, TrainingRun, User, utcnow
from app.queue import request_evaluation, request_training
from app.services.models import (
    ModelVersionError,
    activate_version,
    eval_metrics,
    register_version,
)
from app.services.training_runs.config import run_config, start_point
from app.services.training_runs.data import check_selection, selected_feedback
from app.services.training_runs.estimate import estimate_config
from app.services.training_runs.folder import has_checkpoint, read_jsonl, write_feedback
from app.services.training_runs.shared import (
    DataSelection,
    RunError,
    RunParams,
    RunView,
    admin,
    held_out,
    require_run,
    start_label,
)
from app.services.users import UserView
from app.settings import Settings
from training.config import TrainConfig
from training.tasks import (
    feedback_answer,
)


def start_run(
    settings: Settings,
    selection: DataSelection,
    params: RunParams,
    *,
    name: str | None = None,
    start_version_id: int | None = None,
    user: UserView | None = None,
) -> RunView:
    """Validate (RunError naming the field to change), write the run's folder, store it queued and
    enqueue it on the `training` queue."""
    check_selection(settings, selection)
    with session_scope(settings.resolved_database_url) as s:
        actor = admin(s, settings, user)
        version, start = start_point(s, settings, start_version_id)
    feedback = [Path("feedback-train.jsonl")] if selection.include_feedback else []
    config = run_config(selection, params, start, feedback)  # validated before anything is written
    rows = selected_feedback(settings, selection, actor)
    train = [r for r in rows if not held_out(r["document_id"])]
    if selection.include_feedback and not any(feedback_answer(r) for r in train):
        raise RunError(
            f"feedback: of the {len(rows)} judged readings selected, none can be trained on (the readings "
            "of every fifth document are held out for the evaluation; an answer judged incorrect "
            "teaches only with a corrected answer): select more feedback, or leave it out"
        )
    recorded = {
        k: (v.isoformat() if isinstance(v, date) else list(v) if isinstance(v, tuple) else v)
        for k, v in dataclasses.asdict(selection).items()
    }
    recorded["lengths"] = sorted(set(selection.lengths))
    recorded["feedback_readings"] = {"train": len(train), "held_out": len(rows) - len(train)}

    def write_data(run_dir: Path) -> None:
        if selection.include_feedback:
            config.data.feedback = [write_feedback(run_dir / "data", rows)]

    return _insert_run(
        settings,
        actor,
        name or f"run of {utcnow():%Y-%m-%d %H:%M}",
        config,
        recorded,
        version.id if version else None,
        write_data,
    )


def queue_config(settings: Settings, config: TrainConfig, *, name: str, user: UserView | None = None) -> RunView:
    """A run of a ready config (`longread train CONFIG --queue`): queued like a run started in the
    browser, its data as the config says (relative paths taken from the current folder)."""
    with session_scope(settings.resolved_database_url) as s:
        actor = admin(s, settings, user)
    config = config.model_copy(deep=True)
    if isinstance(config.init_adapter, Path):  # a sha256:<hex> reference is already location-free
        config.init_adapter = config.init_adapter.resolve()
    config.data.qa_files = [p.resolve() for p in config.data.qa_files]
    config.data.feedback = [p.resolve() for p in config.data.feedback]
    recorded = {
        "config_file": True,
        "synthetic_kinds": list(config.data.synthetic_kinds),
        "lengths": sorted({n for n, _ in config.data.curriculum}),
        "contracts": config.data.contracts,
        "qa_files": [str(p) for p in config.data.qa_files],
        "feedback": [str(p) for p in config.data.feedback],
    }
    return _insert_run(settings, actor, name, config, recorded, None, lambda _run_dir: None)


def _insert_run(
    settings: Settings,
    actor: UserView,
    name: str,
    config: TrainConfig,
    selection: dict,
    start_version_id: int | None,
    write_data: Any,
) -> RunView:
    """Store the run queued, write its folder (`write_data(run_dir)` first: it may change the config),
    commit, then enqueue."""
    name = " ".join(name.split())
    if not name or len(name) > 200:
        raise RunError("name: give the run a name of 1 to 200 characters")
    run_dir: Path | None = None
    try:
        with session_scope(settings.resolved_database_url) as s:
            run = TrainingRun(
                name=name,
                status=RunStatus.queued,
                config={},
                selection=selection,
                run_dir="",
                start_version_id=start_version_id,
                created_by_id=actor.id,
                total_steps=config.sft_steps + config.rl_steps,
                estimate_s=estimate_config(settings, config)[0],
                heartbeat_at=utcnow(),
            )
            s.add(run)
            s.flush()
            folder = (settings.training_dir / f"run-{run.id}").resolve()
            if folder.exists():
                raise RunError(f"{folder} exists already (left by another database?): move it away, then start again")
            run_dir = folder
            run_dir.mkdir(parents=True)
            write_data(run_dir)
            (run_dir / "config.json").write_text(config.model_dump_json(indent=2), encoding="utf-8")
            run.config, run.run_dir = json.loads(config.model_dump_json()), str(run_dir)
            run_id = run.id
    except BaseException:
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    request_training(settings, run_id)
    return get_run(settings, run_id, user=actor)


def _views(s: Session, runs: list[TrainingRun]) -> list[RunView]:
    users = dict(s.execute(select(User.id, User.username).where(User.id.in_({r.created_by_id for r in runs}))).all())
    versions = dict(
        s.execute(
            select(ModelVersion.id, ModelVersion.name).where(ModelVersion.id.in_({r.start_version_id for r in runs}))
        ).all()
    )
    queued = list(
        s.scalars(select(TrainingRun.id).where(TrainingRun.status == RunStatus.queued).order_by(TrainingRun.id))
    )
    views = []
    for r in runs:
        run_dir = Path(r.run_dir)
        eta = None
        if r.status == RunStatus.running:
            rows = read_jsonl(run_dir / "metrics.jsonl")
            eta = rows[-1].get("eta_s") if rows else None
        views.append(
            RunView(
                id=r.id,
                name=r.name,
                status=r.status.value,
                created_by=users.get(r.created_by_id),
                created_at=r.created_at,
                started_at=r.started_at,
                finished_at=r.finished_at,
                step=r.step,
                total_steps=r.total_steps,
                eta_s=eta,
                queue_position=queued.index(r.id) + 1 if r.id in queued else None,
                attempts=r.attempts,
                error=r.error,
                start_version=start_label(r.config, versions.get(r.start_version_id)),
                version_id=r.version_id,
                evaluation=r.evaluation,
                config=r.config,
                selection=r.selection,
                run_dir=r.run_dir,
                resumable=has_checkpoint(run_dir),
                estimate_s=r.estimate_s,
            )
        )
    return views


def list_runs(settings: Settings, user: UserView | None = None) -> list[RunView]:
    """Every run, newest first."""
    with session_scope(settings.resolved_database_url) as s:
        admin(s, settings, user)
        return _views(s, list(s.scalars(select(TrainingRun).order_by(TrainingRun.id.desc()))))


def get_run(settings: Settings, run_id: int, user: UserView | None = None) -> RunView:
    with session_scope(settings.resolved_database_url) as s:
        admin(s, settings, user)
        return _views(s, [require_run(s, run_id)])[0]


def _move(settings: Settings, run_id: int, user: UserView | None, moves: dict[RunStatus, dict], refusal: str) -> None:
    """Apply the first of `moves` ({from status: new values}) whose status the run has, each a guarded
    UPDATE (a worker may change the status meanwhile); RunError(refusal) when none applies."""
    with session_scope(settings.resolved_database_url) as s:
        admin(s, settings, user)
        run = require_run(s, run_id)
        for status, values in moves.items():
            if s.execute(
                update(TrainingRun).where(TrainingRun.id == run_id, TrainingRun.status == status).values(**values)
            ).rowcount:
                return
        s.refresh(run)
        raise RunError(refusal.format(id=run_id, status=run.status.value))


def cancel_run(settings: Settings, run_id: int, user: UserView | None = None) -> RunView:
    """Queued: cancelled at once. Running: `cancelling` until the trainer has saved and stopped."""
    _move(
        settings,
        run_id,
        user,
        {
            RunStatus.queued: {"status": RunStatus.cancelled, "finished_at": utcnow()},
            RunStatus.running: {"status": RunStatus.cancelling},
            RunStatus.cancelling: {"status": RunStatus.cancelling},
        },
        "run {id} is {status}: only a queued or running run can be cancelled",
    )
    return get_run(settings, run_id, user)


def resume_run(settings: Settings, run_id: int, user: UserView | None = None) -> RunView:
    """A cancelled or failed run is queued again; it continues from its last checkpoint."""
    again = {
        "status": RunStatus.queued,
        "error": None,
        "finished_at": None,
        "worker": None,
        "heartbeat_at": utcnow(),
        "attempts": 0,
    }
    _move(
        settings,
        run_id,
        user,
        {RunStatus.cancelled: again, RunStatus.failed: again},
        "run {id} is {status}: only a cancelled or failed run can be resumed",
    )
    request_training(settings, run_id)
    return get_run(settings, run_id, user)


def evaluate_run(settings: Settings, run_id: int, user: UserView | None = None) -> RunView:
    """Queue the evaluation of a finished run's adapter beside the active version (the baseline) on
    the same held-out sets: synthetic tasks at the run's lengths, and the held-out feedback."""
    with session_scope(settings.resolved_database_url) as s:
        admin(s, settings, user)
        run = require_run(s, run_id)
        _require_adapter(run)
        if (run.evaluation or {}).get("status") in ("queued", "running"):
            raise RunError(f"run {run_id} is being evaluated already ({run.evaluation['status']})")
        run.evaluation, run.heartbeat_at = {"status": "queued"}, utcnow()
    request_evaluation(settings, run_id)
    return get_run(settings, run_id, user)


def _require_adapter(run: TrainingRun) -> Path:
    adapter = Path(run.run_dir) / "adapter"
    if run.status != RunStatus.done or not (adapter / "adapter_config.json").is_file():
        raise RunError(
            f"run {run.id} is {run.status.value}: only a finished run (done, with its adapter) can be "
            "evaluated or promoted"
        )
    return adapter


def version_name(run_id: int, run_name: str) -> str:
    """The promoted version's name: also the model name to serve it under (vLLM's `--lora-modules NAME=…`).

    >>> version_name(3, "Contracts: governing law, v2")
    'run-3-contracts-governing-law-v2'
    """
    slug = re.sub(r"[^a-z0-9]+", "-", run_name.lower()).strip("-")[:60].rstrip("-")
    return f"run-{run_id}" + (f"-{slug}" if slug else "")


def promote_run(settings: Settings, run_id: int, user: UserView | None = None) -> int:
    """Register the finished run's adapter as a model version (its evaluation as metrics, lineage:
    start version → run) and make it active; returns the version id. New readings use it; readings
    in flight finish on the version they began with."""
    with session_scope(settings.resolved_database_url) as s:
        actor = admin(s, settings, user)
        run = require_run(s, run_id)
        adapter = _require_adapter(run)
        if run.version_id is not None:  # promoted before (and switched away from since): make it active again
            activate_version(s, run.version_id, actor)
            return run.version_id
        evaluation = run.evaluation or {}
        metrics = None
        if evaluation.get("status") == "done":
            candidate = evaluation["candidate"]
            metrics = eval_metrics({"config": {"label": candidate["label"]}, **candidate})
            if "cases" in candidate:
                metrics["held_out_feedback"] = candidate["cases"]
        config = run.config
        try:
            version = register_version(
                s,
                version_name(run.id, run.name),
                config["model"],
                adapter,
                metrics,
                template_set=config["template_set"],
                chunk_tokens=config["chunk_tokens"],
                memory_tokens=config["memory_tokens"],
                memory_policy=config.get("memory_policy", "generative"),  # a run from before runs kept the policy
                training_run=run.run_dir,
                activate=True,
                user=actor,
            )
        except ModelVersionError as exc:
            raise RunError(str(exc)) from None
        run.version_id = version.id
        return version.id
