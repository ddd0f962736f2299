"""Pydantic models of what the API takes, and of what it returns where no service view says it: pure data.
Every figure (progress, ETA, estimates) is computed by the services (app/services/views.py); a route
returns a service's view as it is where the view is the answer (ReadingView, StepView, RunView,
ReviewView: one definition of each), or copies it into a model here with `out(Model, view)`."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from app.services.feedback import MAX_ANSWER_CHARS, MAX_COMMENT_CHARS
from app.services.readings import (
    MAX_CHUNK_TOKENS,
    MAX_MEMORY_CHARS,
    MAX_MEMORY_TOKENS,
    MAX_QUESTION_CHARS,
    MIN_CHUNK_TOKENS,
    MIN_MEMORY_TOKENS,
)
from app.services.training_runs import RunParams, RunView
from app.services.views import CheckpointView


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


M = TypeVar("M", bound=BaseModel)


def out(model: type[M], view: object) -> M:
    """The schema `model` filled from a service's view (a dataclass), nested views included."""
    return model.model_validate(view, from_attributes=True)


class ReadingEstimateOut(_Out):
    """How long questions would take to read the whole document on the active engine: n questions asked
    together, n * per_question_s + ceil(n / shared_by) * shared_s, plus start_s when given."""

    chunks: int
    seconds: float | None = Field(description="one question read alone; None when there is no speed figure")
    engine: str
    chunk_tokens: int
    memory_tokens: int
    basis: str
    per_question_s: float | None = Field(description="what each question of a pass adds (its prompts)")
    shared_s: float | None = Field(description="what up to `shared_by` questions of a pass share (the writing)")
    shared_by: int
    start_s: float | None = Field(description="the model's start first: no worker has it up (None: it is up)")


class PageOut(_Out):
    page: int = Field(description="1-based number, as in a checkpoint's first_page/last_page")
    start: int = Field(description="character offset in the document's text where it starts")
    label: str = Field(description="printed page label (PDF) or the section's heading")


class DocumentOut(_Out):
    id: int
    title: str
    filename: str | None
    format: str
    status: str
    error: str | None
    size_bytes: int
    pages: int = Field(description="number of pages (PDF) or sections (other formats)")
    page_unit: str = Field(description="`page` for PDF, `section` (a heading and what follows) otherwise")
    char_count: int
    token_count: int | None
    estimate: ReadingEstimateOut | None = None
    page_map: list[PageOut] | None = Field(None, description="on single-document responses only")
    created_at: datetime


class DeletionOut(_Out):
    """What deleting a document removed."""

    document_id: int
    title: str
    status: str = Field(description="the document's status when it was deleted (ready, failed, ...)")
    readings: int
    checkpoints: int
    feedback: int
    file_removed: bool = Field(description="False when another document shares the stored file (same bytes)")


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    chunk_tokens: int | None = Field(None, ge=MIN_CHUNK_TOKENS, le=MAX_CHUNK_TOKENS)
    memory_tokens: int | None = Field(None, ge=MIN_MEMORY_TOKENS, le=MAX_MEMORY_TOKENS)


class SourceOut(_Out):
    """Where one sentence of the final memory or of the answer came from."""

    part: Literal["memory", "answer"]
    sentence: str
    via: str | None = Field(
        description="for a sentence of the answer, the sentence of the final memory it "
        "was answered from (its passage is that sentence's)"
    )
    step: int | None = Field(description="the step where it entered the memory and stayed; None: no memory held it")
    origin: str | None = Field(description="`agent`, or `edited`: a person wrote the memory at that step")
    first_page: int | None
    last_page: int | None
    page: int | None = Field(description="the page (or section) the passage starts on")
    passage_start: int | None = Field(
        description="the best-matching passage of that step's chunk: character offsets in the document's text"
    )
    passage_end: int | None
    passage: str | None
    score: float = Field(description="share of the sentence's words found in the passage")


