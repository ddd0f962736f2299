"""Training and evaluating a run: the library calls `longread train` and `longread eval` make, and the
child process a training worker runs them in (app/services/train_runner.py).

The worker hands its child a typed job (`TrainJob`, `EvalJob`), written as JSON into the run's folder:
`python -m app.services.train_job JOB.json`. A child, not a call: a trainer that runs out of memory or
crashes fails its run, not the worker; the worker kills it on a shutdown and its log is the run's.
An evaluation's outcome comes back the same way, as JSON in the file the job names.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.settings import Settings, get_settings
from app.supervisor import die_with_supervisor

if TYPE_CHECKING:
    from training.config import TrainConfig


def train_run(
    settings: Settings,
    config: TrainConfig,
    run_dir: Path,
    *,
    resume: bool = False,
    max_steps: int | None = None,
    stop_file: Path | None = None,
    max_minutes: float | None = None,
    log: Callable[[str], None] = lambda line: print(line, flush=True),
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Train (or resume) `config` into `run_dir` on the settings' model cache; feedback lines find their
    document as the local admin (training.run.train says what the other arguments do)."""
    from app.services.documents import document_text
    from app.services.users import local_actor
    from inference.models import model_folder
    from training.run import train

    def lookup(document_id: int) -> str:  # feedback lines name their document by id; only they touch the database
        return document_text(settings, document_id, user=local_actor(settings))

    train(
        config,
        run_dir,
        model_folder(config.model, cache_dir=settings.model_cache_dir),
        resume=resume,
        max_steps=max_steps,
        stop_file=stop_file,
        max_minutes=max_minutes,
        documents=lookup,
        vllm_python=settings.vllm_python,
        log=log,
        progress=progress,
    )


def suites_json(out: dict[str, Any]) -> dict[str, Any]:
    """What an evaluation of suites reports (`longread eval --json`, the run's evaluation): the summary rows,
    the suites' misses and the timing."""
    return {"summary": out["summary"], "suites": out["suites"], "timing": out["timing"]}


@dataclass(frozen=True)
class TrainJob:
    """Train the run in `run_dir` on its config.json, to its end or until `stop_file` appears."""

    run_dir: str
    stop_file: str
    #: from the run's last checkpoint
    resume: bool


@dataclass(frozen=True)
class EvalJob:
    """Evaluate one reader with the run's sizes: the synthetic dev suite at `lengths` and `kinds` (results
    in `out`), then the held-out feedback in `cases` if any, in one process (one start of the engine, not one
    a set); the outcome is written to `result`."""

    model: str
    adapter: str | None
    engine: str
    template_set: str
    chunk_tokens: int
    memory_tokens: int
    answer_tokens: int
    #: the Progress files kept while it reads the sets and the cases (app/services/training_runs/folder.py
    #: progress_file)
    progress: str
    result: str
    cases: str | None = None
    cases_progress: str | None = None
    out: str | None = None
    n: int = 16
    lengths: tuple[int, ...] = ()
    kinds: tuple[str, ...] = ("single-needle",)
    #: the side's model version's (a run's: its start version's), so each side reads as it would be served
    memory_policy: str = "generative"


JOBS: dict[str, type[TrainJob] | type[EvalJob]] = {"train": TrainJob, "eval": EvalJob}


def write_job(job: TrainJob | EvalJob, path: Path) -> list[str]:
    """Write the job to `path`; the command that runs it."""
    kind = next(k for k, cls in JOBS.items() if isinstance(job, cls))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"kind": kind, **asdict(job)}, indent=1), encoding="utf-8")
    return [sys.executable, "-m", __name__, str(path)]


def read_job(path: Path) -> TrainJob | EvalJob:
    fields = json.loads(path.read_text(encoding="utf-8"))
    cls = JOBS[fields.pop("kind")]
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def run_train(settings: Settings, job: TrainJob) -> None:
    from training.config import load_config

    run_dir = Path(job.run_dir)
    train_run(settings, load_config(run_dir / "config.json"), run_dir, resume=job.resume, stop_file=Path(job.stop_file))


def run_eval(settings: Settings, job: EvalJob) -> None:
    from app.services import evaluation
    from training import evaluate as ev
    from training.tasks import case_documents

    r = evaluation.reader(
        settings,
        model=job.model,
        adapter=job.adapter,
        engine=job.engine,
        chunk_tokens=job.chunk_tokens,
        memory_tokens=job.memory_tokens,
        answer_tokens=job.answer_tokens,
        template_set=job.template_set,
        memory_policy=job.memory_policy,
    )
    # dev, not held out: this evaluation chooses between readers (held-out sets report the one shipped)
    outcome = suites_json(
        evaluation.evaluate_suites(
            r,
            ["synthetic"],
            "dev",
            Path(job.out) if job.out else None,
            lengths=list(job.lengths) or None,
            n=job.n,
            kinds=list(job.kinds),
            progress=Path(job.progress),
        )
    )
    if job.cases:
        results = evaluation.evaluate_cases(
            r, Path(job.cases), progress=Path(job.cases_progress) if job.cases_progress else None
        )
        outcome["cases"] = ev.cases_json(results, case_documents(Path(job.cases)))
    result = Path(job.result)
    part = result.with_name(result.name + ".part")
    part.write_text(json.dumps(outcome, ensure_ascii=False), encoding="utf-8")
    os.replace(part, result)  # all or nothing: a job killed while writing leaves no result


def main(argv: list[str]) -> int:
    die_with_supervisor()  # started by a training worker: stop when it dies, even by SIGKILL
    job = read_job(Path(argv[0]))
    settings = get_settings()
    if isinstance(job, TrainJob):
        run_train(settings, job)
    else:
        run_eval(settings, job)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
