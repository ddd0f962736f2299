"""The whole UI in a real browser: upload a TXT, ask, watch the agent read chunk by chunk, get an
answer. Runs the real app and the real (tiny) model, so it asserts on what the page shows while
reading, not on whether SmolLM2-135M answers correctly; except for the default reader, which keeps the
planted sentence verbatim and is asked to answer from it.

    apt-get update && apt-get install -y chromium
    .venv/bin/python -m pytest tests/browser -v
"""

from __future__ import annotations

import re
import time

import pytest

from app.settings import Settings
from inference.models import EXTRACTIVE_READER, READER
from tests.conftest import ARTIFACTS
from tests.fakes import activate_version_named

pytestmark = pytest.mark.browser

QUESTION = "What is the vault code?"
PLANTED = "The vault code is 4417."
# About 420 SmolLM2 tokens: four chunks of 128 tokens, with the fact in the third paragraph.
DOCUMENT = "\n\n".join(
    [
        "Harbor Street Branch: Operations Notes\n\n"
        "The Harbor Street branch of the Northern Savings Bank opened in the spring of 1987. It sits "
        "on the corner of Harbor Street and Mill Lane, across from the old ferry terminal. The branch "
        "employs eleven people, including two tellers who have worked there for more than twenty "
        "years. Customers are mostly local shop owners, fishermen and retired teachers.",
        "Opening hours are from nine in the morning until five in the afternoon on weekdays, and "
        "from nine until noon on Saturdays. The branch is closed on Sundays and public holidays. "
        "During the annual harbor festival in August the branch closes at three, because the street "
        "is blocked for the parade and the boat race.",
        "The vault is in the basement, behind a steel door installed in 1994. Only the branch "
        f"manager and the deputy manager may open it, and never alone. {PLANTED} The code is changed "
        "every January, and the old code is destroyed in front of two witnesses. Deliveries of cash "
        "arrive on Tuesdays and Fridays in an armored van.",
        "The staff kitchen on the first floor has a kettle, a small refrigerator and a coffee machine "
        "that breaks down about once a month. Staff meetings are held there every Monday at a quarter "
        "past eight. Minutes are kept by whoever arrives last, a rule that has improved punctuality "
        "more than any memo ever did.",
        "In 2019 the branch was renovated. The counters were lowered for wheelchair users, the lights "
        "were replaced with LED panels, and a second cash machine was installed outside. The old "
        "wooden sign above the door was kept, repainted in dark green, because customers asked for "
        "it. A small plaque next to the entrance remembers the first manager, Edith Carrow.",
        "Complaints are rare. The most common one concerns the parking spaces on Mill Lane, which "
        "are shared with the bakery next door and are usually full on Saturday mornings, when the "
        "bakery sells its famous cinnamon rolls.",
    ]
)

READ_TIMEOUT_S = 420  # the worker first starts its vLLM server (30-65 s on 2 idle cores)
POLL_S = 0.25
CHUNK_RE = re.compile(r"Reading chunk (\d+) of (\d+)")


def _text(page, selector: str) -> str:
    loc = page.locator(selector)
    return loc.inner_text().strip() if loc.count() else ""


def _value(page, selector: str) -> str:
    loc = page.locator(selector)
    return loc.input_value() if loc.count() else ""


def _bar_pct(page) -> int | None:
    bar = page.locator("#progress [role=progressbar]")
    return int(bar.get_attribute("aria-valuenow")) if bar.count() else None


@pytest.fixture
def rewriting_reader(live_server):
    """The reader that writes its memory at every chunk (seconds a chunk), so that a person can watch it read; the
    default one keeps sentences and read this document's 4 chunks in 3 s, before the page showed one."""
    settings = Settings(data_dir=live_server.data_dir)
    activate_version_named(settings, READER)
    yield
    activate_version_named(settings, EXTRACTIVE_READER)


