"""`celery -A worker.celery_app worker` (or `longread worker`) runs this."""

from __future__ import annotations

import logging

from celery.signals import worker_ready

from app.db import session_scope
from app.queue import READ_TASK, celery_app, enqueue_reading
from app.services.readings import run_readings, stalled_reading_ids
from app.settings import get_settings

log = logging.getLogger(__name__)
settings = get_settings()
app = celery_app(settings)


@app.task(name=READ_TASK)
def read(reading_id: int) -> None:
    run_readings(settings, [reading_id])


@worker_ready.connect
def _requeue_stalled(**_kwargs: object) -> None:
    """Readings left behind by a dead worker or a lost broker message are enqueued again;
    the cursor guard makes a duplicate harmless."""
    with session_scope(settings.resolved_database_url) as s:
        ids = stalled_reading_ids(s, settings)
    for reading_id in ids:
        enqueue_reading(settings, reading_id)
    if ids:
        log.warning("requeued %d stalled readings: %s", len(ids), ids)
