"""Database models (SQLAlchemy 2.0, typed). Migrations in migrations/ must match them:
`alembic check` runs in the test suite."""

from __future__ import annotations

import enum
from datetime import datetime, timezone

from sqlalchemy import JSON, Boolean, DateTime, Enum, ForeignKey, Integer, MetaData, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator):
    """A zone-aware timestamp on every database: we only ever store UTC, and SQLite hands it back
    without a zone, which cannot be compared with `utcnow()`. The one place that says so."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        return value.replace(tzinfo=timezone.utc) if value is not None and value.tzinfo is None else value


class Base(DeclarativeBase):
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )
    type_annotation_map = {datetime: UTCDateTime()}


class DocumentStatus(str, enum.Enum):
    uploaded = "uploaded"
    parsing = "parsing"
    ready = "ready"
    failed = "failed"


class ReadingStatus(str, enum.Enum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"
    cancelled = "cancelled"


class Verdict(str, enum.Enum):
    """A person's judgement of a reading's answer."""

    correct = "correct"
    incorrect = "incorrect"


def _enum(cls: type[enum.Enum]) -> Enum:
    # Stored as plain strings: adding a state later needs no database type change.
    return Enum(cls, native_enum=False, length=16, validate_strings=True)


class Role(str, enum.Enum):
    reader = "reader"
    admin = "admin"


class User(Base):
    """A person who signs in. Readers see and touch only their own documents (and everything reached
    through them: readings, checkpoints, branches, feedback, page images); admins also manage users,
    model versions and training. `local` is the admin the embedded mode and the CLI act as (created by
    migration 0007; it has no password and cannot sign in until it is given one)."""

    __tablename__ = "user_account"  # "user" is a reserved word in PostgreSQL

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    #: argon2id hash (app/services/users.py); None: no password, cannot sign in
    password_hash: Mapped[str | None] = mapped_column(String(200))
    role: Mapped[Role] = mapped_column(_enum(Role), default=Role.reader)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Document(Base):
    __tablename__ = "document"

    id: Mapped[int] = mapped_column(primary_key=True)
    #: who uploaded it; the same bytes uploaded by two people are two documents sharing one stored blob
    owner_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"), index=True)
    #: the document's own title (PDF metadata, <title>, DOCX/EPUB properties), else the file name
    title: Mapped[str] = mapped_column(String(300))
    #: the client's file name, cleaned (never used to store or to decide the format)
    filename: Mapped[str | None] = mapped_column(String(300))
    format: Mapped[str] = mapped_column(String(16))
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    size_bytes: Mapped[int] = mapped_column(Integer)
    status: Mapped[DocumentStatus] = mapped_column(_enum(DocumentStatus), default=DocumentStatus.uploaded)
    error: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    #: character offset at which each page (PDF) or section (other formats: at headings) starts
    page_starts: Mapped[list[int]] = mapped_column(JSON, default=list)
    #: a label per entry of page_starts: the printed page label (PDF) or the section's heading
    page_labels: Mapped[list[str]] = mapped_column(JSON, default=list)
    char_count: Mapped[int] = mapped_column(Integer, default=0)
    token_count: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    readings: Mapped[list[Reading]] = relationship(back_populates="document")


class Reading(Base):
    """One question on one document, read by the memory agent."""

    __tablename__ = "reading"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("document.id"), index=True)
    question: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(300))
    chunk_tokens: Mapped[int] = mapped_column(Integer)
    memory_tokens: Mapped[int] = mapped_column(Integer)
    answer_tokens: Mapped[int] = mapped_column(Integer)
    template_set: Mapped[str] = mapped_column(String(64))
    #: generative | extractive (inference/agent.py: MEMORY_POLICIES), the model version's
    memory_policy: Mapped[str] = mapped_column(String(16), default="generative", server_default="generative")
    #: the model version that reads it (None: the settings' model, LONGREAD_MODEL)
    model_version_id: Mapped[int | None] = mapped_column(ForeignKey("model_version.id"))
    #: a branch: the reading whose memory was edited at step `branched_at_step`. The branch shares the
    #: parent's steps before that step, has the edited memory as its own checkpoint at that step, and
    #: reads on from the next chunk; the parent never changes.
    parent_reading_id: Mapped[int | None] = mapped_column(ForeignKey("reading.id"), index=True)
    branched_at_step: Mapped[int | None] = mapped_column(Integer)
    #: the contract review this reading is one question of (app/services/review.py); None: asked alone
    review_id: Mapped[int | None] = mapped_column(ForeignKey("review.id"), index=True)
    status: Mapped[ReadingStatus] = mapped_column(_enum(ReadingStatus), default=ReadingStatus.queued)
    #: index of the next chunk to read; equals total_chunks once every chunk is read
    cursor: Mapped[int] = mapped_column(Integer, default=0)
    total_chunks: Mapped[int | None] = mapped_column(Integer)
    answer: Mapped[str | None] = mapped_column(Text)
    final_output: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    heartbeat_at: Mapped[datetime | None] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column()
    finished_at: Mapped[datetime | None] = mapped_column()

    document: Mapped[Document] = relationship(back_populates="readings")
    checkpoints: Mapped[list[Checkpoint]] = relationship(
        back_populates="reading", order_by="Checkpoint.step", cascade="all, delete-orphan"
    )
    feedback: Mapped[list[Feedback]] = relationship(
        back_populates="reading", order_by="Feedback.id", cascade="all, delete-orphan"
    )
    parent: Mapped[Reading | None] = relationship(remote_side=[id], back_populates="branches")
    branches: Mapped[list[Reading]] = relationship(back_populates="parent", order_by="Reading.id")

    def timeline(self) -> list[Checkpoint]:
        """Every checkpoint of this reading in step order, a branch's shared steps (its ancestors')
        included: the memory after chunk 1, 2, … as this reading sees it."""
        own = list(self.checkpoints)
        if self.parent is None or self.branched_at_step is None:
            return own
        return [c for c in self.parent.timeline() if c.step < self.branched_at_step] + own


class Review(Base):
    """A contract review: the readings of one pass that asks every CUAD category of a document
    (app/services/review.py). The answers stay on the readings; this row only groups them."""

    __tablename__ = "review"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("document.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    readings: Mapped[list[Reading]] = relationship(order_by="Reading.id")


class ModelVersion(Base):
    """Weights a reading can be read with: a base model, optionally with a LoRA adapter trained on it.
    At most one version is active (app/services/models.py); new readings use it, and none active means
    the settings' model."""

    __tablename__ = "model_version"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    #: `smollm2` (bundled), a local Hugging Face folder, or (engine `openai`) the served base's name
    base_model: Mapped[str] = mapped_column(String(1000))
    #: a peft LoRA folder trained on base_model; merged into it once for serving (inference/adapters.py)
    adapter_path: Mapped[str | None] = mapped_column(String(1000))
    #: vllm-local | transformers | openai; None: the settings' engine
    engine: Mapped[str | None] = mapped_column(String(32))
    template_set: Mapped[str] = mapped_column(String(64))
    #: how its readings write their memory: generative | extractive (inference/agent.py: MEMORY_POLICIES)
    memory_policy: Mapped[str] = mapped_column(String(16), default="generative", server_default="generative")
    #: chunk and memory sizes it was trained for; None: the settings'
    chunk_tokens: Mapped[int | None] = mapped_column(Integer)
    memory_tokens: Mapped[int | None] = mapped_column(Integer)
    #: the training run's folder
    training_run: Mapped[str | None] = mapped_column(Text)
    #: `longread eval` results (summary, timing, config; or sub_em/exact_match of --cases)
    metrics: Mapped[dict | None] = mapped_column(JSON)
    active: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class RunStatus(str, enum.Enum):
    queued = "queued"
    running = "running"
    #: an admin asked it to stop: the trainer saves a checkpoint after the step under way, then stops
    cancelling = "cancelling"
    cancelled = "cancelled"
    failed = "failed"
    done = "done"


