"""Keep a child process running: `longread serve` supervises the Celery worker it starts.

A worker that dies while the app runs (killed, crashed, out of memory) is started again after a
pause that doubles with each quick death (1 s, 2 s, 4 s … up to a minute) and goes back to 1 s once a
worker has lived for a minute. When it keeps dying, the terminal says so, with its exit status, while
the supervisor keeps trying: the page shows "no worker is running" meanwhile (app/services/health.py).
A worker that exits with status 0 was asked to stop (Ctrl-C reaches it as well as `serve`; Celery's warm
shutdown): it is not started again. A worker also stops when `serve` itself dies, even by SIGKILL
(`die_with_supervisor`, Linux), so no worker and no model is left running without its app.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

SUPERVISOR_PID = "LONGREAD_SUPERVISOR_PID"


def die_with_supervisor() -> None:
    """Call first thing in a supervised child: the kernel sends it SIGTERM when its supervisor dies,
    however it dies. (The signal follows the supervisor's thread that started the child: `start()`
    runs in the main thread, restarts in the supervisor's thread, which outlives its child.)"""
    parent = os.environ.pop(SUPERVISOR_PID, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(parent):  # the supervisor died before prctl: nobody would signal us
        os.kill(os.getpid(), signal.SIGTERM)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Supervisor:
    def __init__(
        self,
        command: Sequence[str],
        *,
        name: str = "worker",
        min_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        healthy_after_s: float = 60.0,
        keeps_dying_after: int = 3,
        say: Callable[[str], None] = lambda line: print(line, flush=True),
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], bool] | None = None,
    ):
        self.command = list(command)
        self.name = name
        self.min_backoff_s, self.max_backoff_s = min_backoff_s, max_backoff_s
        self.healthy_after_s = healthy_after_s
        self.keeps_dying_after = keeps_dying_after
        self.say = say
        self.clock = clock
        self.process: subprocess.Popen | None = None
        #: how many times in a row the child died within healthy_after_s of starting
        self.quick_deaths = 0
        self.restarts = 0
        self._stopping = threading.Event()
        #: pauses for the given seconds; True means stop (the default returns early on stop())
        self.wait = wait or self._stopping.wait
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._spawn()
        self._thread = threading.Thread(target=self._watch, name=f"{self.name}-supervisor", daemon=True)
        self._thread.start()

    def _spawn(self) -> None:
        with self._lock:
            if not self._stopping.is_set():
                self.process = subprocess.Popen(self.command, env={**os.environ, SUPERVISOR_PID: str(os.getpid())})
                self._started_at = self.clock()

    def backoff_s(self) -> float:
        """The pause before the next start: doubles with each quick death in a row."""
        return min(self.max_backoff_s, self.min_backoff_s * 2 ** max(0, self.quick_deaths - 1))

    def _watch(self) -> None:
        while not self._stopping.is_set():
            process = self.process
            if process is None:
                return
            code = process.wait()
            if self._stopping.is_set():
                return
            if code == 0:
                self.say(f"longread: the {self.name} (pid {process.pid}) stopped cleanly; not starting another.")
                return
            lived = self.clock() - self._started_at
            self.quick_deaths = self.quick_deaths + 1 if lived < self.healthy_after_s else 1
            pause = self.backoff_s()
            how = describe_exit(code)
            if self.quick_deaths >= self.keeps_dying_after:
                self.say(
                    f"longread: the {self.name} keeps dying: {self.quick_deaths} times in a row within "
                    f"{self.healthy_after_s:g} s of starting (last: {how}). Its output above says why; "
                    f"until it stays up, nothing is read. Trying again in {pause:g} s."
                )
            else:
                self.say(
                    f"longread: the {self.name} (pid {process.pid}) stopped ({how}) after {lived:.0f} s; "
                    f"starting a new one in {pause:g} s."
                )
            if self.wait(pause) or self._stopping.is_set():
                return
            self.restarts += 1
            self._spawn()

    def stop(self, timeout_s: float = 30.0) -> None:
        """No more restarts; SIGTERM to the child, SIGKILL if it is still there after timeout_s."""
        with self._lock:
            self._stopping.set()
            process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._thread is not None:
            self._thread.join(timeout=5)
