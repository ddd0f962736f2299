"""What every part of the training runs shares: the run's statuses, the views and choices that cross
the service's edge, the feedback split, and the admin check."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy.orm import Session

from app.models import RunStatus, TrainingRun
from app.services.errors import NotFound, valid_id
from app.services.users import UserView, require_admin, resolve_actor
from app.settings import Settings
from training.config import TrainConfig

STATUSES = tuple(s.value for s in RunStatus)


class RunError(ValueError):
    """A run cannot be started, cancelled, resumed, evaluated or promoted now; the message says why
    and what to do (the API answers 422)."""


@dataclass(frozen=True)
class DataSelection:
    """What a run trains on. A reader's feedback is used only when an admin includes it."""

    #: use collected feedback at all
    include_feedback: bool = False
    #: None: all
    feedback_since: Annotated[date | None, Field(description="only feedback given on or after this day (UTC)")] = None
    #: ids from `data_overview`
    feedback_ids: Annotated[
        tuple[int, ...] | None, Field(description="only these feedback rows; None: every one the date admits")
    ] = None
    contracts: Annotated[bool, Field(description="the training split of the shared contracts' expert QA")] = False
    #: each line {document, question, answers}
    qa_files: Annotated[
        tuple[str, ...], Field(description="QA JSON Lines files on the server (GET /api/training/data)")
    ] = ()
    #: RULER-style (training/config.py Kind)
    synthetic_kinds: Annotated[tuple[str, ...], Field(description="synthetic task kinds; [] for none")] = (
        "single-needle",
    )
    #: a curriculum over the run
    lengths: Annotated[tuple[int, ...], Field(description="synthetic documents' lengths in tokens, shortest first")] = (
        1024,
    )


@dataclass(frozen=True)
class FeedbackRow:
    id: int  # the feedback row
    reading_id: int
    document_id: int
    document_title: str
    username: str  # the document's owner, who gave the verdict
    verdict: str  # correct | incorrect
    question: str
    answer: Annotated[str | None, Field(description="the model's")]
    corrected_answer: str | None
    created_at: datetime
    #: True when its document falls in the held-out part (`held_out`)
    held_out: Annotated[bool, Field(description="its document is kept for evaluation, never trained on")]


@dataclass(frozen=True)
class DataOverview:
    feedback: list[FeedbackRow]
    #: QA files the server offers (path, number of questions)
    qa_files: list[tuple[str, int]]
    #: synthetic kinds with one line each on what they test
    synthetic_kinds: list[tuple[str, str]]
    #: contracts: (training documents, training questions, held-out documents)
    contracts: tuple[int, int, int]


@dataclass(frozen=True)
class SamplePreview:
    source: Annotated[str, Field(description="feedback | contracts | qa | synthetic")]
    question: str
    answers: tuple[str, ...]
    doc_tokens: int
    excerpt: Annotated[str, Field(description="the document's first characters")]


@dataclass(frozen=True)
class RunView:
    id: int
    name: str
    status: Annotated[str, Field(description="queued | running | cancelling | cancelled | failed | done")]
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    step: int
    total_steps: int
    #: seconds left at the run's own pace (None before the first step or when not running)
    eta_s: float | None
    queue_position: Annotated[int | None, Field(description="1 for the next run to start; None unless queued")]
    attempts: int
    error: str | None
    #: as `start_label` says it
    start_version: Annotated[
        str,
        Field(description="what it trains from: a version's name, else `MODEL + adapter ADAPTER` or `base MODEL`"),
    ]
    version_id: Annotated[int | None, Field(description="the model version it was promoted to")]
    #: RunStatus of its evaluation and both sides' summary rows (see TrainingRun.evaluation)
    evaluation: Annotated[
        dict[str, Any] | None, Field(description="status, and the baseline's and this run's summary rows")
    ]
    config: dict[str, Any]
    selection: dict[str, Any]
    run_dir: str
    #: a checkpoint exists: resuming continues from it
    resumable: bool = False
    #: the estimate made when it was started, seconds
    estimate_s: float | None = None


@dataclass(frozen=True)
class RunParams:
    """The hyperparameters an admin sets in the browser; the rest come from the `small` preset.
    Each maps to the TrainConfig field of the same name (its help text is that field's description)."""

    sft_steps: int = 0
    rl_steps: int = 10
    learning_rate: float = 1e-4
    sft_learning_rate: float = 3e-4
    samples_per_step: int = 4
    group_size: int = 8
    temperature: float = 0.7
    kl_coef: float = 0.0
    save_every: int = 2
    #: any other TrainConfig field, validated the same way, but the reading sizes and template: those are the
    #: start version's (training_runs/config.py READING)
    extra: dict[str, Any] = field(default_factory=dict)


def held_out(document_id: int) -> bool:
    """Whether a document's feedback is kept for the evaluation and never trained on: every fifth
    document by id. The split is by document, not by question, so that a held-out score never benefits
    from training on the same text (as training/tasks splits books and contracts).

    >>> [d for d in range(1, 12) if held_out(d)]
    [5, 10]
    """
    return document_id % 5 == 0


def curriculum(lengths: tuple[int, ...], total_steps: int) -> list[tuple[int, int]]:
    """The run's steps split evenly across the lengths, shortest first: (document tokens, until step).

    >>> curriculum((2048, 1024), 10), curriculum((1024,), 3)
    ([(1024, 5), (2048, 10)], [(1024, 3)])
    """
    lengths = sorted(set(lengths))
    return [(n, round(total_steps * (i + 1) / len(lengths))) for i, n in enumerate(lengths)]


def start_label(config: dict[str, Any], version: str | None) -> str:
    """What a run starts from: the model version's name when it has one, else its config's base model and
    the adapter it loads (a run queued from a config file names its adapter only there), else the bare base.

    >>> start_label({"model": "smollm2", "init_adapter": "sha256:be07"}, None)
    'smollm2 + adapter sha256:be07'
    >>> start_label({"model": "smollm2", "init_adapter": None}, None), start_label({}, "run-3-contracts")
    ('base smollm2', 'run-3-contracts')
    """
    if version is not None:
        return version
    adapter = config.get("init_adapter")
    return f"{config['model']} + adapter {adapter}" if adapter else f"base {config['model']}"


def field_help() -> dict[str, str]:
    """TrainConfig's description of every RunParams field, for the form."""
    fields = TrainConfig.model_fields
    return {f.name: fields[f.name].description or "" for f in dataclasses.fields(RunParams) if f.name in fields}


def admin(s: Session, settings: Settings, user: UserView | None) -> UserView:
    actor = resolve_actor(s, settings, user)
    require_admin(actor)
    return actor


def require_run(s: Session, run_id: int) -> TrainingRun:
    run = s.get(TrainingRun, run_id) if valid_id(run_id) else None
    if run is None:
        raise NotFound(f"no training run {run_id}")
    return run
