"""What the browser tests do on the page again and again."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit


def watch(page, app_url: str) -> tuple[list[str], list[str]]:
    """Record every dialog (and dismiss it) and every request that leaves the app or names a
    payload."""
    dialogs: list[str] = []
    stray: list[str] = []
    app = urlsplit(app_url).netloc

    def on_dialog(d) -> None:
        dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    def on_request(r) -> None:
        url = r.url
        if url.startswith(("data:", "blob:")):
            return
        if urlsplit(url).netloc != app or "pwn" in url or ":9/" in url:
            stray.append(url)

    page.on("dialog", on_dialog)
    page.on("request", on_request)
    return dialogs, stray


def info_line(page, expect: str, timeout_s: float = 30) -> str:
    """The info line once it shows `expect`, or whatever it shows after `timeout_s` (the
    assertions at the end say what was wrong)."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = page.locator("#doc-info").inner_text()
        if expect in text or time.monotonic() > deadline:
            return text
        page.wait_for_timeout(200)


def upload(page, path: Path, expect: str) -> str:
    """Upload through the real file input (clearing the previous file first)."""
    clear = page.locator("#upload button[aria-label=Clear]")
    if clear.count():
        clear.click()
    page.locator("#upload input[type=file]").set_input_files(str(path))
    return info_line(page, expect, 60)


#: words of the passage view that the browser broke across two lines (a line may end after a hyphen)
BROKEN_WORDS = """el => {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT); const broken = []; let node;
    while ((node = walk.nextNode())) {
        const re = /[^\\s-]+-?/g; let m;
        while ((m = re.exec(node.textContent))) {
            const range = document.createRange();
            range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
            const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
            if (lines.size > 1) broken.push(m[0]);
        }
    }
    return broken;
}"""
