"""The Celery app, shared by whoever enqueues (web app, CLI) and the worker (worker/).

Tasks carry only ids. The database, not the broker, is the source of truth: a reading whose task
is lost (dead worker, broker without redelivery) is found again by the worker's sweeper.
"""

from __future__ import annotations

from functools import lru_cache

from celery import Celery

from app.settings import Settings

READ_TASK = "longread.read_pending"
#: training runs and their evaluations go to the queue `training`, which only training workers
#: (worker/training_worker.py) consume: reading workers never take them, nor they a reading
TRAIN_TASK = "longread.train_run"
EVAL_TASK = "longread.evaluate_run"
TRAINING_QUEUE = "training"


@lru_cache
def _celery(broker_url: str) -> Celery:
    celery = Celery("longread", broker=broker_url)
    celery.conf.update(
        task_ignore_result=True,
        task_acks_late=True,  # a task whose worker dies mid-reading is not acknowledged
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        task_default_queue="longread",
    )
    return celery


def celery_app(settings: Settings) -> Celery:
    if settings.resolved_broker_url.startswith("sqla+sqlite:"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return _celery(settings.resolved_broker_url)


def request_reading_pass(settings: Settings) -> None:
    """Ask a worker to read whatever is queued. Call after committing the new readings.

    The task carries no id: the worker claims queued readings from the database and adds them to
    the pass it is running, or starts one."""
    celery_app(settings).send_task(READ_TASK)


def request_training(settings: Settings, run_id: int) -> None:
    """Ask a training worker to run (or go on with) training run `run_id`. Call after committing it queued."""
    celery_app(settings).send_task(TRAIN_TASK, args=[run_id], queue=TRAINING_QUEUE)


def request_evaluation(settings: Settings, run_id: int) -> None:
    """Ask a training worker to evaluate run `run_id`. Call after committing its evaluation queued."""
    celery_app(settings).send_task(EVAL_TASK, args=[run_id], queue=TRAINING_QUEUE)
