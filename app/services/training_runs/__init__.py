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

The package, by concern: shared.py (statuses, views, the feedback split), data.py (choosing and
checking the data), config.py (the run's TrainConfig), estimate.py (how long it takes), folder.py (the
run's folder) and lifecycle.py (start, watch, cancel, resume, evaluate, promote); every public name is
importable from here.
"""

from __future__ import annotations

from app.services.training_runs.data import (
    KIND_HELP,
    MAX_LENGTH,
    MIN_LENGTH,
    data_overview,
    preview_samples,
)
from app.services.training_runs.estimate import (
    RL_SECONDS_PER_UNIT,
    SFT_TOKENS_PER_S,
    estimate_seconds,
)
from app.services.training_runs.folder import (
    EVAL_SIDES,
    STOP_FILE,
    EvalProgress,
    eval_progress,
    has_checkpoint,
    heldout_cases,
    log_tail,
    progress_dir,
    progress_file,
    read_jsonl,
    run_eval_progress,
    run_log,
    run_metrics,
    run_samples,
)
from app.services.training_runs.lifecycle import (
    cancel_run,
    evaluate_run,
    get_run,
    list_runs,
    promote_run,
    queue_config,
    resume_run,
    start_run,
    version_name,
)
from app.services.training_runs.shared import (
    STATUSES,
    DataOverview,
    DataSelection,
    FeedbackRow,
    RunError,
    RunParams,
    RunView,
    SamplePreview,
    curriculum,
    field_help,
    held_out,
)

__all__ = [
    "EVAL_SIDES",
    "DataOverview",
    "DataSelection",
    "EvalProgress",
    "FeedbackRow",
    "KIND_HELP",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "RL_SECONDS_PER_UNIT",
    "RunError",
    "RunParams",
    "RunView",
    "SFT_TOKENS_PER_S",
    "STATUSES",
    "STOP_FILE",
    "SamplePreview",
    "cancel_run",
    "curriculum",
    "data_overview",
    "estimate_seconds",
    "eval_progress",
    "evaluate_run",
    "field_help",
    "get_run",
    "has_checkpoint",
    "heldout_cases",
    "held_out",
    "list_runs",
    "log_tail",
    "preview_samples",
    "progress_dir",
    "progress_file",
    "promote_run",
    "queue_config",
    "read_jsonl",
    "resume_run",
    "run_eval_progress",
    "run_log",
    "run_metrics",
    "run_samples",
    "start_run",
    "version_name",
]
