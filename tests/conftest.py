from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.settings import Settings
from inference.models import MODEL_CACHE, model_folder
from tests.suite import budget_line

POSTGRES_ADMIN_URL = os.environ.get("LONGREAD_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("LONGREAD_TEST_REDIS", "redis://127.0.0.1:6379/15")
#: A short story with one fact worth asking about (where the spare key hangs), for real-model tests.
LIGHTHOUSE = (
    "Mara kept the lighthouse on the northern cape for eleven winters. Each evening she climbed the "
    "ninety steps, trimmed the wick and wrote the weather in a green ledger. Ships passed far out, "
    "their lights like slow stars. The supply boat came on the first Monday of each month, bringing "
    "flour, lamp oil and letters from her brother in the city. The spare key to the lamp room hangs "
    "behind the barometer. In the spring of the twelfth year a storm tore the roof from the store "
    "shed, and Mara spent a week mending it with planks from a wrecked schooner. "
)
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(autouse=True, scope="session")
def _tracking_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs the tests train and evaluate (and the processes they start) log to a temporary tracking store,
    not to the checkout's runs/tracking."""
    before = os.environ.get("LONGREAD_TRACKING_DIR")
    os.environ["LONGREAD_TRACKING_DIR"] = str(tmp_path_factory.mktemp("tracking"))
    yield
    if before is None:
        os.environ.pop("LONGREAD_TRACKING_DIR")
    else:
        os.environ["LONGREAD_TRACKING_DIR"] = before


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def model_path() -> Path:
    return model_folder("smollm2")


@pytest.fixture(scope="session")
def tokenizer(model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_path)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    from app.migrate import upgrade

    s = Settings(
        data_dir=tmp_path / "data", model_cache_dir=MODEL_CACHE, chunk_tokens=64, memory_tokens=32, answer_tokens=16
    )
    upgrade(s.resolved_database_url)
    return s


@contextmanager
def fresh_postgres_database():
    if not _reachable("127.0.0.1", 5432):
        pytest.skip("PostgreSQL is not reachable on 127.0.0.1:5432")
    from sqlalchemy import create_engine, text

    name = f"longread_test_{uuid.uuid4().hex[:8]}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    from app.db import get_engine

    get_engine.cache_clear()  # close pooled connections before dropping
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A fresh PostgreSQL database for this test session, dropped at the end."""
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
def own_postgres_url() -> str:
    """A PostgreSQL database for this test alone: for tests whose worker pass takes every queued
    reading in the database, which the session's database holds from other tests."""
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not _reachable("127.0.0.1", 6379):
        pytest.skip("Redis is not reachable on 127.0.0.1:6379")
    return REDIS_URL


_STARTED = time.monotonic()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The run's wall time; for the whole suite, against its budget with the CPU flags that decide it (the 20
    slowest tests, --durations=20 in `make test`, say where the time went). tests/suite.py runs the suite as two
    parts at once and prints the whole's line itself."""
    wall = time.monotonic() - _STARTED
    if os.environ.get("LONGREAD_SUITE_PART"):
        terminalreporter.write_line(f"this part's wall time {wall:.0f} s")
    else:
        line = budget_line(wall)
        terminalreporter.write_line(line, red="OVER" in line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI every test must run: a skip (a missing service, say) fails the suite."""
    if not os.environ.get("CI"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; every test must run in CI", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """Headless Debian Chromium, launched through Playwright's sync API: one per test session, since
    Playwright's sync API cannot run inside another instance of itself."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} not found. The browser tests use Debian's Chromium, not a Playwright "
            "download; install it with:  apt-get update && apt-get install -y chromium"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
