"""Every format through the HTTP API: what a person sees before asking (title, format, pages or
sections, characters, tokens, reading-time estimate, page map), and checkpoints that point back
to the right section."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.documents.parsing import page_of
from app.services.documents import ENGINE_SPEEDS, estimate_reading
from app.services.runner import run_readings
from app.web import create_app
from tests import docgen
from tests.fakes import FakeEngine

pytestmark = pytest.mark.integration


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.mark.parametrize("fmt", ["docx", "epub", "html", "md", "txt"])
def test_each_format_shows_what_a_reading_needs(client, settings, fmt):
    book = docgen.small_book()
    # a misleading extension and content type: the bytes decide
    r = client.post("/api/documents", files={"file": ("upload.pdf", docgen.convert(book, fmt), "application/pdf")})
    assert r.status_code == 201, r.text
    doc = r.json()
    assert doc["status"] == "ready" and doc["format"] == fmt and doc["filename"] == "upload.pdf"
    assert doc["title"] == (book.title if fmt != "txt" else "upload.pdf")
    assert doc["page_unit"] == "section" and doc["pages"] == len(doc["page_map"]) >= 4
    assert [p["label"] for p in doc["page_map"]][-3:] == ["Chapter 1", "Chapter 2", "Chapter 3"]
    assert doc["char_count"] > 200 and doc["token_count"] > 50
    est = doc["estimate"]
    assert est["engine"] == settings.engine and est["chunk_tokens"] == settings.chunk_tokens
    assert est["chunks"] == -(-doc["token_count"] // settings.chunk_tokens) and est["seconds"] > 0
    listed = client.get("/api/documents").json()[0]
    assert listed["id"] == doc["id"] and listed["page_map"] is None and listed["estimate"] == est


def test_pdf_pages_and_checkpoint_provenance(client, settings, tokenizer):
    data = (docgen.CONTRACTS / "pdf" / "cuad-000.pdf").read_bytes()
    doc = client.post("/api/documents", files={"file": ("cuad-000.pdf", data)}).json()
    assert doc["format"] == "pdf" and doc["page_unit"] == "page" and doc["pages"] == 12
    assert [p["label"] for p in doc["page_map"]] == [str(i) for i in range(1, 13)]
    reading = client.post(
        f"/api/documents/{doc['id']}/readings", json={"question": "Which law?", "chunk_tokens": 2000}
    ).json()
    run_readings(settings, [reading["id"]], FakeEngine(tokenizer, lambda p: "notes"))
    got = client.get(f"/api/readings/{reading['id']}").json()
    starts = [p["start"] for p in doc["page_map"]]
    for c in got["checkpoints"]:
        assert c["first_page"] == page_of(starts, c["start_char"])
        assert 1 <= c["first_page"] <= c["last_page"] <= 12
    assert got["checkpoints"][-1]["last_page"] == 12


def test_checkpoints_point_at_sections_of_an_epub(client, settings, tokenizer):
    book = docgen.small_book()
    doc = client.post("/api/documents", files={"file": ("keeper.epub", docgen.to_epub(book))}).json()
    reading = client.post(
        f"/api/documents/{doc['id']}/readings", json={"question": "Who came?", "chunk_tokens": 16}
    ).json()
    run_readings(settings, [reading["id"]], FakeEngine(tokenizer, lambda p: "notes"))
    checkpoints = client.get(f"/api/readings/{reading['id']}").json()["checkpoints"]
    labels = [p["label"] for p in doc["page_map"]]
    sections = {labels[p - 1] for c in checkpoints for p in range(c["first_page"], c["last_page"] + 1)}
    assert sections == set(labels)  # every section was read, and each checkpoint says which


def test_reading_time_estimate(settings):
    assert estimate_reading(0, settings).chunks == 0
    one, two, ten = (estimate_reading(n * settings.chunk_tokens, settings) for n in (1, 2, 10))
    assert (one.chunks, two.chunks, ten.chunks) == (1, 2, 10) and one.basis == ENGINE_SPEEDS[settings.engine].basis
    per_chunk = two.seconds - one.seconds
    assert per_chunk > 0 and ten.seconds - one.seconds == pytest.approx(9 * per_chunk, abs=0.5)  # linear
    assert one.seconds > per_chunk  # plus the final answer
    assert (
        estimate_reading(
            1000, settings.model_copy(update={"engine": "openai", "openai_base_url": "http://127.0.0.1:9/v1"})
        ).seconds
        is None
    )
