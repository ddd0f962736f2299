"""`longread serve` as a person runs it (web app + its Celery worker + the real model, in-process
engine to keep it quick): a worker killed with SIGKILL is started again and the page's health says
so; the terminal says when the model is ready; Ctrl-C/SIGTERM stops the app in bounded time although a
browser tab keeps a stream open."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.db import session_scope
from app.models import Worker
from app.services.health import ALIVE_S
from app.settings import Settings
from inference.models import READER
from inference.vllm_server import free_port
from tests.conftest import ARTIFACTS, LIGHTHOUSE, MODEL_CACHE
from tests.fakes import activate_version_named

pytestmark = [pytest.mark.integration, pytest.mark.model, pytest.mark.waits]  # tests/suite.py: beside the model side

REPO_ROOT = Path(__file__).resolve().parents[2]


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
        except (OSError, IndexError):
            pass
    return out


def _worker_pids(serve_pid: int, app: bytes = b"worker.celery_app") -> list[int]:
    """The reading workers `serve` started (`app=b"worker.training_worker"`: its training worker)."""
    return [p for p in _children(serve_pid) if app in Path(f"/proc/{p}/cmdline").read_bytes() and _alive(p)]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Serve:
    def __init__(self, tmp_path: Path, **env_extra: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = tmp_path / "data"
        self.log = tmp_path / "serve.log"
        env = {
            **os.environ,
            "LONGREAD_DATA_DIR": str(self.data_dir),
            "LONGREAD_PORT": str(self.port),
            "LONGREAD_MODEL_CACHE_DIR": str(MODEL_CACHE),
            "LONGREAD_ENGINE": "transformers",
            "GRADIO_ANALYTICS_ENABLED": "False",
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
        }
        for key in ("LONGREAD_DATABASE_URL", "LONGREAD_BROKER_URL"):
            env.pop(key, None)
        env.update(env_extra)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve"],
            cwd=REPO_ROOT,
            env=env,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def health(self) -> dict:
        return httpx.get(f"{self.url}/api/health", timeout=10).json()

    def wait_for(self, what: str, condition, timeout_s: float = 240):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"serve exited ({self.proc.returncode}):\n{self.output()[-3000:]}"
            try:
                if condition():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        pytest.fail(f"timed out waiting for {what}; serve's output:\n{self.output()[-3000:]}")

    def stop(self) -> None:
        workers = _worker_pids(self.proc.pid) + _worker_pids(self.proc.pid, b"worker.training_worker")
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    s = Serve(tmp_path)
    try:
        yield s
    finally:
        s.stop()


def test_a_killed_worker_is_started_again(serve):
    serve.wait_for("the model to be ready", lambda: serve.health()["engine_state"] == "ready")
    ready = f"Longread is ready at {serve.url}/: Ready: the model (transformers) is up"
    serve.wait_for("the terminal to say so", lambda: ready in serve.output(), timeout_s=10)
    assert serve.output().index("Longread is up at") < serve.output().index(ready)
    (first,) = _worker_pids(serve.proc.pid)

    os.kill(first, signal.SIGKILL)
    serve.wait_for("a new worker", lambda: [p for p in _worker_pids(serve.proc.pid) if p != first])
    (second,) = _worker_pids(serve.proc.pid)
    assert "stopped (killed by SIGKILL)" in serve.output()

    def beating(pid: int) -> bool:
        with session_scope(f"sqlite:///{(serve.data_dir / 'longread.db').resolve()}") as s:
            w = s.get(Worker, f"{socket.gethostname()}:{pid}")
            return w is not None and w.engine_state == "ready"

    serve.wait_for("the new worker's heartbeat", lambda: beating(second))
    # the killed worker stops counting once its heartbeat is stale
    serve.wait_for("the dead worker to drop out", lambda: serve.health()["workers"] == 1, timeout_s=ALIVE_S + 30)
    assert serve.health()["engine_state"] == "ready"


def test_a_killed_serve_takes_its_workers_with_it(serve):
    serve.wait_for("the model to be ready", lambda: serve.health()["engine_state"] == "ready")
    serve.wait_for("the training worker", lambda: _worker_pids(serve.proc.pid, b"worker.training_worker"))
    (worker,) = _worker_pids(serve.proc.pid)
    (trainer,) = _worker_pids(serve.proc.pid, b"worker.training_worker")
    serve.proc.kill()  # SIGKILL: serve runs no cleanup
    serve.proc.wait()
    deadline = time.monotonic() + 60
    while (_alive(worker) or _alive(trainer)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(worker), "the worker outlived the serve that started it"
    assert not _alive(trainer), "the training worker outlived the serve that started it"


@pytest.mark.browser
def test_stopping_is_bounded_while_a_browser_tab_is_open(serve, chromium):
    """With a page open in Chromium, SIGTERM left `serve` running for good (uvicorn waited for the
    tab's streaming connections to end); now they get LONGREAD_SHUTDOWN_TIMEOUT_S (5 s)."""
    serve.wait_for("the model to be ready", lambda: serve.health()["engine_state"] == "ready")
    page = chromium.new_page()
    try:
        page.goto(serve.url)
        page.wait_for_selector("#ask")
        page.wait_for_timeout(3000)  # let the page settle into its open connections
        serve.proc.send_signal(signal.SIGTERM)
        try:
            code = serve.proc.wait(timeout=40)  # 5 s for connections, then the worker's warm shutdown
        except subprocess.TimeoutExpired:
            pytest.fail(f"serve did not stop within 40 s of SIGTERM:\n{serve.output()[-3000:]}")
    finally:
        page.close()
    assert code == 0
    assert "Traceback" not in serve.output().split("Longread is ready at")[-1]


FAILING_VLLM = """#!/bin/sh
echo "INFO 11-23 12:00:00 Loading model weights"
echo "RuntimeError: not enough memory for the KV cache (needs 2 GiB)"
exit 3
"""


@pytest.mark.browser
def test_a_model_that_fails_to_start_is_shown_with_its_log(tmp_path, chromium):
    """The worker's vLLM server exits while starting: the page's status line says the model failed,
    with the last lines of its log, and so does the terminal."""
    fake = tmp_path / "python"
    fake.write_text(FAILING_VLLM)
    fake.chmod(0o755)
    serve = Serve(tmp_path, LONGREAD_ENGINE="vllm-local", LONGREAD_VLLM_PYTHON=str(fake))
    try:
        serve.wait_for("the model to fail", lambda: serve.health()["engine_state"] == "failed")
        h = serve.health()
        assert "exited with code 3 while starting" in h["detail"] and "not enough memory" in h["detail"]
        serve.wait_for(
            "the terminal to say so",
            lambda: (
                "longread: The model (vllm-local) failed to start: "
                "RuntimeError: not enough memory for the KV cache" in serve.output()
            ),
            timeout_s=10,
        )
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        try:
            page.goto(serve.url)
            page.locator("#health", has_text="failed to start: RuntimeError: not enough memory").wait_for()
            assert "not enough memory" in page.locator("#engine-log textarea").input_value()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "health-model-failed.png"))
        finally:
            page.close()
    finally:
        serve.stop()


