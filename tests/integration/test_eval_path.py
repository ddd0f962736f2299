"""`longread eval --cases` reads a document exactly as the app reads an upload: one contract PDF asked two
questions gives the same text, the same checkpoints (memory after every chunk) and the same answers through
`eval --cases` as uploaded and asked through the services and read by the runner. The real bundled reader
in-process (`transformers`), small chunks so that the one-page contract takes a few steps."""

from __future__ import annotations

import json

import pytest

from app.migrate import upgrade
from app.settings import get_settings
from tests.conftest import MODEL_CACHE
from training.tasks import CONTRACTS_DIR

pytestmark = [pytest.mark.integration, pytest.mark.model]

PDF = CONTRACTS_DIR / "pdf" / "cuad-003.pdf"  # one page, governed by the laws of the PRC
QUESTIONS = ["Which country's law governs this agreement?", "What is the title of this agreement?"]


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """The app's own settings from its environment, as `longread` reads them: the CLI sees the same."""
    for name, value in {
        "DATA_DIR": tmp_path / "data",
        "MODEL_CACHE_DIR": MODEL_CACHE,
        "ENGINE": "transformers",
        "CHUNK_TOKENS": 160,
        "MEMORY_TOKENS": 48,
        "ANSWER_TOKENS": 24,
    }.items():
        monkeypatch.setenv(f"LONGREAD_{name}", str(value))
    s = get_settings()
    upgrade(s.resolved_database_url)
    return s


def test_eval_cases_reads_as_an_upload_asked_through_the_services(settings, tmp_path):
    from app.cli import main
    from app.services import documents, readings
    from app.services.runner import run_readings

    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(json.dumps({"document": str(PDF), "question": q, "answers": ["PRC"]}) + "\n" for q in QUESTIONS),
        encoding="utf-8",
    )
    assert main(["eval", "--cases", str(cases), "--json", "--out", str(tmp_path / "eval")]) == 0
    evaluated = json.loads((tmp_path / "eval" / "results.json").read_text(encoding="utf-8"))["cases"]

    doc, _ = documents.add_document(settings, PDF.name, PDF.read_bytes())
    asked = readings.ask(settings, doc.id, QUESTIONS, enqueue=False)
    assert run_readings(settings, [r.id for r in asked]) == 2
    read = [readings.show(settings, r.id) for r in asked]

    assert [r.status for r in read] == ["done", "done"]
    chunks = len(read[0].checkpoints)
    assert chunks >= 3  # the contract is read in several steps, so the memories can differ
    for case, reading in zip(evaluated, read):
        assert case["question"] == reading.question
        assert case["doc_tokens"] == doc.token_count and case["chunks"] == chunks
        assert case["memories"] == [c.memory for c in reading.checkpoints]
        assert case["answer"] == reading.answer
