"""Feedback on answers against a real database (SQLite and PostgreSQL): stored with the reading,
listed per reading and per document, exported as the JSON Lines that training reads, through the
service, the API and the CLI."""

from __future__ import annotations

import functools
import json
import re

import pytest
from fastapi.testclient import TestClient

from app import cli
from app.db import session_scope
from app.models import Document
from app.services import documents, feedback, readings
from app.services.documents import document_text
from app.services.errors import NotFound
from app.services.feedback import FeedbackError
from app.services.runner import run_readings
from app.settings import Settings
from app.web import create_app
from tests.fakes import FakeEngine
from training.config import DataConfig
from training.data import TaskSource
from training.tasks import feedback_tasks

pytestmark = pytest.mark.integration

TEXT = "\n".join(f"Clause {i}: the tenant pays {i} crowns on the first day of the month." for i in range(60))


@pytest.fixture
def db_settings(db_settings: Settings) -> Settings:
    return db_settings.model_copy(update={"chunk_tokens": 120})  # at 100 the last chunk holds no "pays N crowns"


def respond(prompt: str) -> str:
    if "<section>" in prompt:
        return "crowns so far: " + re.findall(r"pays (\d+) crowns", prompt)[-1]
    return "\\boxed{59 crowns}"


def _answered(settings: Settings, tokenizer, questions: list[str], name: str = "lease.txt") -> tuple[int, list[int]]:
    doc, _ = documents.add_document(settings, name, (name + "\n" + TEXT).encode())
    ids = [r.id for r in readings.ask(settings, doc.id, questions, enqueue=False)]
    run_readings(settings, ids, FakeEngine(tokenizer, respond))
    return doc.id, ids


def test_feedback_is_kept_per_reading_and_document_and_exported_for_training(db_settings, tokenizer, tmp_path):
    doc_id, (a, b, c) = _answered(db_settings, tokenizer, ["How much is the rent?", "When is it due?", "Unjudged?"])
    other_doc, (d,) = _answered(db_settings, tokenizer, ["Rent?"], name="other.txt")

    first = feedback.add_feedback(db_settings, a, "incorrect", "  60 crowns ", "off by one")
    assert (first.verdict, first.corrected_answer, first.comment, first.answer) == (
        "incorrect",
        "60 crowns",
        "off by one",
        "59 crowns",
    )
    latest = feedback.add_feedback(db_settings, a, "correct", comment="  ")  # changed my mind: the latest counts
    assert latest.comment is None and latest.corrected_answer is None
    feedback.add_feedback(db_settings, b, "incorrect", "on the first day of the month")
    feedback.add_feedback(db_settings, d, "incorrect")  # no correction: exported, skipped by training

    assert [f.id for f in feedback.reading_feedback(db_settings, a)] == [latest.id, first.id]
    assert [f.reading_id for f in feedback.document_feedback(db_settings, doc_id)] == [b, a, a]
    assert [f.reading_id for f in feedback.document_feedback(db_settings, other_doc)] == [d]
    assert feedback.reading_feedback(db_settings, c) == []

    path = tmp_path / "feedback.jsonl"
    n = feedback.export_file(db_settings, path)
    # (PostgreSQL's database is shared by the session's tests: keep this test's documents)
    mine = [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if json.loads(line)["document_id"] in (doc_id, other_doc)
    ]
    path.write_text("".join(line + "\n" for line in mine), encoding="utf-8")
    rows = [json.loads(line) for line in mine]
    assert n >= len(rows) == 3
    assert [r["reading_id"] for r in rows] == [a, b, d]  # one line per judged reading, its latest verdict
    assert set(rows[0]) == {
        "reading_id",
        "document_id",
        "question",
        "answer",
        "verdict",
        "corrected_answer",
        "comment",
        "final_memory",
        "created_at",
    }
    assert rows[0] | {"created_at": None} == {
        "reading_id": a,
        "document_id": doc_id,
        "question": "How much is the rent?",
        "answer": "59 crowns",
        "verdict": "correct",
        "corrected_answer": None,
        "comment": None,
        "final_memory": "crowns so far: 59",
        "created_at": None,
    }
    assert rows[0]["created_at"].endswith("+00:00")

    # training reads it as `longread train` does (the document's text looked up in the app's database):
    # right answers teach themselves, wrong ones their correction, uncorrected ones nothing
    with session_scope(db_settings.resolved_database_url) as s:
        texts = {i: s.get(Document, i).text for i in (doc_id, other_doc)}
    source = TaskSource(
        DataConfig(synthetic_kinds=[], contracts=False, feedback=[path]),
        tokenizer,
        seed=0,
        documents=functools.partial(document_text, db_settings),
    )
    tasks = source.feedback
    assert [(t.question, t.answers) for t in tasks] == [
        ("How much is the rent?", ("59 crowns",)),
        ("When is it due?", ("on the first day of the month",)),
    ]
    assert tasks[0].document == texts[doc_id]

    # with the text in the file, training needs no database
    with_text = tmp_path / "with_text.jsonl"
    feedback.export_file(db_settings, with_text, with_text=True)
    tasks = [t for t in feedback_tasks(with_text) if t.id in (f"feedback-{a}", f"feedback-{b}")]
    assert [t.document for t in tasks] == [texts[doc_id], texts[doc_id]]


