"""Training runs from the app: admins choose data, start a run on the `training` queue, watch it,
cancel or resume it, evaluate it against the active model and promote it (issue 12).

A run's folder (TRAINING_DIR/run-<id>) holds what the trainer writes (config.json, metrics.jsonl,
samples.jsonl, train.log, checkpoint/, adapter/) and what the run was given (data/: the selected
feedback split by document into train and held-out parts, with the documents' text). The table
(app/models.py TrainingRun) holds who, what, the status, the step and the evaluation. The training
worker (worker/training_worker.py) executes runs one at a time; everything here only reads and
writes the database and the folder, and enqueues.

Every function is for admins (`user=`: the acting user; None: the local admin in embedded mode, refused
in production — as everywhere in app/services).

Feedback is split by document (`held_out`): the readings of every fifth document are kept for the
evaluation and never trained on. A run's `heartbeat_at` is, while it runs, its worker's last sign of
life and, while it waits, when it was last put on the queue: training workers' sweepers
(app/services/train_runner.py) take up a run whose worker died and re-enqueue one whose task was lost.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db import session_scope
from app.models import Document, Feedback, ModelVersion, Reading, RunStatus, TrainingRun, User, utcnow
from app.queue import request_evaluation, request_training
from app.services.errors import NotFound, valid_id
from app.services.feedback import export_rows
from app.services.llm import tokenizer_for
from app.services.models import ModelVersionError, activate_version, active_version, eval_metrics, register_version
from app.services.users import UserView, require_admin, resolve_actor
from app.settings import Settings
from inference.models import READER, READER_ADAPTER, base_of
from training.config import ConfigError, TrainConfig, make_config
from training.data import doc_tokens_at
from training.tasks import (CONTRACTS_DIR, HELD_OUT_CONTRACTS, SYNTHETIC_KINDS, cases_tasks, contract_tasks,
                            count_tokens, feedback_answer, synthetic_tasks)

STATUSES = tuple(s.value for s in RunStatus)
#: the trainer saves, then stops, between steps once this file exists in the run's folder
STOP_FILE = "STOP"
#: documents of the synthetic tasks are at least this long: room for the planted facts and their distractors
MIN_LENGTH, MAX_LENGTH = 256, 1_048_576
KIND_HELP = {
    "single-needle": "one invented fact planted in a novel, with a look-alike about someone else; asks for it",
    "multi-needle": "two or three values of one key planted apart; asks for all of them",
    "multi-hop": "two facts to chain (whose object is in which box, which box is in which town)",
    "variable-tracking": "a chain of assignments (VAR B = VAR A) to follow to a number",
    "absent": "only look-alikes planted; asks about someone never mentioned (answer: the document does not say)",
}
#: Built-in speed of the 2-core development machine (SmolLM2-135M, LoRA), used until this
#: deployment has finished a run: SFT trains ~200 tokens/s (all threads; 175-198 in the run of
#: benchmarks/retrain_in_browser.py on 2026-11-24); an RL step of 4 samples x 8 rollouts of
#: 2,048-token documents takes ~250 s (one thread), scaling with samples x rollouts x document tokens.
SFT_TOKENS_PER_S = 200.0
RL_SECONDS_PER_UNIT = 250.0 / (4 * 8 * 2048)


class RunError(ValueError):
    """A run cannot be started, cancelled, resumed, evaluated or promoted now; the message says why
    and what to do (the API answers 422)."""


@dataclass(frozen=True)
class DataSelection:
    """What a run trains on. A reader's feedback is used only when an admin includes it."""

    #: use collected feedback at all
    include_feedback: bool = False
    #: only feedback given on or after this day (UTC); None: all
    feedback_since: date | None = None
    #: only these feedback rows' readings (ids from `data_overview`); None: every one the date admits
    feedback_ids: tuple[int, ...] | None = None
    #: the training split of the shared contracts' expert QA
    contracts: bool = False
    #: question/answer JSON Lines files on the server ({document, question, answers})
    qa_files: tuple[str, ...] = ()
    #: synthetic RULER-style task kinds (training/config.py Kind); () for none
    synthetic_kinds: tuple[str, ...] = ("single-needle",)
    #: document lengths in tokens of the synthetic tasks, shortest first (a curriculum over the run)
    lengths: tuple[int, ...] = (1024,)