class TrainingRun(Base):
    """A training run started by an admin (browser, API or `longread train --queue`) and executed by a
    training worker (Celery queue `training`). The run's folder holds what the trainer writes: the
    config, metrics.jsonl, samples.jsonl, train.log, its checkpoint and final adapter; the table holds
    who, what, where it is and what came of it (app/services/training_runs)."""

    __tablename__ = "training_run"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    status: Mapped[RunStatus] = mapped_column(_enum(RunStatus), default=RunStatus.queued, index=True)
    #: the TrainConfig (training/config.py) as JSON: what `longread train` runs
    config: Mapped[dict] = mapped_column(JSON)
    #: the data selection the admin made (feedback since/which, QA files, synthetic kinds and lengths)
    selection: Mapped[dict] = mapped_column(JSON)
    run_dir: Mapped[str] = mapped_column(String(1000))
    #: the version it trains from (its adapter is the starting point); None: what its config names (the base
    #: model, and `init_adapter` when it loads one: a run queued from a config file)
    start_version_id: Mapped[int | None] = mapped_column(ForeignKey("model_version.id", ondelete="SET NULL"))
    #: the version promoted from this run
    version_id: Mapped[int | None] = mapped_column(ForeignKey("model_version.id", ondelete="SET NULL"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id", ondelete="SET NULL"))
    step: Mapped[int] = mapped_column(Integer, default=0)
    total_steps: Mapped[int] = mapped_column(Integer)
    #: how many times a worker took it up (a killed worker's run is taken up again, from its checkpoint)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(200))
    #: running: the training worker's last sign of life; queued: when it was last put on the queue (a
    #: run that waits longer than stale_after_s is put on it again by an idle training worker)
    heartbeat_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    #: the run's expected duration when it was started, seconds (training_runs.estimate_seconds)
    estimate_s: Mapped[float | None]
    #: {"status": queued|running|done|failed, "baseline": {...}, "candidate": {...}, "error": ...}:
    #: `longread eval` summaries of the active version and of this run's adapter on the same held-out sets
    evaluation: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class Checkpoint(Base):
    """The memory after chunk `step` (1-based) of a reading. Written once, never updated."""

    __tablename__ = "checkpoint"
    __table_args__ = (UniqueConstraint("reading_id", "step"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    reading_id: Mapped[int] = mapped_column(ForeignKey("reading.id", ondelete="CASCADE"), index=True)
    step: Mapped[int] = mapped_column(Integer)
    memory: Mapped[str] = mapped_column(Text)
    start_token: Mapped[int] = mapped_column(Integer)
    end_token: Mapped[int] = mapped_column(Integer)
    start_char: Mapped[int] = mapped_column(Integer)
    end_char: Mapped[int] = mapped_column(Integer)
    first_page: Mapped[int] = mapped_column(Integer)
    last_page: Mapped[int] = mapped_column(Integer)
    #: `agent` (the model wrote it) or `edited` (a person did: the first step of a branch)
    origin: Mapped[str] = mapped_column(String(64), default="agent")
    #: for an edited memory: who edited it (the entry point and, where known, the user)
    edited_by: Mapped[str | None] = mapped_column(String(200))
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    seconds: Mapped[float]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    reading: Mapped[Reading] = relationship(back_populates="checkpoints")


class Feedback(Base):
    """A person's verdict on a reading's answer, with the right answer and a comment. Never updated:
    a later verdict on the same reading is a new row, and the latest one counts (the export)."""

    __tablename__ = "feedback"

    id: Mapped[int] = mapped_column(primary_key=True)
    reading_id: Mapped[int] = mapped_column(ForeignKey("reading.id", ondelete="CASCADE"), index=True)
    verdict: Mapped[Verdict] = mapped_column(_enum(Verdict))
    #: the right answer (for `incorrect`: what the model should have said)
    corrected_answer: Mapped[str | None] = mapped_column(Text)
    comment: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    reading: Mapped[Reading] = relationship(back_populates="feedback")


class Worker(Base):
    """A process that reads (a Celery worker): its heartbeat and its engine's state. Workers may run
    on other machines, so the database is where the web app learns whether any is alive and
    whether its model is up (app/services/health.py)."""

    __tablename__ = "worker"

    #: "host:pid", unique while the process lives
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    engine: Mapped[str] = mapped_column(String(32))
    #: starting | ready | failed
    engine_state: Mapped[str] = mapped_column(String(16))
    #: why the engine failed (the error and its log's last lines)
    engine_detail: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    #: when the engine entered its state: a model version activated later starts long after the worker did
    engine_since: Mapped[datetime | None]
