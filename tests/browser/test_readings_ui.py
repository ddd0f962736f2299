"""Readings a person can find again: a document's readings (made in the page or through the API)
are listed with question, status, answer and time; any one opens (its memory, answer or error as
text, whatever the model or the document put in them); after a reload the open document and
reading come back; uploading the same file again offers the existing document. No model needed:
the app runs without a worker and finished readings are written to its database directly."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from app.db import session_scope
from app.models import Checkpoint, Document, Reading, ReadingStatus
from app.settings import Settings
from tests.browser.uihelpers import upload, watch
from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

IMG = "<img src=http://127.0.0.1:9/r.png onerror=alert(8)>"
MD_IMG = "![pwn](http://127.0.0.1:9/m.png)"
TEXT = "\n\n".join(f"Chapter {i}\n\n" + f"The keeper of lighthouse {i} writes in the log. " * 12 for i in range(1, 4))


def _seed(server, document_id: int) -> tuple[int, int]:
    """A finished and a failed reading whose question, memory, answer, error and the document's
    page labels carry payloads, as a hostile document or a confused model could make them."""
    url = Settings(data_dir=server.data_dir).resolved_database_url
    with session_scope(url) as s:
        doc = s.get(Document, document_id)
        doc.page_labels = [f"Label {IMG}", f"Label {MD_IMG}", "Three"][: len(doc.page_starts)]
        common = dict(
            document_id=document_id,
            model="smollm2",
            chunk_tokens=128,
            memory_tokens=48,
            answer_tokens=32,
            template_set="memagent",
        )
        now = datetime.now(timezone.utc)
        done = Reading(
            question=f"Done question {MD_IMG}?",
            status=ReadingStatus.done,
            cursor=1,
            started_at=now - timedelta(seconds=5),
            finished_at=now,
            total_chunks=1,
            answer=f"Answer {IMG} **bold**",
            **common,
        )
        failed = Reading(
            question=f"Failed question {IMG}?",
            status=ReadingStatus.failed,
            cursor=0,
            total_chunks=1,
            error=f"engine said {IMG} {MD_IMG}",
            **common,
        )
        s.add_all([done, failed])
        s.flush()
        s.add(
            Checkpoint(
                reading_id=done.id,
                step=1,
                memory=f"Memory {IMG}\n{MD_IMG}",
                start_token=0,
                end_token=100,
                start_char=0,
                end_char=len(TEXT),
                first_page=1,
                last_page=min(2, len(doc.page_starts)),
                prompt_tokens=100,
                completion_tokens=20,
                seconds=1.0,
            )
        )
        return done.id, failed.id


def _status(page) -> str:
    return page.locator("#status").inner_text()


def _open_row(page, text: str) -> None:
    page.locator("#readings [role=gridcell]").filter(has_text=text).first.click()


def test_readings_are_listed_opened_and_found_again(ui_page, ui_server, tmp_path) -> None:
    page = ui_page
    dialogs, stray = watch(page, ui_server.url)
    path = tmp_path / "keepers.txt"
    path.write_text(TEXT, encoding="utf-8")
    doc = page.request.post(
        ui_server.url + "/api/documents",
        multipart={"file": {"name": "keepers.txt", "mimeType": "text/plain", "buffer": path.read_bytes()}},
    ).json()
    api_reading = page.request.post(
        f"{ui_server.url}/api/documents/{doc['id']}/readings", data={"question": "Asked through the API?"}
    ).json()
    done_id, failed_id = _seed(ui_server, doc["id"])

    page.goto(ui_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#document input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{doc["id"]} "]').click()
    table = page.locator("#readings")
    table.get_by_text("Asked through the API?").wait_for(timeout=30_000)
    listed = table.inner_text()
    for expected in (
        "Asked through the API?",
        f"Done question {MD_IMG}?",
        f"Failed question {IMG}?",
        f"Answer {IMG} **bold**",
        "queued",
        "done",
        "failed",
    ):
        assert expected in listed, (expected, listed)

    # A finished reading opens with its question, memory (labelled with its sections) and answer.
    _open_row(page, "Done question")
    page.locator("#status").get_by_text("Done").wait_for(timeout=30_000)
    assert page.locator("#question textarea").input_value() == f"Done question {MD_IMG}?"
    assert page.locator("#memory textarea").input_value() == f"Memory {IMG}\n{MD_IMG}"
    assert page.locator("#answer textarea").input_value() == f"Answer {IMG} **bold**"
    label = page.locator("#memory label").inner_text()
    assert f"Label {IMG}" in label, label
    page.screenshot(path=str(ARTIFACTS / "ui-readings-open.png"), full_page=True)

    # A failed one shows its error as text.
    _open_row(page, "Failed question")
    page.locator("#status").get_by_text("Failed").wait_for(timeout=30_000)
    assert f"engine said {IMG} {MD_IMG}" in _status(page), _status(page)

    # A question asked here is listed too, and stays open after a reload (no worker: it waits).
    page.locator("#question textarea").fill("Which keeper writes the log?")
    page.locator("#ask").click()
    page.locator("#status").get_by_text("Queued").wait_for(timeout=30_000)
    table.get_by_text("Which keeper writes the log?").wait_for(timeout=30_000)
    page.reload()
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#status").get_by_text("Queued").wait_for(timeout=30_000)
    assert page.locator("#question textarea").input_value() == "Which keeper writes the log?"
    assert f"#{doc['id']} " in page.locator("#document input").input_value()
    table.get_by_text("Which keeper writes the log?").wait_for(timeout=30_000)
    assert "keepers.txt" in page.locator("#doc-info").inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-readings-after-reload.png"), full_page=True)

    # The same file uploaded again (while another document is open) is the same document, with
    # its readings.
    other = tmp_path / "other.txt"
    other.write_text("Another text entirely, about gardens. " * 20, encoding="utf-8")
    upload(page, other, "other.txt")
    assert "Which keeper writes the log?" not in table.inner_text()
    before = page.request.get(ui_server.url + "/api/documents").json()
    info = upload(page, path, "Already uploaded")
    page.screenshot(path=str(ARTIFACTS / "ui-upload-again.png"), full_page=True)
    after = page.request.get(ui_server.url + "/api/documents").json()
    assert f"Already uploaded as #{doc['id']}" in info, info
    assert [d["id"] for d in after] == [d["id"] for d in before]
    assert f"#{doc['id']} " in page.locator("#document input").input_value()
    table.get_by_text("Asked through the API?").wait_for(timeout=30_000)
    assert api_reading["status"] == "queued"

    page.wait_for_timeout(1000)
    assert not dialogs, dialogs
    assert not stray, stray
    assert not page.locator("#readings img, #readings a, #status img, #status a, #memory img").count()
    assert not page.page_errors, page.page_errors