@dataclass(frozen=True)
class FeedbackRow:
    id: int  # the feedback row
    reading_id: int
    document_id: int
    document_title: str
    username: str  # the document's owner, who gave the verdict
    verdict: str  # correct | incorrect
    question: str
    answer: str | None  # the model's
    corrected_answer: str | None
    created_at: datetime
    #: True when its document falls in the held-out part (kept for evaluation, never trained on)
    held_out: bool


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
    source: str  # feedback | contracts | qa | synthetic
    question: str
    answers: tuple[str, ...]
    doc_tokens: int
    #: the document's first characters
    excerpt: str


@dataclass(frozen=True)
class RunView:
    id: int
    name: str
    status: str  # one of STATUSES
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    step: int
    total_steps: int
    #: seconds left at the run's own pace (None before the first step or when not running)
    eta_s: float | None
    #: 1 for the next run to start, … (None unless queued)
    queue_position: int | None
    attempts: int
    error: str | None
    start_version: str  # the name of the version it trains from, or "base"
    version_id: int | None  # set once promoted
    #: RunStatus of its evaluation and both sides' summary rows (see TrainingRun.evaluation)
    evaluation: dict[str, Any] | None
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
    extra: dict[str, Any] = field(default_factory=dict)  # any other TrainConfig field, validated the same way


def held_out(document_id: int) -> bool:
    """Whether a document's feedback is kept for the evaluation and never trained on: every fifth
    document by id. The split is by document, not by question, so that a held-out score never benefits
    from training on the same text (as training/tasks.py splits books and contracts).

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


def field_help() -> dict[str, str]:
    """TrainConfig's description of every RunParams field, for the form."""
    fields = TrainConfig.model_fields
    return {f.name: fields[f.name].description or "" for f in dataclasses.fields(RunParams) if f.name in fields}


def _admin(s: Session, settings: Settings, user: UserView | None) -> UserView:
    actor = resolve_actor(s, settings, user)
    require_admin(actor)
    return actor


def _require(s: Session, run_id: int) -> TrainingRun:
    run = s.get(TrainingRun, run_id) if valid_id(run_id) else None
    if run is None:
        raise NotFound(f"no training run {run_id}")
    return run


# --- the data ------------------------------------------------------------------------------------


def data_overview(settings: Settings, user: UserView | None = None) -> DataOverview:
    with session_scope(settings.resolved_database_url) as s:
        _admin(s, settings, user)
        feedback = _feedback_rows(s)
    return DataOverview(feedback=feedback, qa_files=_qa_files(settings), synthetic_kinds=list(KIND_HELP.items()),
                        contracts=_contracts())  # fmt: skip


def _feedback_rows(s: Session) -> list[FeedbackRow]:
    """Each judged reading with its latest verdict (as the export has them), newest first."""
    latest = select(func.max(Feedback.id)).group_by(Feedback.reading_id).scalar_subquery()
    rows = s.execute(
        select(Feedback.id, Feedback.verdict, Feedback.corrected_answer, Feedback.created_at, Reading.id,
               Reading.question, Reading.answer, Document.id, Document.title, User.username)
        .join(Reading, Reading.id == Feedback.reading_id).join(Document, Document.id == Reading.document_id)
        .join(User, User.id == Document.owner_id).where(Feedback.id.in_(latest)).order_by(Feedback.id.desc())
    )  # fmt: skip
    return [FeedbackRow(id=fid, reading_id=rid, document_id=did, document_title=title, username=username,
                        verdict=verdict.value, question=question, answer=answer, corrected_answer=corrected,
                        created_at=created if created.tzinfo else created.replace(tzinfo=UTC), held_out=held_out(did))
            for fid, verdict, corrected, created, rid, question, answer, did, title, username in rows]  # fmt: skip


def _qa_files(settings: Settings) -> list[tuple[str, int]]:
    """The JSON Lines files in TRAINING_DIR/qa (an operator puts them there) and their question counts."""
    folder = settings.training_dir / "qa"
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    return [(str(f.resolve()), sum(1 for line in f.read_text(encoding="utf-8").splitlines() if line.strip()))
            for f in files]  # fmt: skip


def _contracts() -> tuple[int, int, int]:
    """(training contracts, their questions, held-out contracts); zeros where the shared data is missing."""
    try:
        cases = json.loads((CONTRACTS_DIR / "cases.json").read_text(encoding="utf-8"))
    except OSError:
        return 0, 0, 0
    train = [c for c in cases if c["id"] not in HELD_OUT_CONTRACTS]
    return len(train), sum(len(c["qa"]) for c in train), len(cases) - len(train)


