"""What a training worker does (worker/training_worker.py calls these by run id): claim a queued run,
train it in a child process and watch it, evaluate a finished run beside the active model, and sweep up
runs that no worker is on. What a run is (started, cancelled, resumed, promoted) is
app/services/training_runs; this module only moves runs along.

The trainer is a child process, not a call (app/services/train_job.py, handed a typed job): a run that
crashes (out of memory, a bad file) fails with its log's last lines and the worker serves on. A worker
that dies, however it dies, takes its trainer with it (app/supervisor.py `die_with_supervisor`, in the
child); its run's heartbeat goes stale and a live worker's sweeper queues it again, to go on from its
last checkpoint. A cancelled run stops at its next step boundary, after saving a checkpoint (the STOP
file).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from app.db import session_scope
from app.models import RunStatus, TrainingRun, utcnow
from app.queue import request_evaluation, request_training
from app.services.models import active_version
from app.services.train_job import EvalJob, TrainJob, write_job
from app.services.training_runs import (
    EVAL_SIDES,
    STOP_FILE,
    has_checkpoint,
    heldout_cases,
    log_tail,
    progress_dir,
    progress_file,
    read_jsonl,
)
from app.settings import Settings
from app.supervisor import SUPERVISOR_PID, describe_exit

log = logging.getLogger(__name__)

#: how often a child process is checked on, the run's heartbeat refreshed and a cancel looked for
POLL_S = 2.0
#: how long a child asked to stop (SIGTERM) may take before it is killed
KILL_AFTER_S = 30.0


class EvaluationFailed(RuntimeError):
    """An evaluation job did not finish; the message ends with its log's last lines."""


def _child_env(settings: Settings) -> dict[str, str]:
    # The child calls die_with_supervisor(): it dies with this worker, even when the worker is SIGKILLed.
    # Its tracker records stay with the app's training data, not in whatever folder the worker started in.
    tracking = os.environ.get("LONGREAD_TRACKING_DIR") or str(settings.training_dir / "tracking")
    return {**os.environ, SUPERVISOR_PID: str(os.getpid()), "PYTHONUNBUFFERED": "1", "LONGREAD_TRACKING_DIR": tracking}


def _trainer_env(settings: Settings) -> dict[str, str]:
    """The trainer's environment: torch computes on all cores but one (unless OMP_NUM_THREADS says
    otherwise), which stay for the web app and the reading worker on the same machine. Spinning
    OpenMP threads on a core that something else holds stall each other: in the browser test on a
    2-core machine, beside Chromium redrawing the run's page and a vLLM server, a tiny run's SFT steps
    went at 12-13 tokens/s on torch's 2 threads, against 120-150 for a run alone."""
    return {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) - 1)), **_child_env(settings)}


def _watch(proc: subprocess.Popen, tick: Callable[[], bool], stopping: threading.Event) -> int | None:
    """Wait for `proc`, calling `tick()` every POLL_S: its exit status, or None when it was ended early
    because the worker is shutting down or `tick()` said the work is no longer this worker's."""
    while True:
        try:
            return proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if stopping.is_set() or not tick():
            proc.terminate()
            try:
                proc.wait(timeout=KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return None


def _store(settings: Settings, what: str, change: Callable[[Any], None], tries: int = 5) -> None:
    """Run `change(session)` in a transaction, retrying through a database outage: a run's outcome
    must not be lost to a hiccup (the sweeper would otherwise train it again)."""
    for attempt in range(tries):
        try:
            with session_scope(settings.resolved_database_url) as s:
                change(s)
            return
        except Exception:
            if attempt == tries - 1:
                raise
            log.warning("could not store %s; trying again", what, exc_info=True)
            time.sleep(POLL_S * (attempt + 1))


# --- training ------------------------------------------------------------------------------------


def claim(settings: Settings, run_id: int, worker: str) -> Path | None:
    """Take the run if it is queued (a guarded UPDATE: a duplicate task, or a second worker, finds
    nothing to take); its folder, or None."""
    with session_scope(settings.resolved_database_url) as s:
        now = utcnow()
        taken = s.execute(
            update(TrainingRun)
            .where(TrainingRun.id == run_id, TrainingRun.status == RunStatus.queued)
            .values(
                status=RunStatus.running,
                worker=worker,
                heartbeat_at=now,
                attempts=TrainingRun.attempts + 1,
                error=None,
                finished_at=None,
            )
        ).rowcount
        if not taken:
            return None
        run = s.get(TrainingRun, run_id)
        run.started_at = run.started_at or now
        log.info("claimed training run %d (attempt %d)", run_id, run.attempts)
        return Path(run.run_dir)


def _start_trainer(settings: Settings, run_dir: Path, stop: Path, worker: str) -> subprocess.Popen:
    """The trainer's process, from the run's last checkpoint when it has one, its output in train.log."""
    job = TrainJob(run_dir=str(run_dir), stop_file=str(stop), resume=has_checkpoint(run_dir))
    cmd = write_job(job, run_dir / "train-job.json")
    with (run_dir / "train.log").open("ab") as out:
        out.write(f"--- {utcnow():%Y-%m-%d %H:%M:%S} UTC, {worker}: {' '.join(cmd)}: {job}\n".encode())
        out.flush()
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=_trainer_env(settings), start_new_session=True
        )


