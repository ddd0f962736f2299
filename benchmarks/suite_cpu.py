"""The test suite's CPU time, test by test: a pytest plugin. The suite is CPU-bound on 2 cores (docs/testing.md,
issue 52), so wall time says little about what a test costs the others beside it; this counts the CPU seconds of
pytest's whole process tree (itself, its live descendants: servers, workers, Chromium, and the children it has
reaped) from a test's start to its end, setup and teardown included.

    CI=true .venv/bin/python -m tests.suite -p benchmarks.suite_cpu

Each pytest process writes runs/benchmarks/suite-cpu-<pid>.tsv (test, wall s, CPU s) and prints its 20 costliest
tests and its total. A server shared by a folder's tests is charged to the tests it works (or spins) for.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil

OUT = Path(__file__).resolve().parents[1] / "runs" / "benchmarks"
_me = psutil.Process()
_start: dict[str, tuple[float, float]] = {}
_rows: list[tuple[str, float, float]] = []


def tree_cpu_s(root: psutil.Process = _me) -> float:
    """CPU seconds of `root` (this process), its reaped children and every live descendant (with their reaped ones)."""
    total = 0.0
    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def pytest_runtest_logstart(nodeid: str, location) -> None:
    _start[nodeid] = (time.monotonic(), tree_cpu_s())


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    wall0, cpu0 = _start.pop(nodeid, (time.monotonic(), tree_cpu_s()))
    _rows.append((nodeid, time.monotonic() - wall0, max(0.0, tree_cpu_s() - cpu0)))


def pytest_terminal_summary(terminalreporter) -> None:
    if not _rows:
        return
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"suite-cpu-{os.getpid()}.tsv"
    path.write_text("test\twall_s\tcpu_s\n" + "".join(f"{n}\t{w:.1f}\t{c:.1f}\n" for n, w, c in _rows))
    wall, cpu = sum(r[1] for r in _rows), sum(r[2] for r in _rows)
    terminalreporter.write_line(f"suite CPU: {cpu:.0f} CPU s over {wall:.0f} s of tests ({len(_rows)} tests; {path})")
    for nodeid, w, c in sorted(_rows, key=lambda r: -r[2])[:20]:
        terminalreporter.write_line(f"  {c:7.1f} CPU s {w:7.1f} s  {nodeid}")