def _selected_feedback(settings: Settings, selection: DataSelection, actor: UserView) -> list[dict]:
    """The export rows (with the documents' text) that the selection includes, both parts of the split."""
    if not selection.include_feedback:
        return []
    rows = export_rows(settings, with_text=True, user=actor)
    if selection.feedback_since is not None:
        rows = [r for r in rows if datetime.fromisoformat(r["created_at"]).date() >= selection.feedback_since]
    if selection.feedback_ids is not None:
        with session_scope(settings.resolved_database_url) as s:
            wanted = set(s.scalars(select(Feedback.reading_id).where(Feedback.id.in_(list(selection.feedback_ids)))))
        rows = [r for r in rows if r["reading_id"] in wanted]
    return rows


def _check_selection(settings: Settings, selection: DataSelection) -> None:
    """RunError naming the choice to change."""
    if not selection.lengths:
        raise RunError("lengths: give at least one document length in tokens, e.g. 1024")
    for n in selection.lengths:
        if isinstance(n, bool) or not isinstance(n, int) or not MIN_LENGTH <= n <= MAX_LENGTH:
            raise RunError(f"lengths: {n!r} is not a document length from {MIN_LENGTH} to {MAX_LENGTH:,} tokens")
    unknown = [k for k in selection.synthetic_kinds if k not in SYNTHETIC_KINDS]
    if unknown:
        raise RunError(f"synthetic_kinds: unknown {', '.join(map(repr, unknown))}; "
                       f"choose from {', '.join(SYNTHETIC_KINDS)}")
    offered = {path for path, _ in _qa_files(settings)}
    for path in selection.qa_files:
        if str(path) not in offered:
            raise RunError(f"qa_files: {path} is not one of the server's QA files (JSON Lines files in "
                           f"{settings.training_dir / 'qa'}): {', '.join(sorted(offered)) or 'there are none'}")
    if selection.contracts and _contracts()[0] == 0:
        raise RunError("contracts: the shared contracts are not on this server (training/tasks.py: CONTRACTS_DIR)")
    if not (selection.include_feedback or selection.contracts or selection.qa_files or selection.synthetic_kinds):
        raise RunError("the selection is empty: include feedback, contracts, QA files or synthetic tasks")


def preview_samples(settings: Settings, selection: DataSelection, n: int = 5,
                    user: UserView | None = None) -> list[SamplePreview]:
    """Up to `n` training samples the selection makes, taken in turn from each source it includes."""
    with session_scope(settings.resolved_database_url) as s:
        actor = _admin(s, settings, user)
    _check_selection(settings, selection)
    tokenizer = tokenizer_for(settings)
    sources: list[tuple[str, list[tuple[str, tuple[str, ...], str]]]] = []
    if selection.include_feedback:
        rows = [r for r in _selected_feedback(settings, selection, actor) if not held_out(r["document_id"])]
        sources.append(("feedback", [(r["question"], (a,), r["document_text"]) for r in rows
                                     if (a := feedback_answer(r))][:n]))  # fmt: skip
    if selection.contracts:
        sources.append(("contracts", [(t.question, t.answers, t.document) for t in contract_tasks("train")[:n]]))
    for path in selection.qa_files:
        sources.append(("qa", [(t.question, t.answers, t.document) for t in cases_tasks(Path(path))[:n]]))
    if selection.synthetic_kinds:
        tasks = synthetic_tasks(tokenizer, "train", min(selection.lengths), n, kinds=selection.synthetic_kinds)
        sources.append(("synthetic", [(t.question, t.answers, t.document) for t in tasks]))
    out: list[SamplePreview] = []
    for i in range(n):
        for source, items in sources:
            if i < len(items) and len(out) < n:
                question, answers, document = items[i]
                out.append(SamplePreview(source, question, tuple(answers), count_tokens(tokenizer, document),
                                         document[:300]))  # fmt: skip
    return out


# --- the config ----------------------------------------------------------------------------------