def _requeue(s: Any, mine: tuple, now: datetime) -> None:
    """The worker is shutting down: its run goes back to the queue (a cancel in progress is done); a training
    worker's sweeper enqueues it once it has waited stale_after_s."""
    s.execute(
        update(TrainingRun)
        .where(*mine, TrainingRun.status == RunStatus.running)
        .values(status=RunStatus.queued, worker=None, heartbeat_at=now)
    )
    s.execute(
        update(TrainingRun)
        .where(*mine, TrainingRun.status == RunStatus.cancelling)
        .values(status=RunStatus.cancelled, worker=None, finished_at=now)
    )


def execute(settings: Settings, run_id: int, worker: str, stopping: threading.Event) -> None:
    """Claim the run and train it to its end, to a cancel, or to the worker's shutdown (then it is
    queued again and goes on from its last checkpoint)."""
    if stopping.is_set():  # a task delivered during the shutdown: left queued for the next worker's sweeper
        return
    run_dir = claim(settings, run_id, worker)
    if run_dir is None:
        log.info("training run %d is not queued (taken, cancelled or finished already): nothing to do", run_id)
        return
    stop = run_dir / STOP_FILE
    stop.unlink(missing_ok=True)
    mine = (
        TrainingRun.id == run_id,
        TrainingRun.worker == worker,
        TrainingRun.status.in_([RunStatus.running, RunStatus.cancelling]),
    )

    def tick() -> bool:
        try:
            with session_scope(settings.resolved_database_url) as s:
                run = s.scalars(select(TrainingRun).where(*mine)).first()
                if run is None:  # taken up by another worker after ours was thought dead: stop
                    return False
                run.heartbeat_at, run.step = utcnow(), len(read_jsonl(run_dir / "metrics.jsonl"))
                if run.status == RunStatus.cancelling:
                    stop.touch()
        except Exception:  # a database hiccup must not end the run: the next tick tries again
            log.warning("could not refresh training run %d's heartbeat", run_id, exc_info=True)
        return True

    try:
        code = _watch(_start_trainer(settings, run_dir, stop, worker), tick, stopping)
    except Exception as exc:  # the trainer could not be started: the run fails, the worker serves on
        log.exception("training run %d could not be started", run_id)
        code, error = -1, f"{type(exc).__name__}: {exc}"
    else:
        error = None
    stopped = stop.exists()
    stop.unlink(missing_ok=True)
    now = utcnow()
    if code is None:
        if not stopping.is_set():
            return  # no longer ours: its new worker writes its outcome

        _store(settings, f"training run {run_id} put back in the queue", lambda s: _requeue(s, mine[:2], now))
        return
    if (run_dir / "adapter" / "adapter_config.json").is_file():
        status = RunStatus.done
    elif stopped and error is None:
        status = RunStatus.cancelled
    else:
        status = RunStatus.failed
        error = error or (
            f"the trainer stopped ({describe_exit(code)}); the end of its log:\n" + log_tail(run_dir / "train.log", 20)
        )
    steps = len(read_jsonl(run_dir / "metrics.jsonl"))
    _store(
        settings,
        f"training run {run_id}'s outcome",
        lambda s: s.execute(
            update(TrainingRun)
            .where(*mine)
            .values(status=status, error=error, step=steps, finished_at=now, heartbeat_at=now)
        ),
    )
    log.info("training run %d: %s at step %d", run_id, status.value, steps)


# --- evaluation ----------------------------------------------------------------------------------


