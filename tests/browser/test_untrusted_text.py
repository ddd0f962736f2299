"""Whatever a document carries (title, file name, headings, text) is shown as text: no script
runs, no dialog opens and no request leaves the page. Needs no model: the app runs without a
worker (`serve --no-worker`) and only the document's info line and the document list are checked.
"""

from __future__ import annotations

import pytest

from tests.browser.uihelpers import info_line, upload, watch
from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

#: Every payload either points at 127.0.0.1:9 (nothing listens there) or names "pwn", so any
#: request it causes is recognisable; each handler would open a dialog.
PAYLOADS = [
    "<img src=http://127.0.0.1:9/img.png onerror=alert(3)>",
    "<script>alert(1)</script>",
    "<svg onload=alert(4)></svg>",
    "<a href=javascript:alert(5)>pwn-a</a>",
    "![pwn](http://127.0.0.1:9/md.png)",
    "[pwn-link](http://127.0.0.1:9/link)",
    "<iframe src=http://127.0.0.1:9/frame></iframe>",
]
#: A file name cannot hold "/", so these use relative URLs (fetched from the app, named "pwn").
#: Gradio strips < and > from the names of files uploaded through it, so these go in by the API.
NAME_PAYLOADS = ["<img src=pwn1.png onerror=alert(6)>", "![pwn](pwn2.png)", "**bold** _em_ `code`"]


def _html(title: str) -> str:
    # Inside <title> the payload is raw text, as a hostile page would carry it.
    return (
        f"<!doctype html><html><head><title>Report {title}</title></head><body>"
        f"<h1>Intro {title}</h1><p>{'Plain words for the body. ' * 20}</p>"
        f"<h2>Second &lt;img src=http://127.0.0.1:9/h2.png onerror=alert(7)&gt;</h2>"
        f"<p>{'More words here. ' * 20}</p></body></html>"
    )


def _choose(page, document_id: int, title: str) -> tuple[str, str]:
    """Pick a document in the dropdown; return its option's text and then the info line."""
    page.locator("#document input").fill("")  # the typed text filters the options
    option = page.locator(f'ul[role=listbox] [role=option][aria-label^="#{document_id} "]')
    text = option.inner_text()
    option.click()
    return text, info_line(page, title)


def test_document_fields_are_shown_as_text(ui_page, ui_server, tmp_path) -> None:
    page = ui_page
    dialogs, stray = watch(page, ui_server.url)
    # File names carrying payloads, uploaded through the API (a TXT's title is its file name).
    for i, name in enumerate(NAME_PAYLOADS):
        r = page.request.post(
            ui_server.url + "/api/documents",
            multipart={
                "file": {
                    "name": f"{name} {i}.txt",
                    "mimeType": "text/plain",
                    "buffer": b"Nothing but plain words here. " * (30 + i),
                }
            },
        )  # other bytes: another document
        assert r.status == 201, r.text()
    page.goto(ui_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)

    # A title (HTML <title>) made of every payload: shown verbatim, as characters.
    title = " ".join(PAYLOADS)
    html = tmp_path / "report.html"
    html.write_text(_html(title), encoding="utf-8")
    shown = [(f"Report {title}", upload(page, html, f"Report {title}"))]

    # A Markdown file with payloads in its headings (its title comes from a heading).
    md = tmp_path / "notes.md"
    md.write_text(f"# {PAYLOADS[4]} heading\n\nSome words.\n\n## Next {PAYLOADS[0]}\n\n- a list\n", encoding="utf-8")
    upload(page, md, "Markdown")

    # Every document chosen in the list: its option and info line show the title as stored.
    documents = page.request.get(ui_server.url + "/api/documents").json()
    assert {f"{name} {i}.txt" for i, name in enumerate(NAME_PAYLOADS)} <= {d["title"] for d in documents}
    for d in documents:
        option, info = _choose(page, d["id"], d["title"])
        shown += [(d["title"], info), (f"#{d['id']} {d['title']}", option)]

    page.wait_for_timeout(1500)  # let any injected element load or fire
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui-untrusted-text.png"), full_page=True)
    injected = page.evaluate("""() => [...document.querySelectorAll(
        '#doc-info img, #doc-info script, #doc-info svg, #doc-info iframe, #doc-info a, '
        + '#doc-info strong strong, #doc-info em, #doc-info code')].map(e => e.outerHTML)""")
    assert not dialogs, dialogs
    assert not stray, stray
    assert not injected, injected
    assert not page.page_errors, page.page_errors
    # ...and each is shown as the characters it is made of.
    for expected, info in shown:
        assert expected in info, (expected, info)
