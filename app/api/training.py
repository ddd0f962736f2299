"""Training runs and model versions, for admins: choose data, start, watch, cancel, resume, evaluate
and promote runs (app/services/training_runs), list and activate model versions. Every route
depends on an admin (a reader gets 403 before the body is looked at); the services check again.
Their RunError answers 422 (app.web)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from app.api.auth import AdminDep
from app.api.routes import SettingsDep
from app.api.schemas import (
    ContractsOut,
    DataOverviewOut,
    EstimateIn,
    EstimateOut,
    KindOut,
    ModelVersionOut,
    QAFileOut,
    RunDetailOut,
    RunIn,
)
from app.db import session_scope
from app.services import registry, training_runs
from app.services.models import activate_version
from app.services.training_runs import DataSelection, RunView, SamplePreview

router = APIRouter(prefix="/api")


@router.get("/training/data")
def training_data(settings: SettingsDep, admin: AdminDep) -> DataOverviewOut:
    """The feedback collected (every verdict, held-out or not), the QA files and synthetic task kinds on
    offer, the contracts' split, and the help text of every hyperparameter."""
    d = training_runs.data_overview(settings, user=admin)
    return DataOverviewOut(
        feedback=d.feedback,
        qa_files=[QAFileOut(path=p, questions=n) for p, n in d.qa_files],
        synthetic_kinds=[KindOut(kind=k, description=text) for k, text in d.synthetic_kinds],
        contracts=ContractsOut(documents=d.contracts[0], questions=d.contracts[1], held_out_documents=d.contracts[2]),
        field_help=training_runs.field_help(),
    )


@router.post("/training/preview")
def preview(
    body: DataSelection, settings: SettingsDep, admin: AdminDep, n: Annotated[int, Query(ge=1, le=50)] = 5
) -> list[SamplePreview]:
    """A few of the training samples the selection makes."""
    return training_runs.preview_samples(settings, body, n, user=admin)


@router.post("/training/estimate")
def estimate(body: EstimateIn, settings: SettingsDep, admin: AdminDep) -> EstimateOut:
    """How long the run would take on this deployment."""
    seconds, basis = training_runs.estimate_seconds(settings, body.selection, body.params)
    return EstimateOut(seconds=seconds, basis=basis)


@router.get("/training/runs")
def list_runs(settings: SettingsDep, admin: AdminDep) -> list[RunView]:
    """Every run, newest first."""
    return training_runs.list_runs(settings, user=admin)


@router.post("/training/runs", status_code=status.HTTP_201_CREATED)
def start_run(body: RunIn, settings: SettingsDep, admin: AdminDep) -> RunView:
    """Queue a run on the `training` queue; 422 names the field to change."""
    return training_runs.start_run(
        settings,
        body.selection,
        body.params,
        name=body.name,
        start_version_id=body.start_version_id or None,
        user=admin,
    )


@router.get("/training/runs/{run_id}")
def get_run(
    run_id: int,
    settings: SettingsDep,
    admin: AdminDep,
    samples: Annotated[int, Query(ge=0, le=50)] = 3,
    log_lines: Annotated[int, Query(ge=0, le=5000)] = 200,
) -> RunDetailOut:
    """The run, every metrics row, its latest `samples` rollouts and its log's last `log_lines` lines."""
    return RunDetailOut(
        run=training_runs.get_run(settings, run_id, user=admin),
        metrics=training_runs.run_metrics(settings, run_id, user=admin),
        samples=training_runs.run_samples(settings, run_id, samples, user=admin),
        log=training_runs.run_log(settings, run_id, log_lines, user=admin),
    )


@router.post("/training/runs/{run_id}/cancel")
def cancel_run(run_id: int, settings: SettingsDep, admin: AdminDep) -> RunView:
    """A queued run is cancelled at once; a running one saves a checkpoint, then stops (`cancelling`)."""
    return training_runs.cancel_run(settings, run_id, user=admin)


@router.post("/training/runs/{run_id}/resume")
def resume_run(run_id: int, settings: SettingsDep, admin: AdminDep) -> RunView:
    """A cancelled or failed run is queued again and continues from its last checkpoint."""
    return training_runs.resume_run(settings, run_id, user=admin)


@router.post("/training/runs/{run_id}/evaluate")
def evaluate_run(run_id: int, settings: SettingsDep, admin: AdminDep) -> RunView:
    """Queue the evaluation of a finished run beside the active version, on the same held-out sets."""
    return training_runs.evaluate_run(settings, run_id, user=admin)


@router.post("/training/runs/{run_id}/promote")
def promote_run(run_id: int, settings: SettingsDep, admin: AdminDep) -> ModelVersionOut:
    """Register the run's adapter as a model version and make it active: new readings use it."""
    version_id = training_runs.promote_run(settings, run_id, user=admin)
    return next(ModelVersionOut(**v) for v in registry.registry(settings, user=admin) if v["id"] == version_id)


@router.get("/models")
def list_models(settings: SettingsDep, admin: AdminDep) -> list[ModelVersionOut]:
    """Every model version, oldest first, with its key metrics and lineage."""
    return [ModelVersionOut(**v) for v in registry.registry(settings, user=admin)]


@router.post("/models/{version_id}/activate")
def activate(version_id: int, settings: SettingsDep, admin: AdminDep) -> ModelVersionOut | None:
    """Make the version active for new readings; 0 goes back to the base model (null). Readings in
    flight finish on the version they began with."""
    with session_scope(settings.resolved_database_url) as s:
        activate_version(s, version_id, user=admin)
    return next((ModelVersionOut(**v) for v in registry.registry(settings, user=admin) if v["id"] == version_id), None)
