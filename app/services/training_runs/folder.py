"""A run's folder (TRAINING_DIR/run-<id>): the data it was given, and reading what the trainer writes
(metrics.jsonl, samples.jsonl, train.log, checkpoint/)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.db import session_scope
from app.services.training_runs.shared import admin, held_out, require_run
from app.services.users import UserView
from app.settings import Settings
from training.tasks import (
    feedback_answer,
)

#: the trainer saves, then stops, between steps once this file exists in the run's folder
STOP_FILE = "STOP"
#: an evaluation reads the same sets with both models, the active one first
EVAL_SIDES = ("baseline", "candidate")


def write_feedback(data_dir: Path, rows: list[dict]) -> Path:
    """data/feedback-train.jsonl and feedback-heldout.jsonl (the split by document), and the held-out
    part as `longread eval --cases` lines (heldout-cases.jsonl, documents under docs/). Returns the
    training file."""
    (data_dir / "docs").mkdir(parents=True)
    files = {False: data_dir / "feedback-train.jsonl", True: data_dir / "feedback-heldout.jsonl"}
    with (
        files[False].open("w", encoding="utf-8") as train,
        files[True].open("w", encoding="utf-8") as kept,
        (data_dir / "heldout-cases.jsonl").open("w", encoding="utf-8") as cases,
    ):
        for row in rows:
            # ensure_ascii: no character a JSON Lines reader could take for a line end stays raw
            (kept if held_out(row["document_id"]) else train).write(json.dumps(row) + "\n")
            answer = feedback_answer(row)
            if held_out(row["document_id"]) and answer:
                doc = data_dir / "docs" / f"document-{row['document_id']}.txt"
                if not doc.exists():
                    doc.write_text(row["document_text"], encoding="utf-8")
                cases.write(
                    json.dumps({"document": f"docs/{doc.name}", "question": row["question"], "answers": [answer]})
                    + "\n"
                )
    return files[False]


def heldout_cases(run_dir: Path) -> Path | None:
    """The held-out feedback as `longread eval --cases` lines, None when there is none to score."""
    cases = run_dir / "data" / "heldout-cases.jsonl"
    return cases if cases.is_file() and cases.read_text(encoding="utf-8").strip() else None


def progress_dir(run_dir: Path) -> Path:
    """Where an evaluation's commands keep their progress (app/services/evaluation.py `Progress`)."""
    return run_dir / "eval" / "progress"


def progress_file(run_dir: Path, side: str, part: int) -> Path:
    """The progress file of `side`'s evaluation, `part` 0: the sets, 1: the held-out feedback (one job reads both)."""
    return progress_dir(run_dir) / f"{side}-{part}.json"


@dataclass(frozen=True)
class EvalProgress:
    #: questions read so far, both sides together
    done: int
    #: questions both sides read in all; None until the sizes are known (the first job has started)
    total: int | None
    #: seconds left at the pace so far (engines' starts included); None before the first question
    eta_s: float | None
    #: the side reading now (EVAL_SIDES)
    side: str


def eval_progress(run_dir: Path) -> EvalProgress | None:
    """How far a running evaluation is, from its jobs' progress files; None before the first has one.
    A side's job not started yet reads as many questions as the other side's (the same sets)."""
    parts = range(2 if heldout_cases(run_dir) else 1)
    seen = {(side, k): _progress(progress_file(run_dir, side, k)) for side in EVAL_SIDES for k in parts}
    started = [key for key, p in seen.items() if p is not None]
    if not started:
        return None
    sizes = [next((p["total"] for (_, k2), p in seen.items() if k2 == k and p is not None), None) for _, k in seen]
    done = sum(p["done"] for p in seen.values() if p is not None)
    total = sum(sizes) if None not in sizes else None
    elapsed = sum(p["elapsed_s"] for p in seen.values() if p is not None)
    eta = elapsed / done * max(0, total - done) if done and total is not None else None
    return EvalProgress(done, total, eta, started[-1][0])


def _progress(path: Path) -> dict[str, Any] | None:
    try:
        p = json.loads(path.read_text(encoding="utf-8"))
        return {k: p[k] for k in ("done", "total", "elapsed_s")}
    except (OSError, ValueError, TypeError, KeyError):
        return None


def has_checkpoint(run_dir: Path) -> bool:
    """A checkpoint to resume from (the trainer's `resume` also takes one left mid-replace)."""
    return any((run_dir / name / "state.json").is_file() for name in ("checkpoint", "checkpoint.old"))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSON Lines file the trainer appends to; a line being written is left out."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _run_dir(settings: Settings, run_id: int, user: UserView | None) -> Path:
    with session_scope(settings.resolved_database_url) as s:
        admin(s, settings, user)
        return Path(require_run(s, run_id).run_dir)


def run_metrics(settings: Settings, run_id: int, user: UserView | None = None) -> list[dict[str, Any]]:
    """metrics.jsonl's rows (step, phase, reward, accuracy, loss, kl, clip_frac, filtered, tokens_per_s, …)."""
    return read_jsonl(_run_dir(settings, run_id, user) / "metrics.jsonl")


def run_samples(settings: Settings, run_id: int, last: int = 3, user: UserView | None = None) -> list[dict[str, Any]]:
    """The latest sample rollouts (samples.jsonl): question, each step's memory, answer, reward."""
    rows = read_jsonl(_run_dir(settings, run_id, user) / "samples.jsonl")
    return rows[-last:] if last > 0 else []


def run_eval_progress(settings: Settings, run_id: int, user: UserView | None = None) -> EvalProgress | None:
    """How far the run's evaluation is (`eval_progress`); None when it has not begun reading."""
    return eval_progress(_run_dir(settings, run_id, user))


def run_log(settings: Settings, run_id: int, lines: int = 200, user: UserView | None = None) -> str:
    """The last `lines` lines of the run's train.log (the trainer's output, every attempt)."""
    return log_tail(_run_dir(settings, run_id, user) / "train.log", lines)


def log_tail(path: Path, lines: int, max_bytes: int = 1 << 20) -> str:
    """The last `lines` lines of a log, reading at most its last `max_bytes`."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, f.seek(0, 2) - max_bytes))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""
