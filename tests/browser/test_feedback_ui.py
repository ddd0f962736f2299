"""An opened reading can be judged (correct / incorrect, the right answer, a comment), its verdicts
are listed as text whatever they contain, and a reading can be cancelled and resumed from its page.
No model needed: the app runs without a worker and the finished reading is written to its database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.db import session_scope
from app.models import Checkpoint, Reading, ReadingStatus
from app.settings import Settings
from tests.browser.uihelpers import watch
from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

IMG = "<img src=http://127.0.0.1:9/f.png onerror=alert(9)>"
MD_IMG = "![pwn](http://127.0.0.1:9/fm.png)"
TEXT = "The tenant pays nine crowns on the first day of every month. " * 30


def _done_reading(server, document_id: int) -> int:
    url = Settings(data_dir=server.data_dir).resolved_database_url
    with session_scope(url) as s:
        now = datetime.now(UTC)
        r = Reading(
            document_id=document_id,
            model="smollm2",
            chunk_tokens=128,
            memory_tokens=48,
            answer_tokens=32,
            template_set="memagent",
            question="How much is the rent?",
            status=ReadingStatus.done,
            cursor=1,
            total_chunks=1,
            started_at=now - timedelta(seconds=4),
            finished_at=now,
            answer="eight crowns",
        )
        s.add(r)
        s.flush()
        s.add(
            Checkpoint(
                reading_id=r.id,
                step=1,
                memory="rent: eight crowns",
                start_token=0,
                end_token=100,
                start_char=0,
                end_char=100,
                first_page=1,
                last_page=1,
                prompt_tokens=100,
                completion_tokens=10,
                seconds=1.0,
            )
        )
        return r.id


def _feedback(page) -> str:
    return page.locator("#feedback-list").inner_text()


def test_feedback_on_an_answer_and_cancel_and_resume(ui_page, ui_server) -> None:
    page = ui_page
    dialogs, stray = watch(page, ui_server.url)
    doc = page.request.post(
        ui_server.url + "/api/documents",
        multipart={"file": {"name": "lease.txt", "mimeType": "text/plain", "buffer": TEXT.encode()}},
    ).json()
    reading_id = _done_reading(ui_server, doc["id"])

    page.goto(ui_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#document input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{doc["id"]} "]').click()
    page.locator("#readings [role=gridcell]").filter(has_text="How much is the rent?").first.click()
    page.locator("#status").get_by_text("Done").wait_for(timeout=30_000)
    page.locator("#feedback-list").get_by_text("No feedback on this answer yet.").wait_for(timeout=30_000)

    # No verdict chosen: a clear message, nothing stored.
    page.locator("#save-feedback").click()
    page.locator("#feedback-list").get_by_text("choose correct or incorrect").wait_for(timeout=30_000)

    page.locator("#verdict").get_by_label("incorrect").check()
    page.locator("#corrected-answer textarea").fill(f"nine crowns {IMG}")
    page.locator("#feedback-comment textarea").fill(f"see clause 1 {MD_IMG} **bold**")
    page.locator("#save-feedback").click()
    page.locator("#feedback-list").get_by_text("Saved: incorrect.").wait_for(timeout=30_000)
    shown = _feedback(page)
    assert f"right answer: nine crowns {IMG}" in shown, shown
    assert f"comment: see clause 1 {MD_IMG} **bold**" in shown, shown
    assert page.locator("#corrected-answer textarea").input_value() == ""  # the form is emptied
    page.screenshot(path=str(ARTIFACTS / "ui-feedback.png"), full_page=True)

    stored = page.request.get(f"{ui_server.url}/api/readings/{reading_id}/feedback").json()
    assert [(f["verdict"], f["corrected_answer"], f["comment"]) for f in stored] == [
        ("incorrect", f"nine crowns {IMG}", f"see clause 1 {MD_IMG} **bold**")
    ]
    exported = page.request.get(ui_server.url + "/api/feedback/export").text()
    assert f'"reading_id": {reading_id}' in exported and '"verdict": "incorrect"' in exported

    # A new question (no worker: it waits) can be cancelled and resumed from its page.
    page.locator("#question textarea").fill("When is it due?")
    page.locator("#ask").click()
    page.locator("#status").get_by_text("Queued").wait_for(timeout=30_000)
    page.locator("#feedback-list").get_by_text("No feedback on this answer yet.").wait_for(timeout=30_000)
    page.locator("#retry").click()
    page.locator("#status").get_by_text("Cannot retry").wait_for(timeout=30_000)
    assert "only failed or cancelled readings are retried" in page.locator("#status").inner_text()
    page.wait_for_timeout(2500)  # the queued reading's status is refreshed every second: the refusal stays above it
    assert "Cannot retry" in page.locator("#status").inner_text() and "Queued" in page.locator("#status").inner_text()
    page.locator("#cancel").click()
    page.locator("#status").get_by_text("Cancelled before its first chunk").wait_for(timeout=30_000)
    page.locator("#readings [role=gridcell]").filter(has_text="cancelled").first.wait_for(timeout=30_000)
    page.locator("#retry").click()
    page.locator("#status").get_by_text("Queued").wait_for(timeout=30_000)
    # Several questions at once: one reading each, asked together; the first opens.
    page.locator("#more-box").get_by_text("More questions at once").first.click()
    page.locator("#question textarea").fill("Who is the tenant?")
    page.locator("#more-questions textarea").fill("Who is the landlord?\n\n  \nWhere is the house?")
    page.locator("#pass-estimate").get_by_text("3 questions:").wait_for(timeout=30_000)  # the app has all three
    page.locator("#ask").click()
    # The status says so only until the next tick; the pass view stays.
    page.locator("#pass-view").get_by_text("One pass, 3 questions").wait_for(timeout=30_000)
    for q in ("Who is the tenant?", "Who is the landlord?", "Where is the house?"):
        page.locator("#readings [role=gridcell]").filter(has_text=q).first.wait_for(timeout=30_000)
    listed = page.request.get(f"{ui_server.url}/api/documents/{doc['id']}/readings").json()
    assert [r["question"] for r in listed[:3]] == ["Where is the house?", "Who is the landlord?", "Who is the tenant?"]
    page.locator("#more-questions textarea").fill("")
    page.locator("#readings [role=gridcell]").filter(has_text="When is it due?").first.click()
    page.locator("#status").get_by_text("Queued").wait_for(timeout=30_000)

    # Judging an unanswered reading is refused with the service's message.
    page.locator("#verdict").get_by_label("correct", exact=True).check()
    page.locator("#save-feedback").click()
    page.locator("#feedback-list").get_by_text("only an answered reading can be judged").wait_for(timeout=30_000)

    page.wait_for_timeout(1000)
    assert not dialogs, dialogs
    assert not stray, stray
    assert not page.locator("#feedback-list img, #feedback-list a, #feedback-list strong:has-text('bold')").count()
    assert not page.page_errors, page.page_errors
