"""Provenance on a PDF: following a sentence of the answer to its passage shows the passage in its place,
wrapped between words, and beside it the page of the PDF it is printed on, as an image the API renders
(GET /api/documents/{id}/pages/{n}.png?start=&end=) with the passage highlighted where PDFium prints it."""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from app.db import session_scope
from app.documents.pages import SCALE
from app.models import Checkpoint, Document, Reading, ReadingStatus
from app.settings import Settings
from inference.sentences import sentences
from tests.browser.uihelpers import BROKEN_WORDS, watch
from tests.conftest import ARTIFACTS
from training.tasks import DATA_DIR

pytestmark = pytest.mark.browser

CONTRACT = DATA_DIR / "contracts" / "pdf" / "cuad-000.pdf"  # the shared data, wherever the clone is
#: where the highlighted page's screenshot goes, besides the test artifacts (outside git)
SHOTS = Path(os.environ.get("LONGREAD_SHOTS", "/tmp/shots"))


def _seed(url: str, document_id: int) -> tuple[int, str, int, int]:
    """A done reading of the contract's first two pages, a step each. The final memory holds one sentence
    of page 2, word for word; the answer is four of its words."""
    with session_scope(url) as s:
        doc = s.get(Document, document_id)
        text, starts = doc.text, doc.page_starts
        p2 = text[starts[1] : starts[2]]
        a, b = next((starts[1] + a, starts[1] + b) for a, b in sentences(p2) if len(p2[a:b].split()) >= 25)
        fact = " ".join(text[a:b].split())
        now = datetime.now(UTC)
        r = Reading(
            document_id=document_id,
            model="smollm2",
            chunk_tokens=512,
            memory_tokens=128,
            answer_tokens=32,
            template_set="memagent",
            question="What do Gross Sales exclude?",
            status=ReadingStatus.done,
            cursor=2,
            total_chunks=2,
            started_at=now - timedelta(seconds=5),
            finished_at=now,
            answer="Revenue from sales taxes.",
        )
        s.add(r)
        s.flush()
        memories = [
            ("Licensed Products are defined.", 0, starts[1]),
            ("Licensed Products are defined. " + fact, starts[1], starts[2]),
        ]
        for k, (memory, start, end) in enumerate(memories, 1):
            s.add(
                Checkpoint(
                    reading_id=r.id,
                    step=k,
                    memory=memory,
                    start_token=0,
                    end_token=1,
                    start_char=start,
                    end_char=end,
                    first_page=k,
                    last_page=k,
                    prompt_tokens=100,
                    completion_tokens=10,
                    seconds=1.0,
                )
            )
        return r.id, fact, a, b


def _pixel_rects(fact: str) -> list[tuple[int, int, int, int]]:
    """PDFium's own rectangles (as pixels of the served image) for the first words of page 2's passage."""
    pdf = pdfium.PdfDocument(io.BytesIO(CONTRACT.read_bytes()))
    page = pdf[1]
    textpage, height = page.get_textpage(), page.get_height()
    index, count = textpage.search(" ".join(fact.split()[1:6])).get_next()
    rects = [textpage.get_rect(i) for i in range(textpage.count_rects(index, count))]
    return [
        (
            round(x0 * SCALE) + 1,
            round((height - y1) * SCALE) + 1,
            round(x1 * SCALE) - 1,
            round((height - y0) * SCALE) - 1,
        )
        for x0, y0, x1, y1 in rects
    ]


#: the share of a box's pixels in the image that are the highlight's yellow (over paper, not ink)
YELLOW_SHARE = """(img, box) => {
    const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
    const g = c.getContext('2d'); g.drawImage(img, 0, 0);
    const [l, t, r, b] = box; const d = g.getImageData(l, t, r - l, b - t).data; let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] > 150 && d[i + 1] > 110 && d[i] - d[i + 2] > 70) n++;
    return n / (d.length / 4);
}"""


def test_an_answer_opens_its_passage_highlighted_on_the_pdf_page(ui_page, ui_server) -> None:
    page = ui_page
    dialogs, stray = watch(page, ui_server.url)
    doc = page.request.post(
        ui_server.url + "/api/documents",
        multipart={"file": {"name": "contract.pdf", "mimeType": "application/pdf", "buffer": CONTRACT.read_bytes()}},
    ).json()
    assert doc["format"] == "pdf"
    _, fact, start, end = _seed(Settings(data_dir=ui_server.data_dir).resolved_database_url, doc["id"])

    page.goto(ui_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#document input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{doc["id"]} "]').click()
    page.locator("#readings [role=gridcell]").filter(has_text="What do Gross Sales exclude?").first.click()
    page.locator("#status").get_by_text("Done").wait_for(timeout=30_000)
    page.locator("#provenance").get_by_text("Where it came from").first.click()
    cell = page.locator("#sources [role=gridcell]").filter(has_text="Revenue from sales taxes.").first
    cell.wait_for(timeout=30_000)
    assert not page.locator("#source-page img").count()  # no page until a sentence is chosen
    cell.click()
    note = page.locator("#source-note")
    note.get_by_text("page 2 of the PDF").wait_for(timeout=30_000)
    assert "Answered from the memory's sentence" in note.inner_text() and "step 2" in note.inner_text()
    passage = page.locator("#source-passage .token.highlighted")  # a token a line
    assert " ".join(" ".join(passage.all_inner_texts()).split()) == fact  # page 2's sentence the memory took
    words = page.locator("#source-passage .textfield").element_handle()
    assert page.evaluate(BROKEN_WORDS, words) == []  # lines break between words

    img = page.locator("#source-page img")
    img.wait_for(timeout=30_000)
    assert img.get_attribute("src") == f"/api/documents/{doc['id']}/pages/2.png?start={start}&end={end}"
    page.wait_for_function(
        "() => { const i = document.querySelector('#source-page img'); return i && i.complete && i.naturalWidth > 0; }",
        timeout=30_000,
    )
    width, height = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
    assert 800 < width < 1000 and height > width  # a portrait page at 108 dpi
    boxes = _pixel_rects(fact)
    assert boxes
    for box in boxes:  # yellow where PDFium says the passage is printed
        assert img.evaluate(YELLOW_SHARE, box) > 0.6, box
    left, top, right, bottom = boxes[-1]
    below = (left, bottom + 150, right, bottom + 160)  # further down the page: not highlighted
    assert img.evaluate(YELLOW_SHARE, below) < 0.01

    img.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui-provenance-pdf.png"), full_page=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#provenance").screenshot(path=str(SHOTS / "provenance-highlighted-page.png"))
    assert not dialogs and not stray and not page.page_errors, (dialogs, stray, page.page_errors)
