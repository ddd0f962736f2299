"""What an open tab costs while nobody touches it: the CPU seconds of headless Chromium and of the web app over a
stretch of idle time, on the Read tab and on the Training tab. A page's timers (the readings list, the estimate,
the branches, the review and the health line every 3 s) cost both sides on every tick; the browser tests keep such
a tab open for most of their time, as people do (docs/experiments/2026-12-07-one-event-a-tick.md).

    .venv/bin/python -m benchmarks.idle_page [--seconds 30] [--url http://127.0.0.1:7860 | --checkout ../old]

Without --url it starts `longread serve --no-worker` on a fresh data folder and stops it after. Prints one line a
tab; the app's figure covers the whole run (the page's load included), Chromium's only the idle stretch.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

from benchmarks.suite_cpu import tree_cpu_s
from inference.vllm_server import free_port
from tests.conftest import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]


def _cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            total += sum(p.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def _chromium() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if "chromium" in " ".join(p.info["cmdline"] or [])]


def _serve(data: Path, checkout: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {
        **os.environ,
        "LONGREAD_DATA_DIR": str(data),
        "LONGREAD_PORT": str(port),
        "GRADIO_ANALYTICS_ENABLED": "False",
    }
    log = (data / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--no-worker"], cwd=checkout, env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"`longread serve` did not answer within 120 s; its log: {data / 'serve.log'}")


def measure(url: str, seconds: float, app: list[psutil.Process]) -> None:
    from playwright.sync_api import sync_playwright

    app_before = sum(map(tree_cpu_s, app))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(url + "/")
        page.locator("#ask").wait_for(state="visible", timeout=60_000)
        for tab in ("Read", "Training"):
            page.get_by_role("tab", name=tab).click()
            page.wait_for_timeout(3000)
            before = _cpu(_chromium())
            page.wait_for_timeout(seconds * 1000)
            print(f"{tab} tab, idle {seconds:.0f} s: Chromium {_cpu(_chromium()) - before:.1f} CPU s", flush=True)
        browser.close()
    if app:
        print(f"the web app over the whole run: {sum(map(tree_cpu_s, app)) - app_before:.1f} CPU s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--url", help="an app already running (its CPU is then not counted)")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="serve this checkout's app (a before/after)")
    args = parser.parse_args()
    if args.url:
        measure(args.url.rstrip("/"), args.seconds, [])
        return
    with tempfile.TemporaryDirectory(prefix="longread-idle-") as folder:
        proc, url = _serve(Path(folder), args.checkout)
        try:
            measure(url, args.seconds, [psutil.Process(proc.pid)])
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
