"""The test suite's memory, test by test: a pytest plugin. After each test it notes the machine's used
memory and every process over 200 MB (vLLM servers, workers, browsers), and at the end prints the peak.
The full suite once ran out of memory in CI with the servers of three test folders alive at once;
this is how that was found and how the fix (package-scoped server fixtures) was measured.

    GRADIO_ANALYTICS_ENABLED=False .venv/bin/python -m pytest -q -p no:cacheprovider -p benchmarks.suite_memory

Writes runs/benchmarks/suite-memory.tsv (time, seconds, test, used GB, big processes).
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil

OUT = Path(__file__).resolve().parents[1] / "runs" / "benchmarks" / "suite-memory.tsv"
_started: dict[str, float] = {}
_peak: list[tuple[float, str]] = []


def _big_processes(skip: int) -> str:
    found = []
    for p in psutil.process_iter(["pid", "cmdline", "memory_info"]):
        try:
            rss, cmd = p.info["memory_info"].rss, " ".join(p.info["cmdline"] or [])
        except (psutil.Error, AttributeError):
            continue
        if rss > 200e6 and p.pid != skip:
            found.append(f"{rss / 1e9:.1f}G {cmd[:70]}")
    return " | ".join(found)


def pytest_sessionstart(session) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("time\tseconds\ttest\tused_gb\tpytest_gb\tprocesses over 200 MB\n")


def pytest_runtest_logstart(nodeid: str, location) -> None:
    _started[nodeid] = time.monotonic()


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    vm, me = psutil.virtual_memory(), psutil.Process()
    used = (vm.total - vm.available) / 1e9
    _peak.append((used, nodeid))
    seconds = time.monotonic() - _started.pop(nodeid, time.monotonic())
    with OUT.open("a") as f:
        f.write(
            f"{time.strftime('%H:%M:%S')}\t{seconds:.1f}\t{nodeid}\t{used:.1f}\t"
            f"{me.memory_info().rss / 1e9:.2f}\t{_big_processes(me.pid)}\n"
        )


def pytest_terminal_summary(terminalreporter) -> None:
    if _peak:
        used, nodeid = max(_peak)
        total = psutil.virtual_memory().total / 1e9
        terminalreporter.write_line(
            f"suite memory: peak {used:.1f} of {total:.1f} GB used, after {nodeid} "
            f"({len(_peak)} tests; {OUT.relative_to(OUT.parents[2])})"
        )
