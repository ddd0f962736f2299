"""A worker started as tests start it (`longread worker`'s Celery command, reading or training), in a
process group of its own so that a test can kill it and everything it started, and the wait on it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest


class WorkerGroup:
    """`command` in its own process group, its output appended to `log`."""

    def __init__(self, command: Sequence[str], env: dict[str, str], log: Path, stop_timeout_s: float = 30):
        self.log, self.stop_timeout_s = log, stop_timeout_s
        self.proc = subprocess.Popen(
            list(command), env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True
        )

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_for(condition: Callable[[], bool], timeout: float, worker: WorkerGroup, what: str) -> None:
    """Until `condition()`; fails at once, with the worker's log, if the worker dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        assert worker.proc.poll() is None, f"the worker died:\n{worker.log.read_text()[-3000:]}"
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}; worker log:\n{worker.log.read_text()[-3000:]}")