def _start_point(s: Session, settings: Settings, start_version_id: int | None) -> tuple[ModelVersion | None, dict]:
    """The version a run trains from (the given one, else the active one; None: the settings' model) and
    the config fields it sets: its base model, its adapter as the starting point, its reading sizes."""
    if start_version_id is not None:
        version = s.get(ModelVersion, start_version_id) if valid_id(start_version_id) else None
        if version is None:
            raise NotFound(f"no model version {start_version_id}")
    else:
        version = active_version(s)
    model = version.base_model if version else settings.model
    adapter = version.adapter_path if version else None
    if adapter is None and model == READER:  # the bundled reader is the bundled model with its adapter
        adapter = str(READER_ADAPTER)
    return version, {
        "model": base_of(model), "init_adapter": adapter,
        "template_set": version.template_set if version else settings.template_set,
        "chunk_tokens": (version and version.chunk_tokens) or settings.chunk_tokens,
        "memory_tokens": (version and version.memory_tokens) or settings.memory_tokens,
        "answer_tokens": settings.answer_tokens,
    }  # fmt: skip


def _config(selection: DataSelection, params: RunParams, start: dict, feedback: list[Path]) -> TrainConfig:
    """The `small` preset, then the start version's fields, then the form's; RunError lists what to fix.
    `params.extra` may set any other field, and other data fields under "data"."""
    extra = dict(params.extra)
    data = {**extra.pop("data", {}), "synthetic_kinds": list(selection.synthetic_kinds),
            "curriculum": [(min(selection.lengths), 1)], "contracts": selection.contracts,
            "qa_files": [str(p) for p in selection.qa_files], "feedback": [str(p) for p in feedback]}  # fmt: skip
    chosen = {f.name: getattr(params, f.name) for f in dataclasses.fields(params) if f.name != "extra"}
    try:
        config = make_config({"preset": "small", **start, **chosen, **extra, "data": data}, where="the run's settings")
    except ConfigError as exc:
        raise RunError(str(exc)) from None
    config.data.curriculum = curriculum(tuple(selection.lengths), config.sft_steps + config.rl_steps)
    return config


# --- the estimate --------------------------------------------------------------------------------


