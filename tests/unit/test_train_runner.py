"""The training child's environment: torch leaves a core to the app unless the operator says otherwise."""

from __future__ import annotations

import pytest

from app.services import train_runner
from app.settings import Settings


@pytest.mark.parametrize(("cores", "threads"), [(1, "1"), (2, "1"), (16, "15")])
def test_the_trainer_leaves_one_core_to_the_app(
    monkeypatch: pytest.MonkeyPatch, tmp_path, cores: int, threads: str
) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(train_runner.os, "cpu_count", lambda: cores)
    env = train_runner._trainer_env(Settings(data_dir=tmp_path))
    assert env["OMP_NUM_THREADS"] == threads
    assert env[train_runner.SUPERVISOR_PID]  # still dies with its worker


def test_an_operators_omp_num_threads_wins(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "6")
    monkeypatch.setattr(train_runner.os, "cpu_count", lambda: 2)
    assert train_runner._trainer_env(Settings(data_dir=tmp_path))["OMP_NUM_THREADS"] == "6"


def test_a_runs_tracker_records_stay_with_the_apps_training_data(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("LONGREAD_TRACKING_DIR", raising=False)
    assert train_runner._trainer_env(Settings(data_dir=tmp_path))["LONGREAD_TRACKING_DIR"] == str(
        tmp_path / "training" / "tracking"
    )
    monkeypatch.setenv("LONGREAD_TRACKING_DIR", "/elsewhere")
    assert train_runner._trainer_env(Settings(data_dir=tmp_path))["LONGREAD_TRACKING_DIR"] == "/elsewhere"
