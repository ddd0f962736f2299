"""Provenance on a PDF: following a sentence of the memory to its passage shows, beside the passage, the
page of the PDF it is printed on, as an image the API renders (GET /api/documents/{id}/pages/{n}.png)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.db import session_scope
from app.models import Checkpoint, Document, Reading, ReadingStatus
from app.services.provenance import sentences
from app.settings import Settings
from tests.browser.uihelpers import watch
from tests.conftest import ARTIFACTS
from training.tasks import DATA_DIR

pytestmark = pytest.mark.browser

CONTRACT = DATA_DIR / "contracts" / "pdf" / "cuad-000.pdf"  # the shared data, wherever the clone is


def _seed(url: str, document_id: int) -> tuple[int, str]:
    """A done reading of the contract's first two pages, a step each; the final memory is one sentence
    of page 2, word for word."""
    with session_scope(url) as s:
        doc = s.get(Document, document_id)
        text, starts = doc.text, doc.page_starts
        p2 = text[starts[1] : starts[2]]
        fact = next(p2[a:b] for a, b in sentences(p2) if len(p2[a:b].split()) >= 8)
        fact = " ".join(fact.split())
        now = datetime.now(UTC)
        r = Reading(document_id=document_id, model="smollm2", chunk_tokens=512, memory_tokens=128, answer_tokens=32,
                    template_set="memagent", question="What does page two say?", status=ReadingStatus.done,
                    cursor=2, total_chunks=2, started_at=now - timedelta(seconds=5), finished_at=now,
                    answer="It says what the memory says.")  # fmt: skip
        s.add(r)
        s.flush()
        for k, (memory, start, end) in enumerate([("Nothing yet.", 0, starts[1]), (fact, starts[1], starts[2])], 1):
            s.add(Checkpoint(reading_id=r.id, step=k, memory=memory, start_token=0, end_token=1, start_char=start,
                             end_char=end, first_page=k, last_page=k, prompt_tokens=100, completion_tokens=10,
                             seconds=1.0))  # fmt: skip
        return r.id, fact


def test_a_pdf_passage_is_shown_beside_its_page_image(ui_page, ui_server) -> None:
    page = ui_page
    dialogs, stray = watch(page, ui_server.url)
    doc = page.request.post(ui_server.url + "/api/documents", multipart={"file": {
        "name": "contract.pdf", "mimeType": "application/pdf", "buffer": CONTRACT.read_bytes()}}).json()  # fmt: skip
    assert doc["format"] == "pdf"
    _, fact = _seed(Settings(data_dir=ui_server.data_dir).resolved_database_url, doc["id"])

    page.goto(ui_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#document input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{doc["id"]} "]').click()
    page.locator("#readings [role=gridcell]").filter(has_text="What does page two say?").first.click()
    page.locator("#status").get_by_text("Done").wait_for(timeout=30_000)
    page.locator("#provenance").get_by_text("Where it came from").first.click()
    sources = page.locator("#sources")
    cell = sources.locator("[role=gridcell]").filter(has_text=fact[:40]).first
    cell.wait_for(timeout=30_000)
    assert not page.locator("#source-page img").count()  # no page until a sentence is chosen
    cell.click()
    page.locator("#source-note").get_by_text("page 2 of the PDF").wait_for(timeout=30_000)
    assert fact.split()[0] in page.locator("#source-passage .token.highlighted").inner_text()
    img = page.locator("#source-page img")
    img.wait_for(timeout=30_000)
    assert img.get_attribute("src") == f"/api/documents/{doc['id']}/pages/2.png"
    page.wait_for_function("() => { const i = document.querySelector('#source-page img');"
                           " return i && i.complete && i.naturalWidth > 0; }", timeout=30_000)  # fmt: skip
    width, height = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
    assert 800 < width < 1000 and height > width  # a portrait page at 108 dpi
    img.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui-provenance-pdf.png"), full_page=True)
    assert not dialogs and not stray and not page.page_errors, (dialogs, stray, page.page_errors)