def test_feedback_is_validated(db_settings, tokenizer):
    doc_id, (done,) = _answered(db_settings, tokenizer, ["Rent?"], name="validated.txt")
    (queued,) = readings.ask(db_settings, doc_id, ["Not read yet"], enqueue=False)
    with pytest.raises(FeedbackError, match="queued: only an answered reading can be judged"):
        feedback.add_feedback(db_settings, queued.id, "correct")
    with pytest.raises(FeedbackError, match="verdict must be one of correct, incorrect"):
        feedback.add_feedback(db_settings, done, "maybe")
    with pytest.raises(FeedbackError, match="the comment may have at most 4,000 characters"):
        feedback.add_feedback(db_settings, done, "correct", comment="x" * 4001)
    with pytest.raises(FeedbackError, match="the corrected answer may have at most"):
        feedback.add_feedback(db_settings, done, "incorrect", "x" * 4001)
    with pytest.raises(NotFound, match="no reading 999"):
        feedback.add_feedback(db_settings, 999, "correct")
    with pytest.raises(NotFound, match="no document 999"):
        feedback.document_feedback(db_settings, 999)
    assert feedback.document_feedback(db_settings, doc_id) == []  # nothing was stored


def test_feedback_through_the_api(settings, tokenizer):
    doc_id, (a, b) = _answered(settings, tokenizer, ["Rent?", "Due?"])
    with TestClient(create_app(settings)) as client:
        r = client.post(
            f"/api/readings/{a}/feedback",
            json={"verdict": "incorrect", "corrected_answer": "60 crowns", "comment": "<b>no</b>"},
        )
        assert r.status_code == 201, r.text
        assert r.json() | {"created_at": None, "id": None} == {
            "id": None,
            "reading_id": a,
            "document_id": doc_id,
            "question": "Rent?",
            "answer": "59 crowns",
            "verdict": "incorrect",
            "corrected_answer": "60 crowns",
            "comment": "<b>no</b>",
            "created_at": None,
        }
        assert client.post(f"/api/readings/{b}/feedback", json={"verdict": "correct"}).status_code == 201
        assert [f["reading_id"] for f in client.get(f"/api/readings/{a}/feedback").json()] == [a]
        assert [f["reading_id"] for f in client.get(f"/api/documents/{doc_id}/feedback").json()] == [b, a]

        export = client.get("/api/feedback/export")
        assert export.status_code == 200 and export.headers["content-type"].startswith("application/jsonl")
        rows = [json.loads(line) for line in export.text.splitlines()]
        assert [(x["reading_id"], x["verdict"]) for x in rows] == [(a, "incorrect"), (b, "correct")]
        assert "document_text" not in rows[0]
        assert client.get("/api/feedback/export?with_text=true").text.count(TEXT.splitlines()[-1]) == 2

        assert client.post(f"/api/readings/{a}/feedback", json={"verdict": "maybe"}).status_code == 422
        assert (
            client.post(f"/api/readings/{a}/feedback", json={"verdict": "correct", "comment": "x" * 4001}).status_code
            == 422
        )
        assert client.post("/api/readings/999/feedback", json={"verdict": "correct"}).status_code == 404
        assert client.get("/api/readings/999/feedback").status_code == 404
        assert client.get("/api/documents/999/feedback").status_code == 404
        (queued,) = readings.ask(settings, doc_id, ["Later?"], enqueue=False)
        r = client.post(f"/api/readings/{queued.id}/feedback", json={"verdict": "correct"})
        assert r.status_code == 422 and "only an answered reading" in r.json()["detail"]
        paths = client.get("/openapi.json").json()["paths"]
        assert {
            "/api/readings/{reading_id}/feedback",
            "/api/documents/{document_id}/feedback",
            "/api/feedback/export",
        } <= set(paths)


def test_feedback_through_the_cli(settings, tokenizer, tmp_path, monkeypatch, capsys):
    _, (a,) = _answered(settings, tokenizer, ["Rent?"])
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    assert cli.main(["feedback", str(a), "--verdict", "incorrect", "--answer", "60 crowns", "--comment", "hm"]) == 0
    assert capsys.readouterr().out == f"feedback 1 on reading {a}: incorrect\n"
    cli.main(["feedback", str(a), "--json"])
    (row,) = json.loads(capsys.readouterr().out)["feedback"]
    assert (row["verdict"], row["corrected_answer"], row["comment"]) == ("incorrect", "60 crowns", "hm")

    out = tmp_path / "fb.jsonl"
    assert cli.main(["feedback", "export", str(out)]) == 0
    assert "1 judged reading written" in capsys.readouterr().err
    (line,) = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["corrected_answer"] == "60 crowns"

    for argv, message in [
        (["feedback", str(a), "--verdict", "wrong"], None),
        (["feedback", "999", "--verdict", "correct"], "no reading 999"),
        (["feedback", str(a), "--comment", "only a comment"], "go with --verdict"),
        (["feedback", "export"], "usage: longread feedback export FILE.jsonl"),
        (["feedback", "abc"], "is not a reading id"),
    ]:
        with pytest.raises(SystemExit) as stopped:
            cli.main(argv)
        if message:
            assert message in str(stopped.value)


def test_a_line_of_the_export_stays_one_line_whatever_the_text(settings, tokenizer, tmp_path):
    """U+2028, U+2029 and NEL are line ends to str.splitlines() (training's reader) but stay raw in
    json.dumps(ensure_ascii=False): the export escapes them."""
    _, (a,) = _answered(settings, tokenizer, ["Rent\u2028per month\u2029?"])
    feedback.add_feedback(settings, a, "incorrect", "nine\x85crowns", "odd\u2028text")
    path = tmp_path / "breaks.jsonl"
    feedback.export_file(settings, path, with_text=True)
    (line,) = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(line)
    assert (row["question"], row["corrected_answer"], row["comment"]) == (
        "Rent\u2028per month\u2029?",
        "nine\x85crowns",
        "odd\u2028text",
    )
    (task,) = feedback_tasks(path)
    assert task.answers == ("nine\x85crowns",)
