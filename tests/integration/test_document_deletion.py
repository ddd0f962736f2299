"""Deleting a document against a real database (SQLite and PostgreSQL): every row and file of it goes, and
nothing else: another document with the same bytes keeps the stored file and page images, other documents
keep their readings, and feedback already copied into a training run's folder stays there. Through the
service, the API and the CLI; only the owner or an admin may delete, and not while it is being read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

import app.services.training_runs as training_runs
from app import cli
from app.db import session_scope
from app.documents.storage import blob_path
from app.models import Checkpoint, Document, Feedback, Reading, Review
from app.services import documents, feedback, readings, review
from app.services.document_deletion import DeletionError, delete_document, deletion_preview
from app.services.errors import NotFound
from app.services.runner import run_readings
from app.services.training_runs import DataSelection, RunParams
from app.services.users import add_user, local_actor
from app.settings import Settings
from app.web import create_app
from tests.fakes import FakeEngine
from training.tasks import DATA_DIR

pytestmark = pytest.mark.integration

CONTRACT = DATA_DIR / "contracts" / "pdf" / "cuad-000.pdf"
if not CONTRACT.is_file():
    CONTRACT = Path(__file__).resolve().parents[2] / "tests" / "data" / "cuad-000.pdf"
LEASE = "\n".join(f"Clause {i}: the tenant pays {i} crowns on the first day of the month." for i in range(40))


@pytest.fixture
def db_settings(db_settings: Settings, tmp_path) -> Settings:
    # Starting a training run enqueues it: a broker of the test's own (no worker takes it).
    return db_settings.model_copy(update={"broker_url": f"sqla+sqlite:///{tmp_path / 'broker.db'}"})


def _answer(settings: Settings, tokenizer, doc_id: int, questions: list[str], user=None) -> list[int]:
    ids = [r.id for r in readings.ask(settings, doc_id, questions, 4000, enqueue=False, user=user)]
    run_readings(settings, ids, FakeEngine(tokenizer, lambda p: "notes" if "<section>" in p else "\\boxed{59}"))
    return ids


def _rows(settings: Settings) -> dict[str, set[int]]:
    with session_scope(settings.resolved_database_url) as s:
        return {
            name: set(s.scalars(select(model.id)))
            for name, model in (
                ("documents", Document),
                ("readings", Reading),
                ("checkpoints", Checkpoint),
                ("feedback", Feedback),
            )
        }


def _of(settings: Settings, doc_id: int) -> dict[str, set[int]]:
    """The ids of the rows that belong to the document."""
    with session_scope(settings.resolved_database_url) as s:
        rs = set(s.scalars(select(Reading.id).where(Reading.document_id == doc_id)))
        return {
            "documents": {doc_id},
            "readings": rs,
            "checkpoints": set(s.scalars(select(Checkpoint.id).where(Checkpoint.reading_id.in_(rs)))),
            "feedback": set(s.scalars(select(Feedback.id).where(Feedback.reading_id.in_(rs)))),
        }


def test_deleting_removes_its_rows_and_files_and_nothing_else(db_settings, tokenizer):
    s = db_settings
    admin = local_actor(s)
    bob = add_user(s, "bob", "bob-password-1", user=admin)
    data = CONTRACT.read_bytes()
    mine, _ = documents.add_document(s, "contract.pdf", data)  # 1
    bobs, _ = documents.add_document(s, "same-contract.pdf", data, user=bob)  # 2: the same bytes, bob's own
    lease, _ = documents.add_document(s, "lease.txt", LEASE.encode())  # 3: judged, then trained on
    assert mine.id != bobs.id and mine.format == "pdf"
    first, second = _answer(s, tokenizer, mine.id, ["Who are the parties?", "Which law governs?"])
    branch = readings.edit(s, first, 1, "edited notes", enqueue=False)
    run_readings(s, [branch.id], FakeEngine(tokenizer, lambda p: "notes" if "<section>" in p else "\\boxed{x}"))
    feedback.add_feedback(s, first, "incorrect", "Acme and Beta")
    (bob_reading,) = _answer(s, tokenizer, bobs.id, ["Who signs?"], user=bob)
    (lease_reading,) = _answer(s, tokenizer, lease.id, ["How much is the rent?"])
    feedback.add_feedback(s, lease_reading, "incorrect", "39 crowns")
    page = documents.page_image(s, mine.id, 1)  # cached under the bytes' hash: bob's document shows it too
    with session_scope(s.resolved_database_url) as ses:
        blob = blob_path(s.blob_dir, ses.get(Document, mine.id).sha256)
        lease_blob = blob_path(s.blob_dir, ses.get(Document, lease.id).sha256)
    assert blob.is_file() and page.is_file()

    run = training_runs.start_run(
        s, DataSelection(include_feedback=True, lengths=(256,)), RunParams(sft_steps=1, rl_steps=0), user=admin
    )
    copied = Path(run.run_dir) / "data" / "feedback-train.jsonl"
    before_copy = copied.read_text()
    assert {json.loads(line)["document_id"] for line in before_copy.splitlines()} == {mine.id, lease.id}

    # Only the owner or an admin: bob's "no such document" is the same answer as for a missing one.
    with pytest.raises(NotFound):
        delete_document(s, mine.id, user=bob)
    preview = deletion_preview(s, mine.id)
    assert (preview.readings, preview.feedback, preview.status) == (3, 1, "ready")

    everything, gone = _rows(s), _of(s, mine.id)
    assert len(gone["readings"]) == 3 and len(gone["feedback"]) == 1 and gone["checkpoints"]
    removed = delete_document(s, mine.id)
    assert (removed.readings, removed.checkpoints, removed.feedback) == (3, len(gone["checkpoints"]), 1)
    assert not removed.file_removed  # bob's document has the same bytes
    assert _rows(s) == {k: everything[k] - gone[k] for k in everything}
    assert blob.is_file() and page.is_file()
    assert readings.show(s, bob_reading, user=bob).answer == "59"
    assert copied.read_text() == before_copy  # the run's copy of the deleted document's feedback stays
    with pytest.raises(NotFound):
        documents.show_document(s, mine.id)

    # An admin may delete another user's document; the last one with these bytes takes the file and pages.
    removed = delete_document(s, bobs.id, user=admin)
    assert removed.file_removed and removed.readings == 1
    assert not blob.exists() and not page.exists() and not page.parent.exists()
    assert lease_blob.is_file() and _rows(s)["documents"] == {lease.id}
    assert copied.read_text() == before_copy


def test_a_document_being_read_is_refused_and_failed_uploads_are_listed_last(db_settings):
    s = db_settings
    ready, _ = documents.add_document(s, "a.txt", LEASE.encode())
    failed, _ = documents.add_document(s, "broken.pdf", b"%PDF-1.4 not really a pdf")
    later, _ = documents.add_document(s, "b.txt", (LEASE + "\nThe end.").encode())
    assert failed.status == "failed"
    assert [d.id for d in documents.all_documents(s)] == [later.id, ready.id, failed.id]

    (queued,) = readings.ask(s, ready.id, ["Rent?"], enqueue=False)
    with pytest.raises(DeletionError, match=rf"being read \(reading #{queued.id}\): cancel it first"):
        delete_document(s, ready.id)
    readings.cancel(s, queued.id)
    assert delete_document(s, ready.id).readings == 1

    dismissed = delete_document(s, failed.id)  # a failed upload is dismissed the same way
    assert dismissed.status == "failed" and dismissed.file_removed
    assert [d.id for d in documents.all_documents(s)] == [later.id]


def test_the_api_and_the_cli_delete(db_settings, capsys, monkeypatch):
    s = db_settings
    one, _ = documents.add_document(s, "one.txt", LEASE.encode())
    two, _ = documents.add_document(s, "two.txt", (LEASE + "\nTwo.").encode())
    with TestClient(create_app(s)) as client:
        r = client.delete(f"/api/documents/{one.id}")
        assert r.status_code == 200, r.text
        assert r.json()["document_id"] == one.id and r.json()["file_removed"] is True
        assert client.delete(f"/api/documents/{one.id}").status_code == 404
        assert client.get(f"/api/documents/{one.id}").status_code == 404
        readings.ask(s, two.id, ["Rent?"], enqueue=False)
        assert client.delete(f"/api/documents/{two.id}").status_code == 409

    monkeypatch.setattr(cli, "get_settings", lambda: s)
    assert cli.main(["documents", "--json"]) == 0
    assert [d["id"] for d in json.loads(capsys.readouterr().out)["documents"]] == [two.id]
    with pytest.raises(SystemExit, match="being read"):
        cli.main(["documents", "delete", str(two.id)])
    readings.cancel(s, readings.document_readings(s, two.id)[0].id)
    assert cli.main(["documents", "delete", str(two.id), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["readings"] == 1
    with session_scope(s.resolved_database_url) as ses:
        assert ses.scalar(select(func.count()).select_from(Document)) == 0


def test_a_reviewed_document_takes_its_review_with_it(db_settings, tokenizer):
    s = db_settings
    doc, _ = documents.add_document(s, "lease.txt", LEASE.encode())
    other, _ = documents.add_document(s, "other-lease.txt", (LEASE + " Signed twice.").encode())
    kept = review.review(s, other.id, enqueue=False)
    gone = review.review(s, doc.id, enqueue=False)
    run_readings(
        s,
        [r.reading_id for r in gone.rows],
        FakeEngine(tokenizer, lambda p: "notes" if "<section>" in p else "\\boxed{No}"),
    )
    delete_document(s, doc.id)
    with session_scope(s.resolved_database_url) as ses:
        assert set(ses.scalars(select(Review.id))) == {kept.id}
    with pytest.raises(NotFound):
        review.show_review(s, gone.id)
    assert len(review.show_review(s, kept.id).rows) == 41
