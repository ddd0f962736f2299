"""`longread serve` restarts a worker that dies, with a pause that doubles while it keeps dying
quickly, and says so; a worker that lived a while starts the count again. Real child processes; the
pauses and the clock are recorded, not slept (the real worker and `serve`: tests/integration/test_serve.py)."""

from __future__ import annotations

import itertools
import sys

import pytest

from app.supervisor import Supervisor, describe_exit


def run_until(pauses_wanted: int, command: list[str], clock=None) -> tuple[Supervisor, list[float], list[str]]:
    pauses: list[float] = []
    said: list[str] = []
    pids: list[int] = []

    def wait(s: float) -> bool:
        pauses.append(s)
        pids.append(sup.process.pid)
        return len(pauses) >= pauses_wanted  # True: stop

    sup = Supervisor(command, say=said.append, wait=wait, **({"clock": clock} if clock else {}))
    sup.start()
    sup._thread.join(timeout=120)
    sup.stop()
    assert len(set(pids)) == len(pids), "a new process each time"
    return sup, pauses, said


def test_a_worker_that_keeps_dying_is_restarted_with_backoff_and_the_terminal_says_so():
    sup, pauses, said = run_until(6, [sys.executable, "-c", "import sys; sys.exit(3)"])
    assert pauses == [1, 2, 4, 8, 16, 32]
    assert sup.restarts == 5
    assert "stopped (exit code 3)" in said[0] and "starting a new one in 1 s" in said[0]
    assert "keeps dying: 3 times in a row" in said[2] and "last: exit code 3" in said[2]
    assert "Trying again in 32 s" in said[5]


def test_a_worker_that_lived_a_while_is_restarted_at_once():
    ticks = itertools.count(0, 100)  # every death comes 100 s after its start
    sup, pauses, said = run_until(3, [sys.executable, "-c", "import sys; sys.exit(1)"], clock=lambda: next(ticks))
    assert pauses == [1, 1, 1]
    assert not any("keeps dying" in line for line in said)


def test_a_worker_that_was_asked_to_stop_is_not_restarted():
    """Ctrl-C reaches the worker too: it exits 0 (warm shutdown) and stays stopped."""
    said: list[str] = []
    sup = Supervisor([sys.executable, "-c", "pass"], say=said.append, wait=lambda s: pytest.fail("restarted"))
    sup.start()
    sup._thread.join(timeout=60)
    assert not sup._thread.is_alive() and sup.restarts == 0
    assert said == [f"longread: the worker (pid {sup.process.pid}) stopped cleanly; not starting another."]


def test_exit_statuses_read_as_words():
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(2) == "exit code 2"
