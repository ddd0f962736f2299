"""The HTTP API on a real SQLite database and the embedded broker."""

from __future__ import annotations

import io
import re

import pytest
from fastapi.testclient import TestClient
from pypdf import PdfWriter

from app.services.runner import run_readings
from app.web import create_app
from tests.fakes import FakeEngine

pytestmark = pytest.mark.integration

TEXT = "".join(f"Paragraph {i}. The river keeps flowing past the old mill number {i}.\n" for i in range(80))


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as c:
        yield c


def _upload(client, name, data, content_type="application/octet-stream"):
    return client.post("/api/documents", files={"file": (name, data, content_type)})


def test_upload_ask_and_follow_a_reading(client, settings, tokenizer):
    r = _upload(client, "../../etc/mill.txt", TEXT.encode(), "text/plain")
    assert r.status_code == 201, r.text
    doc = r.json()
    assert doc["title"] == "mill.txt" and doc["status"] == "ready" and doc["format"] == "txt"
    # the stored text is normalised: the final line end goes
    assert doc["char_count"] == len(TEXT.strip()) and doc["token_count"] > 500 and doc["pages"] == 1
    assert [d["id"] for d in client.get("/api/documents").json()] == [doc["id"]]

    r = client.post(f"/api/documents/{doc['id']}/readings", json={"question": "Which mill?", "chunk_tokens": 200})
    assert r.status_code == 201, r.text
    reading = r.json()
    assert reading["status"] == "queued" and reading["chunk_tokens"] == 200 and reading["checkpoints"] == []

    def respond(prompt: str) -> str:
        return (
            "mills so far: " + re.findall(r"mill number (\d+)", prompt)[-1] if "<section>" in prompt else "\\boxed{79}"
        )

    run_readings(settings, [reading["id"]], FakeEngine(tokenizer, respond))
    got = client.get(f"/api/readings/{reading['id']}").json()
    assert got["status"] == "done" and got["answer"] == "79"
    total = got["progress"]["total"]
    assert got["progress"]["step"] == total == len(got["checkpoints"]) >= 3
    assert got["checkpoints"][-1]["memory"] == "mills so far: 79"
    assert got["checkpoints"][-1]["end_char"] == len(TEXT.strip())
    assert client.get(f"/api/documents/{doc['id']}/readings").json()[0]["id"] == reading["id"]


def test_cancel_and_retry_resume_from_the_last_checkpoint(client, settings, tokenizer):
    doc = _upload(client, "mill.txt", TEXT.encode()).json()
    reading = client.post(f"/api/documents/{doc['id']}/readings", json={"question": "Which mill?"}).json()
    assert client.post(f"/api/readings/{reading['id']}/retry").status_code == 422  # queued: nothing to retry

    def cancel_after_two_steps(prompt: str) -> str:
        if len(engine.calls) == 2:
            assert client.post(f"/api/readings/{reading['id']}/cancel").json()["status"] == "cancelled"
        return "notes"

    engine = FakeEngine(tokenizer, cancel_after_two_steps)
    run_readings(settings, engine=engine)
    got = client.get(f"/api/readings/{reading['id']}").json()
    assert got["status"] == "cancelled" and got["progress"]["step"] == 1  # step 2 was refused
    assert client.post(f"/api/readings/{reading['id']}/retry").json()["status"] == "queued"
    run_readings(settings, engine=FakeEngine(tokenizer, lambda p: "notes"))
    got = client.get(f"/api/readings/{reading['id']}").json()
    assert got["status"] == "done"
    assert [c["step"] for c in got["checkpoints"]] == list(range(1, got["progress"]["total"] + 1))


def test_image_only_pdf_is_kept_with_a_clear_error(client, settings):
    writer = PdfWriter()
    for _ in range(3):
        writer.add_blank_page(width=200, height=200)
    buf = io.BytesIO()
    writer.write(buf)
    doc = _upload(client, "blank.pdf", buf.getvalue()).json()
    # blank pages have no text: the file is kept and the user is told why it cannot be read
    assert doc["status"] == "failed" and "no text" in doc["error"]
    assert len(list(settings.blob_dir.rglob("*"))) == 2  # the original is stored: one folder, one file


def test_bad_requests_get_clear_errors(client, settings):
    assert _upload(client, "x.bin", b"\x7fELF\x00\x00\x00binary").json()["error"].startswith("unsupported file type")
    assert "empty" in _upload(client, "empty.txt", b"").json()["error"]
    big = b"a" * (settings.max_upload_mb * 1024 * 1024 + 1)
    r = _upload(client, "big.txt", big)
    assert r.status_code == 413 and "limit" in r.json()["detail"]
    doc = _upload(client, "a.txt", b"hello there").json()
    assert client.post(f"/api/documents/{doc['id']}/readings", json={"question": ""}).status_code == 422
    assert (
        client.post(f"/api/documents/{doc['id']}/readings", json={"question": "?", "chunk_tokens": 1}).status_code
        == 422
    )


def test_a_missing_document_or_reading_is_404_everywhere(client):
    """The same missing object answers the same way on every route (404), not 422 on some."""
    missing = [
        ("get", "/api/documents/999", None, "no document 999"),
        ("get", "/api/documents/999/readings", None, "no document 999"),
        ("post", "/api/documents/999/readings", {"question": "why?"}, "no document 999"),
        ("get", "/api/readings/999", None, "no reading 999"),
        ("post", "/api/readings/999/cancel", None, "no reading 999"),
        ("post", "/api/readings/999/retry", None, "no reading 999"),
    ]
    for method, path, body, detail in missing:
        r = client.request(method, path, json=body)
        assert (r.status_code, r.json()["detail"]) == (404, detail), (method, path)


def test_the_same_file_again_is_the_same_document(client, settings):
    first = _upload(client, "mill.txt", TEXT.encode(), "text/plain")
    assert first.status_code == 201, first.text
    doc = first.json()
    reading = client.post(f"/api/documents/{doc['id']}/readings", json={"question": "Which mill?"}).json()
    # Same bytes under another name: the existing document (and its readings), 200 not 201.
    again = _upload(client, "copy of mill.txt", TEXT.encode(), "text/plain")
    assert again.status_code == 200, again.text
    assert again.json()["id"] == doc["id"] and again.json()["title"] == "mill.txt"
    assert [d["id"] for d in client.get("/api/documents").json()] == [doc["id"]]
    assert [r["id"] for r in client.get(f"/api/documents/{doc['id']}/readings").json()] == [reading["id"]]
    # Other bytes are another document.
    other = _upload(client, "mill.txt", (TEXT + "One more line.").encode(), "text/plain")
    assert other.status_code == 201 and other.json()["id"] != doc["id"]
    # A file that failed to parse is parsed again when uploaded again, as the same document.
    failed = _upload(client, "empty.txt", b"").json()
    assert failed["status"] == "failed"
    again = _upload(client, "empty.txt", b"")
    assert again.status_code == 200 and again.json()["id"] == failed["id"] and again.json()["status"] == "failed"