def _units(config: TrainConfig, step: int) -> float:
    """The work of step `step` (0-based) in the unit its phase's speed is measured in: SFT, the tokens
    of the conversations it trains (per sample: about one that gains evidence, `sft_keeps` that keep,
    `sft_carry` that carry it, and the answer, whatever the document's length: Trainer.sft_rows); RL, samples x
    rollouts x document tokens."""
    tokens = doc_tokens_at([tuple(c) for c in config.data.curriculum], step)
    if step < config.sft_steps:
        chunks = -(-tokens // config.chunk_tokens)
        conversations = min(chunks, 1 + config.sft_keeps + config.sft_carry) + 1
        return config.sft_samples_per_step * conversations * (config.chunk_tokens + config.memory_tokens)
    return config.samples_per_step * config.group_size * tokens


def _measured_speed(settings: Settings) -> dict[str, tuple[float, int]]:
    """Seconds per unit of each phase over this deployment's finished runs: {phase: (rate, runs)}."""
    with session_scope(settings.resolved_database_url) as s:
        runs = s.execute(select(TrainingRun.config, TrainingRun.run_dir).where(TrainingRun.status == RunStatus.done)).all()
    seconds: dict[str, float] = {}
    units: dict[str, float] = {}
    counted: dict[str, set[str]] = {}
    for raw, run_dir in runs:
        try:
            config = TrainConfig(**raw)
        except ValueError:
            continue
        for m in read_jsonl(Path(run_dir) / "metrics.jsonl"):
            phase = m.get("phase")
            if phase in ("sft", "rl") and m.get("seconds") and m.get("step"):
                seconds[phase] = seconds.get(phase, 0.0) + float(m["seconds"])
                units[phase] = units.get(phase, 0.0) + _units(config, int(m["step"]) - 1)
                counted.setdefault(phase, set()).add(run_dir)
    return {p: (seconds[p] / units[p], len(counted[p])) for p in seconds if units[p]}


def _estimate(settings: Settings, config: TrainConfig) -> tuple[float, str]:
    measured = _measured_speed(settings)
    built_in = {"sft": 1 / SFT_TOKENS_PER_S, "rl": RL_SECONDS_PER_UNIT}
    total = 0.0
    for step in range(config.sft_steps + config.rl_steps):
        phase = "sft" if step < config.sft_steps else "rl"
        total += _units(config, step) * (measured[phase][0] if phase in measured else built_in[phase])
    basis = []
    for phase, steps in (("sft", config.sft_steps), ("rl", config.rl_steps)):
        if not steps:
            continue
        if phase in measured:
            runs = measured[phase][1]
            basis.append(f"{phase.upper()}: the speed of this deployment's {runs} finished run{'s' * (runs != 1)}")
        else:
            basis.append(f"{phase.upper()}: the built-in figure of the 2-core development machine ("
                         + ("~200 trained tokens/s" if phase == "sft" else
                            "~250 s a step at 2,048 tokens with 4 samples x 8 rollouts, scaled") + ")")  # fmt: skip
    return round(total, 1), "; ".join(basis)


def estimate_seconds(settings: Settings, selection: DataSelection, params: RunParams) -> tuple[float, str]:
    """(seconds, basis): the run's expected duration on this deployment, and where the figure comes
    from (a finished run's measured seconds per step, or the built-in figure of the 2-core machine)."""
    _check_selection(settings, selection)
    with session_scope(settings.resolved_database_url) as s:
        _, start = _start_point(s, settings, None)
    feedback = [Path("feedback-train.jsonl")] if selection.include_feedback else []
    return _estimate(settings, _config(selection, params, start, feedback))


# --- starting a run ------------------------------------------------------------------------------


def start_run(settings: Settings, selection: DataSelection, params: RunParams, *, name: str | None = None,
              start_version_id: int | None = None, user: UserView | None = None) -> RunView:
    """Validate (RunError naming the field to change), write the run's folder, store it queued and
    enqueue it on the `training` queue."""
    _check_selection(settings, selection)
    with session_scope(settings.resolved_database_url) as s:
        actor = _admin(s, settings, user)
        version, start = _start_point(s, settings, start_version_id)
    feedback = [Path("feedback-train.jsonl")] if selection.include_feedback else []
    config = _config(selection, params, start, feedback)  # validated before anything is written
    rows = _selected_feedback(settings, selection, actor)
    train = [r for r in rows if not held_out(r["document_id"])]
    if selection.include_feedback and not any(feedback_answer(r) for r in train):
        raise RunError(f"feedback: of the {len(rows)} judged readings selected, none can be trained on (the readings "
                       "of every fifth document are held out for the evaluation; an answer judged incorrect "
                       "teaches only with a corrected answer): select more feedback, or leave it out")
    recorded = {k: (v.isoformat() if isinstance(v, date) else list(v) if isinstance(v, tuple) else v)
                for k, v in dataclasses.asdict(selection).items()}  # fmt: skip
    recorded["lengths"] = sorted(set(selection.lengths))
    recorded["feedback_readings"] = {"train": len(train), "held_out": len(rows) - len(train)}

    def write_data(run_dir: Path) -> None:
        if selection.include_feedback:
            config.data.feedback = [_write_feedback(run_dir / "data", rows)]

    return _insert_run(settings, actor, name or f"run of {utcnow():%Y-%m-%d %H:%M}", config, recorded,
                       version.id if version else None, write_data)  # fmt: skip


def queue_config(settings: Settings, config: TrainConfig, *, name: str, user: UserView | None = None) -> RunView:
    """A run of a ready config (`longread train CONFIG --queue`): queued like a run started in the
    browser, its data as the config says (relative paths taken from the current folder)."""
    with session_scope(settings.resolved_database_url) as s:
        actor = _admin(s, settings, user)
    config = config.model_copy(deep=True)
    if config.init_adapter is not None:
        config.init_adapter = config.init_adapter.resolve()
    config.data.qa_files = [p.resolve() for p in config.data.qa_files]
    config.data.feedback = [p.resolve() for p in config.data.feedback]
    recorded = {"config_file": True, "synthetic_kinds": list(config.data.synthetic_kinds),
                "lengths": sorted({n for n, _ in config.data.curriculum}), "contracts": config.data.contracts,
                "qa_files": [str(p) for p in config.data.qa_files], "feedback": [str(p) for p in config.data.feedback]}
    return _insert_run(settings, actor, name, config, recorded, None, lambda _run_dir: None)


def _insert_run(settings: Settings, actor: UserView, name: str, config: TrainConfig, selection: dict,
                start_version_id: int | None, write_data: Any) -> RunView:
    """Store the run queued, write its folder (`write_data(run_dir)` first: it may change the config),
    commit, then enqueue."""
    name = " ".join(name.split())
    if not name or len(name) > 200:
        raise RunError("name: give the run a name of 1 to 200 characters")
    run_dir: Path | None = None
    try:
        with session_scope(settings.resolved_database_url) as s:
            run = TrainingRun(name=name, status=RunStatus.queued, config={}, selection=selection, run_dir="",
                              start_version_id=start_version_id, created_by_id=actor.id,
                              total_steps=config.sft_steps + config.rl_steps, estimate_s=_estimate(settings, config)[0],
                              heartbeat_at=utcnow())  # fmt: skip
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


def _write_feedback(data_dir: Path, rows: list[dict]) -> Path:
    """data/feedback-train.jsonl and feedback-heldout.jsonl (the split by document), and the held-out
    part as `longread eval --cases` lines (heldout-cases.jsonl, documents under docs/). Returns the
    training file."""
    (data_dir / "docs").mkdir(parents=True)
    files = {False: data_dir / "feedback-train.jsonl", True: data_dir / "feedback-heldout.jsonl"}
    with files[False].open("w", encoding="utf-8") as train, files[True].open("w", encoding="utf-8") as kept, \
            (data_dir / "heldout-cases.jsonl").open("w", encoding="utf-8") as cases:  # fmt: skip
        for row in rows:
            # ensure_ascii: no character a JSON Lines reader could take for a line end stays raw
            (kept if held_out(row["document_id"]) else train).write(json.dumps(row) + "\n")
            answer = feedback_answer(row)
            if held_out(row["document_id"]) and answer:
                doc = data_dir / "docs" / f"document-{row['document_id']}.txt"
                if not doc.exists():
                    doc.write_text(row["document_text"], encoding="utf-8")
                cases.write(json.dumps({"document": f"docs/{doc.name}", "question": row["question"],
                                        "answers": [answer]}) + "\n")  # fmt: skip
    return files[False]


# --- watching ------------------------------------------------------------------------------------


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


def _views(s: Session, runs: list[TrainingRun]) -> list[RunView]:
    users = dict(s.execute(select(User.id, User.username).where(User.id.in_({r.created_by_id for r in runs}))).all())
    versions = dict(s.execute(select(ModelVersion.id, ModelVersion.name)
                              .where(ModelVersion.id.in_({r.start_version_id for r in runs}))).all())  # fmt: skip
    queued = list(s.scalars(select(TrainingRun.id).where(TrainingRun.status == RunStatus.queued).order_by(TrainingRun.id)))
    views = []
    for r in runs:
        run_dir = Path(r.run_dir)
        eta = None
        if r.status == RunStatus.running:
            rows = read_jsonl(run_dir / "metrics.jsonl")
            eta = rows[-1].get("eta_s") if rows else None
        views.append(RunView(
            id=r.id, name=r.name, status=r.status.value, created_by=users.get(r.created_by_id), created_at=_utc(r.created_at),
            started_at=_utc(r.started_at), finished_at=_utc(r.finished_at), step=r.step, total_steps=r.total_steps,
            eta_s=eta, queue_position=queued.index(r.id) + 1 if r.id in queued else None, attempts=r.attempts,
            error=r.error, start_version=versions.get(r.start_version_id, "base"), version_id=r.version_id,
            evaluation=r.evaluation, config=r.config, selection=r.selection, run_dir=r.run_dir,
            resumable=has_checkpoint(run_dir), estimate_s=r.estimate_s,
        ))  # fmt: skip
    return views


def _utc(t: datetime | None) -> datetime | None:
    # SQLite hands datetimes back without a zone; we only ever store UTC.
    return t.replace(tzinfo=UTC) if t is not None and t.tzinfo is None else t


def list_runs(settings: Settings, user: UserView | None = None) -> list[RunView]:
    """Every run, newest first."""
    with session_scope(settings.resolved_database_url) as s:
        _admin(s, settings, user)
        return _views(s, list(s.scalars(select(TrainingRun).order_by(TrainingRun.id.desc()))))


def get_run(settings: Settings, run_id: int, user: UserView | None = None) -> RunView:
    with session_scope(settings.resolved_database_url) as s:
        _admin(s, settings, user)
        return _views(s, [_require(s, run_id)])[0]


def _run_dir(settings: Settings, run_id: int, user: UserView | None) -> Path:
    with session_scope(settings.resolved_database_url) as s:
        _admin(s, settings, user)
        return Path(_require(s, run_id).run_dir)


def run_metrics(settings: Settings, run_id: int, user: UserView | None = None) -> list[dict[str, Any]]:
    """metrics.jsonl's rows (step, phase, reward, accuracy, loss, kl, clip_frac, filtered, tokens_per_s, …)."""
    return read_jsonl(_run_dir(settings, run_id, user) / "metrics.jsonl")


def run_samples(settings: Settings, run_id: int, last: int = 3, user: UserView | None = None) -> list[dict[str, Any]]:
    """The latest sample rollouts (samples.jsonl): question, each step's memory, answer, reward."""
    rows = read_jsonl(_run_dir(settings, run_id, user) / "samples.jsonl")
    return rows[-last:] if last > 0 else []


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


# --- acting on a run -----------------------------------------------------------------------------


def _move(settings: Settings, run_id: int, user: UserView | None, moves: dict[RunStatus, dict], refusal: str) -> None:
    """Apply the first of `moves` ({from status: new values}) whose status the run has, each a guarded
    UPDATE (a worker may change the status meanwhile); RunError(refusal) when none applies."""
    with session_scope(settings.resolved_database_url) as s:
        _admin(s, settings, user)
        run = _require(s, run_id)
        for status, values in moves.items():
            if s.execute(update(TrainingRun).where(TrainingRun.id == run_id, TrainingRun.status == status)
                         .values(**values)).rowcount:  # fmt: skip
                return
        s.refresh(run)
        raise RunError(refusal.format(id=run_id, status=run.status.value))


def cancel_run(settings: Settings, run_id: int, user: UserView | None = None) -> RunView:
    """Queued: cancelled at once. Running: `cancelling` until the trainer has saved and stopped."""
    _move(settings, run_id, user, {
        RunStatus.queued: {"status": RunStatus.cancelled, "finished_at": utcnow()},
        RunStatus.running: {"status": RunStatus.cancelling},
        RunStatus.cancelling: {"status": RunStatus.cancelling},
    }, "run {id} is {status}: only a queued or running run can be cancelled")  # fmt: skip
    return get_run(settings, run_id, user)


def resume_run(settings: Settings, run_id: int, user: UserView | None = None) -> RunView:
    """A cancelled or failed run is queued again; it continues from its last checkpoint."""
    again = {"status": RunStatus.queued, "error": None, "finished_at": None, "worker": None, "heartbeat_at": utcnow(),
             "attempts": 0}
    _move(settings, run_id, user, {RunStatus.cancelled: again, RunStatus.failed: again},
          "run {id} is {status}: only a cancelled or failed run can be resumed")  # fmt: skip
    request_training(settings, run_id)
    return get_run(settings, run_id, user)


def evaluate_run(settings: Settings, run_id: int, user: UserView | None = None) -> RunView:
    """Queue the evaluation of a finished run's adapter beside the active version (the baseline) on
    the same held-out sets: synthetic tasks at the run's lengths, and the held-out feedback."""
    with session_scope(settings.resolved_database_url) as s:
        _admin(s, settings, user)
        run = _require(s, run_id)
        _require_adapter(run)
        if (run.evaluation or {}).get("status") in ("queued", "running"):
            raise RunError(f"run {run_id} is being evaluated already ({run.evaluation['status']})")
        run.evaluation, run.heartbeat_at = {"status": "queued"}, utcnow()
    request_evaluation(settings, run_id)
    return get_run(settings, run_id, user)


def _require_adapter(run: TrainingRun) -> Path:
    adapter = Path(run.run_dir) / "adapter"
    if run.status != RunStatus.done or not (adapter / "adapter_config.json").is_file():
        raise RunError(f"run {run.id} is {run.status.value}: only a finished run (done, with its adapter) can be "
                       "evaluated or promoted")
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
        actor = _admin(s, settings, user)
        run = _require(s, run_id)
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
                s, version_name(run.id, run.name), config["model"], adapter, metrics,
                template_set=config["template_set"], chunk_tokens=config["chunk_tokens"],
                memory_tokens=config["memory_tokens"], training_run=run.run_dir, activate=True, user=actor,
            )  # fmt: skip
        except ModelVersionError as exc:
            raise RunError(str(exc)) from None
        run.version_id = version.id
        return version.id
