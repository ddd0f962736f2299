"""Where a command's CPU goes, process by process: runs the command, reads every process under it from /proc each
second, and prints their CPU seconds summed by what they are (Chromium's renderer, the web app, a worker, a
training job...). For a browser test, how much of its cost is the page
(docs/experiments/2026-12-07-one-event-a-tick.md).

    CI=true .venv/bin/python -m benchmarks.process_cpu .venv/bin/python -m pytest -q tests/browser/test_training_ui.py

A process that lives under a second between two reads is missed, so the total is a floor.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import psutil


def kind(cmdline: list[str]) -> str:
    """A process's command, shortened to what tells it apart (Chromium by its --type)."""
    if cmdline and "chromium" in cmdline[0]:
        role = next((a.split("=", 1)[1] for a in cmdline if a.startswith("--type=")), "browser")
        return f"chromium {role}"
    text = " ".join(cmdline)
    return text if len(text) <= 100 else text[:97] + "..."


def main(command: list[str]) -> int:
    proc = subprocess.Popen(command)
    root, last = psutil.Process(proc.pid), {}
    while proc.poll() is None:
        for p in [root, *root.children(recursive=True)]:
            try:
                last[p.pid] = (kind(p.cmdline()), sum(p.cpu_times()[:2]))
            except psutil.Error:
                pass
        time.sleep(1)
    by_kind = Counter()
    for name, seconds in last.values():
        by_kind[name] += seconds
    print(f"\nCPU seconds by process, {sum(by_kind.values()):.1f} in all:")
    for name, seconds in by_kind.most_common(15):
        print(f"{seconds:8.1f}  {name}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