class EditIn(BaseModel):
    """Edit the memory at `step` and resume from it: a new branch reading."""

    step: int = Field(ge=1, description="the step (1-based) whose memory is replaced")
    memory: str = Field(min_length=1, max_length=MAX_MEMORY_CHARS)


class CheckpointsOut(_Out):
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


class FeedbackOut(_Out):
    id: int
    reading_id: int
    document_id: int
    question: str
    answer: str | None = Field(description="the model's answer that was judged")
    verdict: str
    corrected_answer: str | None
    comment: str | None
    created_at: datetime


class HealthOut(_Out):
    """Whether any worker is alive and how its model is: the page's status line."""

    workers: int = Field(description="workers whose heartbeat is fresh")
    engine_state: str = Field(description="none (no worker alive) | starting | ready | failed")
    engine: str | None
    detail: str | None = Field(description="for failed: the error and the last lines of the engine's log")
    starting_for_s: float | None
    summary: str = Field(description="the same, in one sentence")


# --- training runs and model versions (admins; app/api/training.py) ---------------------------------


class SelectionIn(BaseModel):
    """What a run trains on (app/services/training_runs DataSelection). A reader's feedback is used
    only when an admin includes it."""

    include_feedback: bool = False
    feedback_since: date | None = Field(None, description="only feedback given on or after this day (UTC)")
    feedback_ids: list[int] | None = Field(
        None, description="only these feedback rows; None: every one the date admits"
    )
    contracts: bool = Field(False, description="the training split of the shared contracts' expert QA")
    qa_files: list[str] = Field([], description="QA JSON Lines files on the server (GET /api/training/data)")
    synthetic_kinds: list[str] = Field(["single-needle"], description="synthetic task kinds; [] for none")
    lengths: list[int] = Field([1024], description="synthetic documents' lengths in tokens, shortest first")


class EstimateIn(BaseModel):
    selection: SelectionIn = SelectionIn()
    #: the main hyperparameters, each the TrainConfig field of the same name (its help text is in
    #: GET /api/training/data `field_help`); `extra` sets any other TrainConfig field
    params: RunParams = RunParams()


class RunIn(EstimateIn):
    name: str | None = Field(None, max_length=200, description="None: a name made from the date")
    start_version_id: int | None = Field(
        None, description="the model version it trains from; None or 0: the active one"
    )


class EstimateOut(_Out):
    seconds: float
    basis: str = Field(description="where the figure comes from (a finished run's pace, or the built-in figure)")


class FeedbackRowOut(_Out):
    id: int
    reading_id: int
    document_id: int
    document_title: str
    username: str
    verdict: str
    question: str
    answer: str | None = Field(description="the model's")
    corrected_answer: str | None
    created_at: datetime
    held_out: bool = Field(description="its document is kept for evaluation, never trained on")


class QAFileOut(_Out):
    path: str
    questions: int


class KindOut(_Out):
    kind: str
    description: str


class ContractsOut(_Out):
    documents: int = Field(description="training documents")
    questions: int = Field(description="training questions")
    held_out_documents: int


class DataOverviewOut(_Out):
    feedback: list[FeedbackRowOut]
    qa_files: list[QAFileOut]
    synthetic_kinds: list[KindOut]
    contracts: ContractsOut
    field_help: dict[str, str] = Field(description="each RunParams field's help text (the form's hyperparameters)")


class SampleOut(_Out):
    source: str = Field(description="feedback | contracts | qa | synthetic")
    question: str
    answers: list[str]
    doc_tokens: int
    excerpt: str = Field(description="the document's first characters")


class RunDetailOut(_Out):
    """A run as its page shows it: the run, every metrics row, the latest sample rollouts, the log's tail."""

    run: RunView
    metrics: list[dict[str, Any]] = Field(description="metrics.jsonl: step, phase, reward, accuracy, loss, kl, …")
    samples: list[dict[str, Any]] = Field(description="question, gold, each step's memory, answer, reward")
    log: str


class ModelVersionOut(_Out):
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