def eval_job(
    settings: Settings, config: dict[str, Any], model: tuple[str, str | None, str], run_dir: Path, side: str
) -> EvalJob:
    """The evaluation of one model, adapter and memory policy (`side`) on the run's dev sets, in one process:
    synthetic tasks at the run's lengths (and kinds), then the held-out feedback when there is any; each set
    keeps its progress file. Both sides use the same engine and the run's reading sizes, each its own memory
    policy (its version's); a served model (engine `openai`) cannot load the candidate's adapter, so then both
    read in-process (`transformers`)."""
    cases = heldout_cases(run_dir)
    data = config.get("data", {})
    return EvalJob(
        model=model[0],
        adapter=model[1],
        engine="transformers" if settings.engine == "openai" else settings.engine,
        template_set=config["template_set"],
        chunk_tokens=config["chunk_tokens"],
        memory_tokens=config["memory_tokens"],
        answer_tokens=config["answer_tokens"],
        memory_policy=model[2],
        out=str(run_dir / "eval" / side),
        n=settings.eval_n,
        lengths=tuple(sorted({int(n) for n, _ in data.get("curriculum", [])})),
        kinds=tuple(data.get("synthetic_kinds") or ["single-needle"]),
        progress=str(progress_file(run_dir, side, 0)),
        cases=str(cases) if cases is not None else None,
        cases_progress=str(progress_file(run_dir, side, 1)) if cases is not None else None,
        result=str(run_dir / "eval" / "jobs" / f"{side}.result.json"),
    )


def evaluate(settings: Settings, run_id: int, worker: str, stopping: threading.Event) -> None:
    """Evaluate a finished run's adapter (the candidate) and the active version (the baseline) on the
    same held-out sets; the outcome goes into the run's `evaluation`."""
    url = settings.resolved_database_url
    if stopping.is_set():  # a task delivered during the shutdown: left queued for the next worker's sweeper
        return
    with session_scope(url) as s:
        run = s.get(TrainingRun, run_id)
        if run is None or (run.evaluation or {}).get("status") != "queued":
            log.info("training run %d has no evaluation waiting: nothing to do", run_id)
            return
        run.evaluation, run.heartbeat_at = {"status": "running", "worker": worker}, utcnow()
        version = active_version(s)
        baseline = (
            (version.name, (version.base_model, version.adapter_path, version.memory_policy or "generative"))
            if version
            else (f"{settings.model} (no model version active)", (settings.model, None, "generative"))
        )
        config, run_dir = dict(run.config), Path(run.run_dir)
        policy = config.get("memory_policy", "generative")  # the run's start version's
        candidate = (f"run {run.id}: {run.name}", (config["model"], str(run_dir / "adapter"), policy))

    def ours(run: TrainingRun | None) -> bool:
        return run is not None and (run.evaluation or {}).get("worker") == worker

    def tick() -> bool:
        try:
            with session_scope(url) as s:
                run = s.get(TrainingRun, run_id)
                if not ours(run):
                    return False
                run.heartbeat_at = utcnow()
        except Exception:  # a database hiccup must not end the evaluation
            log.warning("could not refresh training run %d's evaluation heartbeat", run_id, exc_info=True)
        return True

    shutil.rmtree(progress_dir(run_dir), ignore_errors=True)  # an earlier attempt's: this one counts afresh
    result: dict[str, Any] | None = {"status": "done"}
    try:
        for side, (label, model) in zip(EVAL_SIDES, (baseline, candidate), strict=True):
            out = _evaluate_side(
                settings, eval_job(settings, config, model, run_dir, side), run_dir, side, tick, stopping
            )
            if out is None:
                result = None
                break
            result[side] = {"label": label, **out}
    except EvaluationFailed as exc:
        result = {"status": "failed", "error": str(exc)}

    def save(s: Any) -> None:
        run = s.get(TrainingRun, run_id)
        if ours(run):
            run.evaluation = result if result is not None else {"status": "queued"}
            run.heartbeat_at = utcnow()

    if result is None and not stopping.is_set():
        return  # no longer ours
    _store(settings, f"training run {run_id}'s evaluation", save)  # shutting down: queued for the next worker
    log.info("training run %d evaluation: %s", run_id, result["status"] if result else "queued again")


