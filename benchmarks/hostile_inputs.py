"""Hostile uploads against the real app (FastAPI TestClient, SQLite, the parse sandbox): what each
one gets, what the user is told, and whether the app and an earlier document were unaffected.
Prints a Markdown table. tests/integration/test_upload_safety.py asserts the same outcomes.

    .venv/bin/python -m benchmarks.hostile_inputs
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from app.migrate import upgrade
from app.settings import Settings
from app.web import create_app
from inference.models import MODEL_CACHE
from tests import docgen
from tests.hostile import Hostile, hostile_inputs, outcome, told


def upload(client: TestClient, name: str, data: bytes):
    return client.post("/api/documents", files={"file": (name, data, "application/pdf")})


def run_one(client: TestClient, h: Hostile, good_id: int, good_before: dict) -> dict:
    data = h.data  # built before the clock starts
    t = time.monotonic()
    r = upload(client, h.filename, data)
    seconds = time.monotonic() - t
    body = r.json()
    got, message = outcome(r.status_code, body), told(r.status_code, body)
    alive = client.get("/healthz").status_code == 200
    good_after = client.get(f"/api/documents/{good_id}").json()
    again = upload(client, "again.txt", b"The app still parses documents after that.").json()
    return {
        "name": h.name,
        "size": len(h.data),
        "outcome": got,
        "told": message,
        "seconds": seconds,
        "app_ok": alive and again["status"] == "ready",
        "others_ok": {k: good_after[k] for k in good_before} == good_before,
        "as_expected": got == h.outcome and h.expect in message,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", model_cache_dir=MODEL_CACHE)
        upgrade(settings.resolved_database_url)
        with TestClient(create_app(settings)) as client:
            good = upload(client, "lighthouse.docx", docgen.to_docx(docgen.small_book())).json()
            assert good["status"] == "ready", good
            keys = ("status", "format", "pages", "char_count", "token_count", "title")
            before = {k: good[k] for k in keys}
            rows = [run_one(client, h, good["id"], before) for h in hostile_inputs()]
            stored = sorted(
                p.relative_to(settings.data_dir).parts[0] for p in settings.data_dir.rglob("*") if p.is_file()
            )
    print("| hostile input | size | outcome | what the user sees | s | app serves after | other documents unaffected |")
    print("|---|---:|---|---|---:|---|---|")
    for r in rows:
        told = r["told"].replace("|", "\\|")
        print(
            f"| {r['name']} | {_size(r['size'])} | {r['outcome']} | {told} | {r['seconds']:.2f} | "
            f"{'yes' if r['app_ok'] else 'NO'} | {'yes' if r['others_ok'] else 'NO'} |"
        )
    print(f"\nfiles written under the data dir: only {sorted(set(stored))} (blobs named by SHA-256, the database)")
    bad = [r["name"] for r in rows if not (r["as_expected"] and r["app_ok"] and r["others_ok"])]
    print("all as expected" if not bad else f"NOT as expected: {bad}")


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


if __name__ == "__main__":
    main()
