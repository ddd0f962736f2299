"""Fixtures for the browser tests: the real app (`longread serve`, with its Celery worker and the
bundled SmolLM2) on a free port, and a headless Debian Chromium driven by Playwright.

Chromium comes from Debian, not from `playwright install`:
    apt-get update && apt-get install -y chromium
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from inference.vllm_server import free_port
from tests.conftest import ARTIFACTS

REPO_ROOT = Path(__file__).resolve().parents[2]
HEALTHZ_TIMEOUT_S = 180
STOP_TIMEOUT_S = 45  # SIGTERM: uvicorn shuts down, then the worker gets SIGTERM and 30 s to finish


def _descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (the Celery worker, and anything it forked), from /proc."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.append(child)
                    todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait() is missing


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


def _tail(path: Path, n: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


class LiveServer:
    def __init__(self, url: str, data_dir: Path, log: Path, proc: subprocess.Popen) -> None:
        self.url, self.data_dir, self.log, self.proc = url, data_dir, log, proc

    def log_tail(self, n: int = 60) -> str:
        return _tail(self.log, n)


@pytest.fixture(scope="package")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """`python -m app.cli serve` (web app + Celery worker + the real model) on a free port, with
    small reading settings so one question reads in well under a minute on a CPU."""
    yield from _serve(tmp_path_factory)


@pytest.fixture(scope="package")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """`python -m app.cli serve --no-worker`: the web app alone (seconds to start, no model), for
    tests of what the page shows without reading anything. Uploads are limited to 1 MiB."""
    yield from _serve(tmp_path_factory, "--no-worker", env={"LONGREAD_MAX_UPLOAD_MB": "1"})


def _serve(
    tmp_path_factory: pytest.TempPathFactory, *args: str, env: dict[str, str] | None = None
) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("longread-data")
    port = free_port()
    log = data_dir / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", *args],
            cwd=REPO_ROOT,
            env=_server_env(data_dir, port, env or {}),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = LiveServer(f"http://127.0.0.1:{port}", data_dir, log, proc)
    children: list[int] = []
    try:
        _wait_healthy(server)
        children = _descendants(proc.pid)  # the worker is started before the web app listens
        yield server
    finally:
        _stop(server, children)


def _server_env(data_dir: Path, port: int, extra: dict[str, str]) -> dict[str, str]:
    """This environment with the test server's settings and the test's `extra` on top."""
    env = {
        **os.environ,
        "LONGREAD_DATA_DIR": str(data_dir),
        "LONGREAD_PORT": str(port),
        "LONGREAD_HOST": "127.0.0.1",
        "LONGREAD_CHUNK_TOKENS": "128",
        "LONGREAD_MEMORY_TOKENS": "48",
        "LONGREAD_ANSWER_TOKENS": "32",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "GRADIO_TEMP_DIR": str(data_dir / "gradio-tmp"),
        "PYTHONUNBUFFERED": "1",
        **extra,
    }
    for key in ("LONGREAD_DATABASE_URL", "LONGREAD_BROKER_URL"):  # embedded SQLite, unless a test names one
        if key not in extra:
            env.pop(key, None)
    return env


def _wait_healthy(server: LiveServer) -> None:
    """Until /healthz answers 200; fails with the log when `serve` exits first or takes too long."""
    deadline = time.monotonic() + HEALTHZ_TIMEOUT_S
    while True:
        if server.proc.poll() is not None:
            pytest.fail(
                f"`longread serve` exited with {server.proc.returncode} before answering "
                f"/healthz; its log:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(f"{server.url}/healthz", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"{server.url}/healthz did not answer within {HEALTHZ_TIMEOUT_S} s; log:\n{server.log_tail()}")
        time.sleep(0.5)


def _stop(server: LiveServer, children: list[int]) -> None:
    """SIGTERM `serve`, then stop whatever it left running (and fail the test for it); its log to artifacts."""
    proc = server.proc
    # Note the worker again now, before stopping `serve` (an orphan would be reparented).
    children += [c for c in _descendants(proc.pid) if c not in children]
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    # `serve` stops its worker itself; give a worker that is finishing a step a moment too.
    _wait_gone(children, 15)
    orphans = [(c, _cmdline(c)) for c in children if _alive(c)]
    # Clean up before failing, so that no test run leaves a worker behind.
    for sig, grace_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
        for pid, _ in orphans:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        _wait_gone([c for c, _ in orphans], grace_s)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        (ARTIFACTS / "serve.log").write_bytes(server.log.read_bytes())
    except OSError:
        pass
    if orphans:
        pytest.fail(
            f"`longread serve` (pid {proc.pid}, exit {proc.returncode}) was stopped with "
            f"SIGTERM but left these processes running (now stopped): {orphans}"
        )


def _wait_gone(pids: list[int], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.5)


@pytest.fixture
def page(chromium, live_server: LiveServer):
    yield from _page(chromium)


@pytest.fixture
def ui_page(chromium, ui_server: LiveServer):
    yield from _page(chromium)


def _page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    pg = context.new_page()
    pg.page_errors = []  # uncaught JavaScript exceptions, checked by the tests
    pg.on("pageerror", lambda exc: pg.page_errors.append(str(exc)))
    try:
        yield pg
    finally:
        context.close()