@pytest.mark.browser
def test_a_reading_whose_worker_is_killed_says_it_waits_then_resumes(tmp_path, chromium):
    """The issue's story: kill -9 the worker mid-reading (here it hangs first). The page said `running` with a
    frozen ETA for minutes; now it says the reading waits for a worker (no ETA), `serve` starts a new worker, the
    reading resumes where it stopped, and its time waiting is not counted as reading."""
    import re

    serve = Serve(
        tmp_path,
        LONGREAD_STALE_AFTER_S="6",
        LONGREAD_CHUNK_TOKENS="48",
        LONGREAD_MEMORY_TOKENS="24",
        LONGREAD_ANSWER_TOKENS="16",
    )
    doc = tmp_path / "lighthouse.txt"
    doc.write_text(LIGHTHOUSE * 4)
    statuses: list[str] = []

    def status_matching(page, pattern: str, timeout_s: float = 240) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = page.locator("#status").inner_text().strip()
            if text and (not statuses or statuses[-1] != text):
                statuses.append(text)
            if re.search(pattern, text):
                return text
            time.sleep(0.25)
        pytest.fail(f"the page never said {pattern!r}; it said: {statuses}\n{serve.output()[-2000:]}")

    try:
        serve.wait_for("the model to be ready", lambda: serve.health()["engine_state"] == "ready")
        # the reader that writes its memory (seconds a chunk): the default read all 11 chunks in 2 s, before the
        # page showed one, so there was no reading in the middle to kill
        activate_version_named(Settings(data_dir=serve.data_dir), READER)
        (first,) = _worker_pids(serve.proc.pid)
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        try:
            page.goto(serve.url)
            page.locator("#upload input[type=file]").set_input_files(str(doc))
            page.locator("#doc-info").get_by_text("tokens").wait_for(timeout=60_000)
            page.locator("#question textarea").fill("Where is the spare key?")
            page.locator("#ask").click()
            status_matching(page, r"Reading chunk [3-9] of \d+ · read .* · ETA")
            # frozen first, then killed: a killed worker's successor was up within 4 s on a fast machine and claimed
            # the reading the moment it went stale, before the page could show the pause between
            os.kill(first, signal.SIGSTOP)
            paused = status_matching(page, r"^Paused after chunk \d+ of \d+: no worker is reading it")
            page.screenshot(path=str(ARTIFACTS / "reading-paused.png"))
            assert "ETA" not in paused
            os.kill(first, signal.SIGKILL)
            done = status_matching(page, r"^Done: read \d+ chunks in .* \(waited .*\)\.$")
            page.screenshot(path=str(ARTIFACTS / "reading-resumed-done.png"))
        finally:
            page.close()
        assert [p for p in _worker_pids(serve.proc.pid) if p != first], "serve started a new worker"
        readings = httpx.get(f"{serve.url}/api/documents/1/readings").json()
        progress = readings[0]["progress"]
        assert readings[0]["status"] == "done" and progress["waiting_s"] >= 6, (done, progress)
        assert progress["reading_s"] + progress["waiting_s"] == pytest.approx(progress["elapsed_s"])
    finally:
        serve.stop()
