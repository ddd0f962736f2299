"""`longread ask` while a server's worker runs (issue 37): the questions go to that worker's queue and the
command follows the reading there; it starts no model of its own (no vLLM process, no engine load)."""

from __future__ import annotations

import json
import os

import psutil
import pytest

from app import cli
from app.cli import worker_command
from app.db import session_scope
from app.migrate import upgrade
from app.services import llm
from app.services.health import health
from app.services.readings import get_reading
from app.settings import Settings
from tests.conftest import LIGHTHOUSE, MODEL_CACHE
from tests.processes import WorkerGroup, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.model]


def _vllm_processes() -> list[int]:
    """The pids of vLLM servers started by this test process (or its worker)."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(p.cmdline())
        except psutil.Error:
            continue
        if "vllm" in cmd:
            found.append(p.pid)
    return sorted(found)


def test_ask_follows_the_running_workers_reading_and_loads_no_model(tmp_path, monkeypatch, capsys):
    # What `ask` sees: the user's default engine, a vLLM server of its own, would take a minute to start.
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=f"sqlite:///{tmp_path / 'app.db'}",
        broker_url=f"sqla+sqlite:///{tmp_path / 'broker.db'}",
        model_cache_dir=MODEL_CACHE,
        chunk_tokens=96,
        memory_tokens=32,
        answer_tokens=16,
        engine="vllm-local",
    )
    upgrade(settings.resolved_database_url)
    env = {
        **os.environ,
        "LONGREAD_DATA_DIR": str(settings.data_dir),
        "LONGREAD_DATABASE_URL": settings.database_url,
        "LONGREAD_BROKER_URL": settings.broker_url,
        "LONGREAD_MODEL_CACHE_DIR": str(MODEL_CACHE),
        "OMP_NUM_THREADS": "1",
        "LONGREAD_ENGINE": "transformers",
    }  # the server's worker: in-process model, quick to start here
    worker = WorkerGroup(worker_command(), env, tmp_path / "worker.log")
    try:
        with session_scope(settings.resolved_database_url) as s:
            assert health(s).workers == 0

        # Ready, not only beating: a worker busy loading its model on a loaded machine can miss heartbeats for
        # a few seconds (the GIL), and then looks gone to `ask` for that moment.
        def ready() -> bool:
            with session_scope(settings.resolved_database_url) as s:
                return health(s).engine_state == "ready"

        wait_for(ready, 120, worker, "the worker's model to be up")

        def no_engine_here(*_a, **_k):
            raise AssertionError("`ask` loaded a model in its own process beside a running worker")

        monkeypatch.setattr(llm, "_build", no_engine_here)  # every engine, vLLM's included, is built there
        monkeypatch.setattr(cli, "get_settings", lambda: settings)
        before = _vllm_processes()
        doc = tmp_path / "lighthouse.txt"
        doc.write_text(LIGHTHOUSE * 2, encoding="utf-8")
        code = cli.main(["ask", str(doc), "-q", "Where is the spare key to the lamp room?", "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "submitted to the running server's queue" in err and "reading in this process" not in err
        assert _vllm_processes() == before  # none new (another test's package-wide vLLM server may be up)
        (got,) = json.loads(out)["readings"]
        assert got["status"] == "done" and got["answer"] and len(got["checkpoints"]) >= 2
        with session_scope(settings.resolved_database_url) as s:
            stored = get_reading(s, got["id"])  # the worker's reading, the one `ask` printed
            assert stored.status.value == "done" and stored.answer == got["answer"]
            assert stored.attempts == 1  # claimed once: by the worker, this process never ran it
            assert [c.memory for c in stored.checkpoints] == [c["memory"] for c in got["checkpoints"]]
        assert worker.proc.poll() is None
    finally:
        worker.stop()
