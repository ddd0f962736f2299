"""What the page says when something goes wrong, and what it does not show: a failed parse shows
its error, an upload over the limit names the limit, Gradio's own assets load, its "Runs" call log
and its transient timers ("0.2s") do not appear. The app runs without a worker (no model needed);
its upload limit is 1 MiB (tests/browser/conftest.py)."""

from __future__ import annotations

import pytest

from tests.browser.uihelpers import upload
from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser


# Collects every Gradio progress note (a timer, "processing | 0.1/0.2s") that is visible, however
# briefly, over the info and status lines. ("hidden" progress keeps the note, at opacity 0.)
WATCH_TIMERS = """() => {
    window.__timers = [];
    for (const id of ['doc-info', 'status']) {
        const el = document.getElementById(id);
        new MutationObserver(() => {
            for (const t of el.querySelectorAll('[data-testid=status-tracker]')) {
                const style = getComputedStyle(t), box = t.getBoundingClientRect();
                if (t.innerText.trim() && style.visibility === 'visible' && style.display !== 'none'
                        && Number(style.opacity) > 0 && box.height > 0) {
                    window.__timers.push(id + ': ' + t.innerText.trim());
                }
            }
        }).observe(el, {subtree: true, childList: true, characterData: true, attributes: true});
    }
}"""


def _open(page, url: str) -> list[str]:
    """Load the app, noting every response that is an error."""
    failures: list[str] = []
    page.on("response", lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    return failures


def test_a_file_that_cannot_be_parsed_shows_its_error(ui_page, ui_server, tmp_path) -> None:
    page = ui_page
    _open(page, ui_server.url)
    good = tmp_path / "good.txt"  # chosen first: the failed upload must not just blank the line
    good.write_text("Words that parse well. " * 40, encoding="utf-8")
    upload(page, good, "good.txt")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\nthis is not a PDF body\n%%EOF\n")
    info = upload(page, broken, "could not be read")
    stored = [d for d in page.request.get(ui_server.url + "/api/documents").json() if d["filename"] == "broken.pdf"]
    assert stored and stored[0]["status"] == "failed" and stored[0]["error"], stored
    page.screenshot(path=str(ARTIFACTS / "ui-upload-failed.png"), full_page=True)
    assert "broken.pdf could not be read" in info, info
    assert stored[0]["error"] in info, (stored[0]["error"], info)


def test_an_upload_over_the_limit_names_the_limit(ui_page, ui_server, tmp_path) -> None:
    page = ui_page
    _open(page, ui_server.url)
    big = tmp_path / "big.txt"
    big.write_bytes(b"All work and no play. " * 70_000)  # 1.5 MiB, over the 1 MiB limit
    info = upload(page, big, "limit")
    page.screenshot(path=str(ARTIFACTS / "ui-upload-too-large.png"), full_page=True)
    assert "big.txt" in info and "1.5 MiB" in info and "1 MiB limit" in info, info


def test_gradio_assets_load_and_its_internals_stay_hidden(ui_page, ui_server, tmp_path) -> None:
    page = ui_page
    failures = _open(page, ui_server.url)
    page.evaluate(WATCH_TIMERS)
    doc = tmp_path / "short.txt"
    doc.write_text("A short text about nothing at all. " * 40, encoding="utf-8")
    upload(page, doc, "tokens")
    page.locator("#question textarea").fill("What is it about?")
    page.locator("#ask").click()  # no worker: the reading stays queued and the timer keeps ticking
    page.locator("#status").get_by_text("Queued").wait_for(timeout=30_000)
    page.wait_for_timeout(3_500)
    page.screenshot(path=str(ARTIFACTS / "ui-queued.png"), full_page=True)
    footer = page.locator("footer").inner_text() if page.locator("footer").count() else ""
    timers = page.evaluate("() => window.__timers")
    problems = {
        "error responses (Gradio's JS and fonts, our CSS)": failures,
        "Gradio's call log or API links in the footer": [w for w in ("Runs", "API") if w in footer],
        "Gradio timers in the info or status line": timers,
        "JavaScript errors": page.page_errors,
    }
    assert not any(problems.values()), problems
