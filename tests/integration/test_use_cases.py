"""The use-case layer (app/services): one function per action, called by the API, the UI and the CLI
alike, so that every entry point validates the same way and enqueues only after the commit."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app import cli
from app.db import session_scope
from app.models import Reading
from app.services import documents, readings
from app.services.readings import ReadingError
from app.web import create_app

pytestmark = pytest.mark.integration

TEXT = "The lamp room key hangs behind the barometer. " * 40


@pytest.fixture
def doc_id(settings) -> int:
    doc, existing = documents.add_document(settings, "key.txt", TEXT.encode())
    assert doc.status == "ready" and not existing
    return doc.id


def test_ask_commits_before_it_enqueues(settings, doc_id, monkeypatch):
    seen = []

    def enqueue(_settings):  # what a worker would find at the moment the task is sent
        with session_scope(settings.resolved_database_url) as s:
            seen.append([(r.id, r.status.value) for r in s.query(Reading).all()])

    monkeypatch.setattr(readings, "request_reading_pass", enqueue)
    views = readings.ask(settings, doc_id, ["Where is the key?", "Who kept it?"])
    assert seen == [[(views[0].id, "queued"), (views[1].id, "queued")]]
    assert [v.question for v in views] == ["Where is the key?", "Who kept it?"]
    assert views[0].progress.step == 0 and views[0].checkpoints == []

    readings.ask(settings, doc_id, ["Read here"], enqueue=False)  # the CLI reads in its own process
    assert len(seen) == 1

    readings.cancel(settings, views[0].id)
    assert readings.retry(settings, views[0].id).status == "queued"
    assert len(seen) == 2  # a retry is enqueued after its commit too


@pytest.mark.parametrize(
    ("chunk", "memory", "message"),
    [
        (1, None, "chunk_tokens must be between 16 and 200,000 tokens (got 1)"),
        (15, None, "chunk_tokens must be between 16"),
        (200_001, None, "chunk_tokens must be between 16"),
        (None, 4, "memory_tokens must be between 8 and 16,000 tokens (got 4)"),
    ],
)
def test_one_set_of_limits_for_the_service_the_api_and_the_cli(
    settings, doc_id, monkeypatch, capsys, chunk, memory, message
):
    with pytest.raises(ReadingError) as refused:
        readings.ask(settings, doc_id, ["Where?"], chunk, memory, enqueue=False)
    assert message in str(refused.value)

    with TestClient(create_app(settings)) as client:
        body = {"question": "Where?", "chunk_tokens": chunk, "memory_tokens": memory}
        assert client.post(f"/api/documents/{doc_id}/readings", json=body).status_code == 422

    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    argv = ["ask", str(doc_id), "-q", "Where?"]
    argv += ["--chunk-tokens", str(chunk)] if chunk is not None else []
    argv += ["--memory-tokens", str(memory)] if memory is not None else []
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert message in str(stopped.value) and str(stopped.value).startswith("longread ask: ")
    with session_scope(settings.resolved_database_url) as s:
        assert s.query(Reading).count() == 0  # nothing was stored by any of them


def test_questions_are_validated_in_the_service(settings, doc_id):
    for questions, message in [
        ([], "must not be empty"),
        (["  "], "must not be empty"),
        (["x" * 4001], "at most 4,000 characters"),
        (["?"] * 65, "at most 64 questions"),
    ]:
        with pytest.raises(ReadingError, match=message):
            readings.ask(settings, doc_id, questions, enqueue=False)


def test_views_are_detached_and_carry_the_computed_figures(settings, doc_id):
    (r,) = readings.ask(settings, doc_id, ["Where?"], enqueue=False)
    shown = readings.show(settings, r.id)
    assert shown.progress.eta_s is None and shown.progress.waiting_s is not None
    doc = documents.show_document(settings, doc_id)
    assert doc.estimate is not None and doc.estimate.chunks >= 1 and doc.page_map
    assert [x.id for x in readings.document_readings(settings, doc_id)] == [r.id]
