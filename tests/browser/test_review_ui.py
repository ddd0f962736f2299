"""Contract review in the browser: a real 2-page CUAD contract PDF reviewed by the real app (its worker and the
bundled model, in-process), the checklist filled, a row followed to its passage beside its page image, and the
table downloaded as CSV."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from inference.contract_review import REVIEW_QUESTIONS
from tests.browser.conftest import LiveServer, _page, _serve
from tests.browser.uihelpers import BROKEN_WORDS, watch
from tests.conftest import ARTIFACTS
from training.tasks import DATA_DIR

pytestmark = pytest.mark.browser

CONTRACT = DATA_DIR / "contracts" / "pdf" / "cuad-003.pdf"  # a mutual termination agreement, 2 pages


@pytest.fixture(scope="module")
def review_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The app with its worker on the in-process engine (no vLLM start) and chunks that read the contract in 2
    steps: 41 questions in a couple of minutes on a CPU."""
    env = {
        "LONGREAD_ENGINE": "transformers",
        "LONGREAD_CHUNK_TOKENS": "384",
        "LONGREAD_MEMORY_TOKENS": "32",
        "LONGREAD_ANSWER_TOKENS": "16",
    }
    yield from _serve(tmp_path_factory, env=env)


@pytest.fixture
def review_page(chromium, review_server):
    yield from _page(chromium)


def test_review_a_contract_open_a_rows_passage_and_download_csv(review_page, review_server) -> None:
    page, url = review_page, review_server.url
    dialogs, stray = watch(page, url)
    doc = page.request.post(
        url + "/api/documents",
        multipart={"file": {"name": "termination.pdf", "mimeType": "application/pdf", "buffer": CONTRACT.read_bytes()}},
    ).json()
    assert doc["format"] == "pdf" and doc["pages"] == 2

    page.goto(url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#document input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{doc["id"]} "]').click()
    page.locator("#doc-info").get_by_text("termination.pdf").wait_for(timeout=60_000)  # chosen: Ask has its document
    # A question of the person's own first: the review's 41 readings must not bury it (issue 54).
    page.locator("#question textarea").fill("Who are the parties to this agreement?")
    page.locator("#ask").click()
    history = page.locator("#readings")
    history.locator("[role=gridcell]").filter(has_text="Who are the parties").first.wait_for(timeout=30_000)
    page.locator("#review-start").click()
    status = page.locator("#review-status")
    status.get_by_text("reading all 41 questions in one pass:").wait_for(timeout=30_000)
    running = status.inner_text()
    assert re.search(r"in one pass: (queued|chunk [12] of 2|every chunk read)", running), running
    assert "The downloads come when it is done" in running, running
    expect(page.locator("#review-csv")).to_be_hidden()  # a half-answered checklist is not offered
    lines = history.locator("[role=row]").filter(has=page.locator("[role=gridcell]"))
    expect(lines).to_have_count(2, timeout=30_000)  # the person's reading and the review's one line
    expect(lines.filter(has_text="review #")).to_have_count(1)
    status.get_by_text("41 of 41 answered").wait_for(timeout=600_000)
    expect(page.locator("#review-csv")).to_be_visible()
    expect(lines.filter(has_text="41 of 41 answered")).to_have_count(1, timeout=30_000)
    history.screenshot(path=str(ARTIFACTS / "ui-review-history.png"))
    table = page.locator("#review-table")
    for category, _, _ in REVIEW_QUESTIONS[:3]:
        assert table.locator("[role=gridcell]").filter(has_text=category).count() >= 1

    # Only the rows whose evidence was found, then the first one's passage on its page.
    page.locator("#review-filter input").click()
    page.locator('ul[role=listbox] [role=option][aria-label="Found"]').click()
    opens = table.locator("[role=gridcell]").filter(has_text="open ›")
    link = opens.first
    link.wait_for(timeout=30_000)
    # Gradio draws the body rows as [role=row] divs (its tbody holds one hidden sizing row); the first link may
    # be drawn before the filter is, so wait until no row lacks one
    rows = table.locator("[role=row]").filter(has=page.locator("[role=gridcell]"))
    expect(rows.filter(has_not_text="open ›")).to_have_count(0, timeout=30_000)
    assert opens.count() == rows.count()
    link.click()
    page.locator("#review-note").get_by_text("of the PDF (beside it, highlighted)").wait_for(timeout=30_000)
    highlighted = " ".join(page.locator("#review-passage .token.highlighted").all_inner_texts())  # one span a line
    assert len(highlighted.split()) >= 2  # a passage of the contract, not an empty highlight
    words = page.locator("#review-passage .textfield").element_handle()
    assert page.evaluate(BROKEN_WORDS, words) == []  # lines break between words
    img = page.locator("#review-page img")
    img.wait_for(timeout=30_000)
    src = img.get_attribute("src")  # the page with the passage's characters highlighted on it
    assert src.split("?")[0] in (f"/api/documents/{doc['id']}/pages/{n}.png" for n in (1, 2)) and "start=" in src
    page.wait_for_function(
        "() => { const i = document.querySelector('#review-page img'); return i && i.complete && i.naturalWidth > 0; }",
        timeout=30_000,
    )
    page.locator("#review-box").screenshot(path=str(ARTIFACTS / "ui-review.png"))

    # The whole table as CSV.
    page.locator("#review-filter input").click()
    page.locator('ul[role=listbox] [role=option][aria-label="All"]').click()
    # shown again: the chosen passage is cleared with the table, and the downloads now hold every row
    note = page.locator("#review-note").get_by_text("of the PDF (beside it, highlighted)")
    note.wait_for(state="detached", timeout=30_000)
    with page.expect_download(timeout=30_000) as download:
        page.locator("#review-csv").click()
    rows = list(csv.reader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
    assert rows[0][:4] == ["Category", "Kind", "Answer", "Pages"] and len(rows) == 42
    assert [r[0] for r in rows[1:]] == [c for c, _, _ in REVIEW_QUESTIONS]

    # The review's line in the document's readings opens its checklist (here, after the panel was folded).
    page.locator("#review-box").get_by_text("Contract review: every CUAD clause in one pass").first.click()
    expect(table).to_be_hidden(timeout=30_000)
    lines.filter(has_text="review #").locator("[role=gridcell]").first.click()
    expect(table).to_be_visible(timeout=30_000)
    expect(status).to_contain_text("41 of 41 answered")
    assert not dialogs and not stray and not page.page_errors, (dialogs, stray, page.page_errors)
