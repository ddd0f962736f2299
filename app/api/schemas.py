"""Pydantic models of what the API takes, and of what it returns where no service view says it: pure data.
Every figure (progress, ETA, estimates) is computed by the services (app/services/views.py); a route
returns a service's view as it is (one definition of each: ReadingView, DocumentView, RunView, ReviewView...),
and builds a model here only where the answer is not one view."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.services.feedback import MAX_ANSWER_CHARS, MAX_COMMENT_CHARS
from app.services.readings import (
    MAX_CHUNK_TOKENS,
    MAX_MEMORY_CHARS,
    MAX_MEMORY_TOKENS,
    MAX_QUESTION_CHARS,
    MIN_CHUNK_TOKENS,
    MIN_MEMORY_TOKENS,
)
from app.services.training_runs import DataSelection, FeedbackRow, RunParams, RunView
from app.services.views import CheckpointView


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    chunk_tokens: int | None = Field(None, ge=MIN_CHUNK_TOKENS, le=MAX_CHUNK_TOKENS)
    memory_tokens: int | None = Field(None, ge=MIN_MEMORY_TOKENS, le=MAX_MEMORY_TOKENS)


class EditIn(BaseModel):
    """Edit the memory at `step` and resume from it: a new branch reading."""

    step: int = Field(ge=1, description="the step (1-based) whose memory is replaced")
    memory: str = Field(min_length=1, max_length=MAX_MEMORY_CHARS)


class CheckpointsOut(BaseModel):
    reading_id: int
    checkpoints: list[CheckpointView]


class FeedbackIn(BaseModel):
    verdict: Literal["correct", "incorrect"]
    corrected_answer: str | None = Field(
        None,
        max_length=MAX_ANSWER_CHARS,
        description="the right answer (for `incorrect`: what the model should have said)",
    )
    comment: str | None = Field(None, max_length=MAX_COMMENT_CHARS)


class HealthOut(BaseModel):
    """Whether any worker is alive and how its model is: the page's status line."""

    workers: int = Field(description="workers whose heartbeat is fresh")
    engine_state: str = Field(description="none (no worker alive) | starting | ready | failed")
    engine: str | None
    detail: str | None = Field(description="for failed: the error and the last lines of the engine's log")
    starting_for_s: float | None
    summary: str = Field(description="the same, in one sentence")


# --- training runs and model versions (admins; app/api/training.py) ---------------------------------


class EstimateIn(BaseModel):
    selection: DataSelection = DataSelection()
    #: the main hyperparameters, each the TrainConfig field of the same name (its help text is in
    #: GET /api/training/data `field_help`); `extra` sets any other TrainConfig field
    params: RunParams = RunParams()


class RunIn(EstimateIn):
    name: str | None = Field(None, max_length=200, description="None: a name made from the date")
    start_version_id: int | None = Field(
        None, description="the model version it trains from; None or 0: the active one"
    )


class EstimateOut(BaseModel):
    seconds: float
    basis: str = Field(description="where the figure comes from (a finished run's pace, or the built-in figure)")


class QAFileOut(BaseModel):
    path: str
    questions: int


class KindOut(BaseModel):
    kind: str
    description: str


class ContractsOut(BaseModel):
    documents: int = Field(description="training documents")
    questions: int = Field(description="training questions")
    held_out_documents: int


class DataOverviewOut(BaseModel):
    feedback: list[FeedbackRow]
    qa_files: list[QAFileOut]
    synthetic_kinds: list[KindOut]
    contracts: ContractsOut
    field_help: dict[str, str] = Field(description="each RunParams field's help text (the form's hyperparameters)")


class RunDetailOut(BaseModel):
    """A run as its page shows it: the run, every metrics row, the latest sample rollouts, the log's tail."""

    run: RunView
    metrics: list[dict[str, Any]] = Field(description="metrics.jsonl: step, phase, reward, accuracy, loss, kl, …")
    samples: list[dict[str, Any]] = Field(description="question, gold, each step's memory, answer, reward")
    log: str


class ModelVersionOut(BaseModel):
    id: int
    name: str
    base_model: str
    adapter_path: str | None
    engine: str | None
    template_set: str
    memory_policy: str
    chunk_tokens: int | None
    memory_tokens: int | None
    training_run: str | None = Field(description="the folder of the run that trained it")
    active: bool
    key_metrics: dict[str, float] = Field(description="sub-EM per held-out set")
    metrics: dict[str, Any] | None
    created_at: datetime
    run_id: int | None = Field(None, description="the training run promoted to it")
    lineage: list[str] = Field([], description="from the base model to this version, through runs and versions")


class ReviewIn(BaseModel):
    chunk_tokens: int | None = Field(None, ge=MIN_CHUNK_TOKENS, le=MAX_CHUNK_TOKENS)
    memory_tokens: int | None = Field(None, ge=MIN_MEMORY_TOKENS, le=MAX_MEMORY_TOKENS)