def test_the_default_reader_keeps_the_sentence_that_answers_and_answers_from_it(page, live_server, tmp_path) -> None:
    """The reader a fresh install reads with keeps the document's sentences verbatim: the planted one is in the
    memory the page shows, and the answer, from the real model, names the code."""
    doc_path = tmp_path / "harbor-vault.txt"
    doc_path.write_text(DOCUMENT + "\n\nThe branch keeps a cat called Ledger.", encoding="utf-8")  # its own bytes
    page.goto(live_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#upload input[type=file]").set_input_files(str(doc_path))
    page.locator("#doc-info").get_by_text("tokens").wait_for(timeout=60_000)
    page.wait_for_function(
        "() => (document.querySelector('#document input')?.value || '').includes('harbor-vault')", timeout=30_000
    )
    page.locator("#question textarea").fill(QUESTION)
    page.locator("#ask").click()
    page.wait_for_function(
        "() => (document.querySelector('#status')?.innerText || '').trim().startsWith('Done')",
        timeout=READ_TIMEOUT_S * 1000,
    )
    assert PLANTED in _value(page, "#memory textarea").splitlines()
    page.wait_for_function(
        "() => (document.querySelector('#answer textarea')?.value || '').includes('4417')", timeout=30_000
    )
    assert not page.page_errors, page.page_errors


def test_upload_ask_and_watch_the_agent_read(page, live_server, rewriting_reader, tmp_path) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    doc_path = tmp_path / "harbor-branch.txt"
    doc_path.write_text(DOCUMENT, encoding="utf-8")

    page.goto(live_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    assert page.title() == "Longread"

    # Upload through the real file input; the info line appears once the server has parsed it.
    page.locator("#upload input[type=file]").set_input_files(str(doc_path))
    doc_info = page.locator("#doc-info")
    doc_info.get_by_text("tokens").wait_for(timeout=60_000)
    info = doc_info.inner_text()
    assert "harbor-branch" in info and "TXT" in info, info
    tokens = int(re.search(r"([\d,]+) tokens", info).group(1).replace(",", ""))
    assert 300 <= tokens <= 700, info
    # ...and the new document is chosen in the dropdown.
    page.wait_for_function(
        "() => (document.querySelector('#document input')?.value || '').includes('harbor-branch')",
        timeout=30_000,
    )

    page.locator("#question textarea").fill(QUESTION)
    page.locator("#ask").click()

    # Poll what the page shows until the status says Done; keep the history for the assertions.
    statuses: list[str] = []
    memories: list[str] = []
    bar_values: list[int] = []
    reading_shot = False
    deadline = time.monotonic() + READ_TIMEOUT_S
    status = ""
    while time.monotonic() < deadline:
        status = _text(page, "#status")
        memory = _value(page, "#memory textarea")
        pct = _bar_pct(page)
        if status and (not statuses or statuses[-1] != status):
            statuses.append(status)
        if memory and (not memories or memories[-1] != memory):
            memories.append(memory)
        if pct is not None and (not bar_values or bar_values[-1] != pct):
            bar_values.append(pct)
        if not reading_shot and CHUNK_RE.search(status) and memory.strip():
            page.screenshot(path=str(ARTIFACTS / "ui-reading.png"), full_page=True)
            reading_shot = True
        if status.startswith(("Done", "Failed")):
            break
        time.sleep(POLL_S)
    history = f"statuses seen: {statuses}\nbar: {bar_values}\nserver log:\n{live_server.log_tail(30)}"

    assert status.startswith("Done"), f"no 'Done' within {READ_TIMEOUT_S} s\n{history}"
    # ...read by the default engine: the worker started its local vLLM server when it became ready.
    assert "vLLM ready at http://127.0.0.1:" in live_server.log.read_text(errors="replace"), history
    # Progress while reading: "Reading chunk k of K · read … · ETA …", with one K throughout.
    reading = [CHUNK_RE.search(s) for s in statuses]
    reading = [m for m in reading if m]
    assert reading, f"never saw 'Reading chunk k of K'\n{history}"
    totals = {int(m.group(2)) for m in reading}
    assert len(totals) == 1, history
    (total,) = totals
    assert total >= 3, history  # ~450 tokens in 128-token chunks
    assert all(1 <= int(m.group(1)) <= total for m in reading), history
    assert any(" · read " in s and "ETA" in s for s in statuses if CHUNK_RE.search(s)), history
    assert reading_shot, f"never saw progress text and agent memory together\n{history}"
    # The status at the end names the same number of chunks.
    assert re.match(rf"Done: read {total} chunks in ", status), status
    # The progress bar moved forward and ends full.
    assert bar_values and bar_values[-1] == 100, bar_values
    assert bar_values == sorted(bar_values), bar_values
    assert any(0 < v < 100 for v in bar_values), bar_values

    # The agent's memory was shown while it read, and stays visible, labelled with the last chunk.
    assert memories, history
    assert _value(page, "#memory textarea").strip()
    label = _text(page, "#memory label")
    assert f"Agent memory after chunk {total} (section 1)" in label, label  # a TXT without headings is one section

    # Layout: the bar lines up with the status text above it and spans the column.
    status_box = page.locator("#status").bounding_box()
    bar_box = page.locator("#progress [role=progressbar]").bounding_box()
    assert abs(bar_box["x"] - status_box["x"]) <= 2, (status_box, bar_box)
    assert bar_box["width"] >= 0.9 * status_box["width"] and bar_box["height"] >= 6, bar_box

    # An answer, whatever a 135M model makes of the question.
    page.wait_for_function(
        "() => (document.querySelector('#answer textarea')?.value || '').trim().length > 0",
        timeout=30_000,
    )
    answer = _value(page, "#answer textarea")
    assert answer.strip()
    page.screenshot(path=str(ARTIFACTS / "ui-answer.png"), full_page=True)

    assert not page.page_errors, page.page_errors
    print(f"\n{len(statuses)} status lines, {len(memories)} memories, {total} chunks; answer: {answer!r}")