def _evaluate_side(
    settings: Settings,
    job: EvalJob,
    run_dir: Path,
    side: str,
    tick: Callable[[], bool],
    stopping: threading.Event,
) -> dict[str, Any] | None:
    """Run one side's evaluation job: {"summary", "suites", "timing"} (+ "cases": the held-out feedback's
    {"sub_em", "exact_match", "n", "cases"}), or None when stopped early."""
    log_path = run_dir / "eval.log"
    result = Path(job.result)
    result.unlink(missing_ok=True)  # an earlier attempt's
    cmd = write_job(job, run_dir / "eval" / "jobs" / f"{side}.json")
    with log_path.open("ab") as log_file:
        log_file.write(f"--- {utcnow():%Y-%m-%d %H:%M:%S} UTC, {side}: {' '.join(cmd)}: {job}\n".encode())
        log_file.flush()
        proc = subprocess.Popen(
            cmd, stdout=log_file, stderr=subprocess.STDOUT, env=_child_env(settings), start_new_session=True
        )
    code = _watch(proc, tick, stopping)
    if code is None:
        return None
    try:
        printed = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise EvaluationFailed(
            f"the evaluation of the {side} stopped ({describe_exit(code)}); the end of its "
            f"log:\n{log_tail(log_path, 15)}"
        ) from None
    out = dict(summary=printed["summary"], suites=printed.get("suites") or {}, timing=printed["timing"])
    if "cases" in printed:
        cases = printed["cases"]
        out["cases"] = dict(
            sub_em=cases["sub_em"], exact_match=cases["exact_match"], n=len(cases["cases"]), cases=cases["cases"]
        )
    return out


# --- the sweeper ---------------------------------------------------------------------------------


def _stale(before: datetime):
    return (TrainingRun.heartbeat_at < before) | TrainingRun.heartbeat_at.is_(None)


def sweep(settings: Settings, idle: bool) -> None:
    """Find runs no task is on. A run (or evaluation) whose worker died: its heartbeat is older than
    1.5 x stale_after_s; it is queued again (a cancel in progress is done). When this worker is `idle`,
    also a run or evaluation queued longer than stale_after_s: its task may have been lost (a broker
    restart), so it is enqueued again; a duplicate task finds nothing to claim."""
    now = utcnow()
    dead = now - timedelta(seconds=settings.stale_after_s * 1.5)
    waited = now - timedelta(seconds=settings.stale_after_s)
    train, evaluate_ = [], []
    with session_scope(settings.resolved_database_url) as s:
        for run_id, attempts, step in s.execute(
            select(TrainingRun.id, TrainingRun.attempts, TrainingRun.step).where(
                TrainingRun.status == RunStatus.running, _stale(dead)
            )
        ):
            # A run that keeps killing its worker (out of memory, say) fails at the cap instead of forever.
            capped = attempts >= settings.max_attempts
            values = (
                dict(
                    status=RunStatus.failed,
                    finished_at=now,
                    error=(
                        f"the training worker stopped {attempts} times while training this (last at step {step}); "
                        "resume to try again from its last checkpoint"
                    ),
                )
                if capped
                else dict(status=RunStatus.queued, worker=None, heartbeat_at=now)
            )
            if (
                s.execute(
                    update(TrainingRun)
                    .where(TrainingRun.id == run_id, TrainingRun.status == RunStatus.running, _stale(dead))
                    .values(**values)
                ).rowcount
                and not capped
            ):
                log.warning("training run %d: its worker stopped beating; queued again", run_id)
                train.append(run_id)
        s.execute(
            update(TrainingRun)
            .where(TrainingRun.status == RunStatus.cancelling, _stale(dead))
            .values(status=RunStatus.cancelled, worker=None, finished_at=now)
        )
        for run in s.scalars(select(TrainingRun).where(TrainingRun.status == RunStatus.done, _stale(dead))):
            if (run.evaluation or {}).get("status") == "running":
                log.warning("training run %d: the worker evaluating it stopped beating; queued again", run.id)
                run.evaluation, run.heartbeat_at = {"status": "queued"}, now
                evaluate_.append(run.id)
        if idle:
            for run in s.scalars(
                select(TrainingRun).where(TrainingRun.status.in_([RunStatus.queued, RunStatus.done]), _stale(waited))
            ):
                if run.status == RunStatus.queued:
                    train.append(run.id)
                elif (run.evaluation or {}).get("status") == "queued":
                    evaluate_.append(run.id)
                else:
                    continue
                run.heartbeat_at = now
    for run_id in train:
        request_training(settings, run_id)
    for run_id in evaluate_:
        request_evaluation(settings, run_id)
