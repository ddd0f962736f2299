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


def test_a_runs_evaluation_is_one_typed_job_a_side_at_the_runs_sizes_that_comes_back_from_its_file(tmp_path):
    from app.services.train_job import EvalJob, read_job, write_job
    from app.services.training_runs import progress_file

    config = {
        "template_set": "memagent",
        "chunk_tokens": 256,
        "memory_tokens": 64,
        "answer_tokens": 16,
        "data": {"curriculum": [[512, 2], [256, 1]], "synthetic_kinds": ["multi-hop"]},
    }
    settings = Settings(data_dir=tmp_path, engine="openai", openai_base_url="http://127.0.0.1:9/v1", eval_n=3)
    side = ("smollm2", "/a", "extractive")
    job = train_runner.eval_job(settings, config, side, tmp_path, "candidate")  # no held-out cases
    assert (job.model, job.adapter, job.engine) == ("smollm2", "/a", "transformers")  # a served model loads no adapter
    assert job.memory_policy == "extractive"  # each side reads as its version is served
    assert (job.chunk_tokens, job.memory_tokens, job.answer_tokens, job.template_set) == (256, 64, 16, "memagent")
    assert (job.lengths, job.kinds, job.n, job.cases) == ((256, 512), ("multi-hop",), 3, None)
    assert job.progress == str(progress_file(tmp_path, "candidate", 0)) and job.cases_progress is None
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "heldout-cases.jsonl").write_text('{"document": "a.txt", "question": "q", "answers": ["a"]}\n')
    both = train_runner.eval_job(settings, config, side, tmp_path, "candidate")  # the sets, then the held-out cases
    assert both.cases == str(tmp_path / "data" / "heldout-cases.jsonl")
    assert both.cases_progress == str(progress_file(tmp_path, "candidate", 1))
    command = write_job(job, tmp_path / "job.json")
    assert command[1:] == ["-m", "app.services.train_job", str(tmp_path / "job.json")]
    assert read_job(tmp_path / "job.json") == job and isinstance(job, EvalJob)


def test_no_service_runs_or_imports_the_command_line():
    from pathlib import Path

    services = Path(train_runner.__file__).parent
    assert [p.name for p in services.rglob("*.py") if "app.cli" in p.read_text(encoding="utf-8")] == []
