"""The timeline of a reading: move through its steps with the slider and the arrow keys, see the chunk
read, the memory written and the word-by-word change; edit a memory and resume from it, getting a
branch with its own answer while the original stays as it was. Every text from the document or the
model is shown as text. The app runs without a worker: the branch is read in this process with a
scripted engine, on the app's own database, while the page watches."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from app.db import session_scope
from app.models import Checkpoint, Reading, ReadingStatus
from app.services.runner import run_readings
from app.settings import Settings
from app.ui.read_views import diff_spans
from tests.browser.uihelpers import BROKEN_WORDS, watch
from tests.conftest import ARTIFACTS
from tests.fakes import FakeEngine

pytestmark = pytest.mark.browser

SCRIPT = "<script>alert('chunk')</script>"
IMG = "<img src=http://127.0.0.1:9/t.png onerror=alert(7)>"
MD_IMG = "![pwn](http://127.0.0.1:9/tm.png)"
MEMORIES = [
    "ship 1 logged",
    f"ship 1 logged, ship 2 {IMG}",
    f"ship 2 {IMG}, ship 3 {MD_IMG}",
    f"ship 3 {MD_IMG}, ship 4 near island 4",
]
TEXT = "\n\n".join(
    f"Part {i}. The keeper logged ship {i} near island {i}. {SCRIPT if i == 2 else ''}" * 6 for i in range(1, 5)
)


def _seed(server, document_id: int, text: str, memories: list[str] = MEMORIES) -> int:
    """A done reading of four steps, payloads in its memories."""
    url = Settings(data_dir=server.data_dir).resolved_database_url
    quarter = len(text) // 4
    spans = [(i * quarter, (i + 1) * quarter if i < 3 else len(text)) for i in range(4)]
    with session_scope(url) as s:
        now = datetime.now(UTC)
        r = Reading(
            document_id=document_id,
            model="smollm2",
            chunk_tokens=128,
            memory_tokens=48,
            answer_tokens=32,
            template_set="memagent",
            question="Which ships were logged?",
            status=ReadingStatus.done,
            cursor=4,
            total_chunks=4,
            started_at=now - timedelta(seconds=9),
            finished_at=now,
            answer="ships 1 to 4",
        )
        s.add(r)
        s.flush()
        for k, ((start, end), memory) in enumerate(zip(spans, memories), 1):
            s.add(
                Checkpoint(
                    reading_id=r.id,
                    step=k,
                    memory=memory,
                    start_token=(k - 1) * 100,
                    end_token=k * 100,
                    start_char=start,
                    end_char=end,
                    first_page=1,
                    last_page=1,
                    prompt_tokens=100,
                    completion_tokens=10,
                    seconds=1.0,
                )
            )
        return r.id


def _diff(page) -> list[tuple[str, str | None]]:
    """The diff's spans as shown: (text, "added" | "dropped" | None), told apart by their colour."""
    spans = page.locator("#step-diff .token").evaluate_all(
        "els => els.map(e => [e.innerText, e.classList.contains('highlighted') ? e.style.backgroundColor : null])"
    )
    legend = dict(
        page.locator("#step-diff .legend-item").evaluate_all(
            "els => els.map(e => [e.style.backgroundColor, e.innerText])"
        )
    )
    return [(text.strip(), legend.get(colour)) for text, colour in spans]


def _info(page) -> str:
    return page.locator("#step-info").inner_text()


def _wait_info(page, text: str) -> str:
    page.locator("#step-info").get_by_text(text).first.wait_for(timeout=30_000)
    return _info(page)


def test_timeline_keyboard_diff_and_edit_and_resume(ui_page, ui_server, tokenizer) -> None:
    page = ui_page
    dialogs, stray = watch(page, ui_server.url)
    doc = page.request.post(
        ui_server.url + "/api/documents",
        multipart={"file": {"name": "log.txt", "mimeType": "text/plain", "buffer": TEXT.encode()}},
    ).json()
    stored = page.request.get(f"{ui_server.url}/api/documents/{doc['id']}").json()
    text_len = stored["char_count"]
    url = Settings(data_dir=ui_server.data_dir).resolved_database_url
    with session_scope(url) as s:
        from app.models import Document

        text = s.get(Document, doc["id"]).text
    assert len(text) == text_len
    original_id = _seed(ui_server, doc["id"], text)
    before = page.request.get(f"{ui_server.url}/api/readings/{original_id}").json()

    page.goto(ui_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#document input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{doc["id"]} "]').click()
    page.locator("#readings [role=gridcell]").filter(has_text="Which ships were logged?").first.click()
    page.locator("#status").get_by_text("Done").wait_for(timeout=30_000)
    page.locator("#timeline").get_by_text("Timeline").first.click()  # open the accordion
    info = _wait_info(page, "Step 4 of 4")
    assert "memory written by the agent" in info
    assert page.locator("#step-memory textarea").input_value() == f"ship 3 {MD_IMG}, ship 4 near island 4"

    # The arrow keys move through the steps: step 3's chunk holds the document's script tag, as text.
    page.locator("#step input[type=range]").focus()
    page.keyboard.press("ArrowLeft")
    _wait_info(page, "Step 3 of 4")
    assert page.locator("#step-memory textarea").input_value() == f"ship 2 {IMG}, ship 3 {MD_IMG}"
    page.keyboard.press("ArrowLeft")
    _wait_info(page, "Step 2 of 4")
    chunk = page.locator("#step-chunk textarea").input_value()
    assert chunk == text[len(text) // 4 : 2 * (len(text) // 4)] and SCRIPT in chunk
    # The change from step 1, word by word: added and dropped text marked (by colour, with a legend).
    assert _diff(page) == [("ship 1 logged", None), (f", ship 2 {IMG}", "added")]
    page.keyboard.press("ArrowRight")
    _wait_info(page, "Step 3 of 4")
    assert _diff(page) == [(text.strip(), kind) for text, kind in diff_spans(MEMORIES[1], MEMORIES[2])]
    assert _diff(page) == [("ship 1 logged,", "dropped"), (f"ship 2 {IMG}", None), (f", ship 3 {MD_IMG}", "added")]
    page.screenshot(path=str(ARTIFACTS / "ui-timeline.png"), full_page=True)

    # Where each sentence came from: the final memory's sentence entered at step 3 (the same words,
    # reworded at step 4); the answer is in no memory. One click shows the passage, highlighted.
    page.locator("#provenance").get_by_text("Where it came from").first.click()
    sources = page.locator("#sources")
    sources.locator("[role=gridcell]").filter(has_text="not in the memory").first.wait_for(timeout=30_000)
    assert MEMORIES[-1] in sources.inner_text() and "ships 1 to 4" in sources.inner_text()
    sources.locator("[role=gridcell]").filter(has_text="ship 4 near island 4").first.click()
    page.locator("#source-note").get_by_text("step 3").wait_for(timeout=30_000)
    passage = page.locator("#source-passage .token.highlighted").inner_text().strip()
    quarter = len(text) // 4
    assert passage and passage in text and "ship 3" in passage
    assert text.index(passage) < 3 * quarter and text.index(passage) + len(passage) > 2 * quarter  # chunk 3
    page.screenshot(path=str(ARTIFACTS / "ui-provenance.png"), full_page=True)
    page.locator("#provenance").get_by_text("Where it came from").first.click()  # close it again

    # Edit the memory at step 2 and resume: a branch, opened, that reads on from chunk 3.
    page.locator("#step input[type=range]").focus()
    page.keyboard.press("ArrowLeft")
    _wait_info(page, "Step 2 of 4")
    page.locator("#step-memory textarea").fill(f"EDITED ship 2 {IMG}")
    page.locator("#resume-edit").click()
    page.locator("#edit-msg").get_by_text("reads on from chunk 3").wait_for(timeout=30_000)
    msg = page.locator("#edit-msg").inner_text()
    branch_id = int(re.search(r"Branch #(\d+) of #(\d+)", msg).group(1))
    page.locator("#status").get_by_text("Queued").wait_for(timeout=30_000)
    page.locator("#readings [role=gridcell]").filter(has_text=f"#{original_id} at step 2").first.wait_for(
        timeout=30_000
    )
    branch = page.request.get(f"{ui_server.url}/api/readings/{branch_id}/checkpoints").json()["checkpoints"]
    assert [(c["step"], c["origin"], c["edited_by"]) for c in branch] == [(1, "agent", None), (2, "edited", "ui:local")]
    assert branch[1]["memory"] == f"EDITED ship 2 {IMG}"

    # A worker reads it (here: this process, a scripted engine): the page shows the branch's new answer.
    def respond(prompt: str) -> str:
        memory = re.search(r"<memory>\n(.*?)\n</memory>", prompt, re.DOTALL).group(1)
        return memory + " +" if "<section>" in prompt else "\\boxed{branch answer}"

    run_readings(Settings(data_dir=ui_server.data_dir), [branch_id], FakeEngine(tokenizer, respond))
    page.locator("#status").get_by_text("Done").wait_for(timeout=30_000)
    assert page.locator("#answer textarea").input_value() == "branch answer"
    page.locator("#timeline").get_by_text("Timeline").first.click()  # collapse
    page.locator("#timeline").get_by_text("Timeline").first.click()  # and open again: the branch's timeline
    info = _wait_info(page, "Step 4 of 4")
    assert f"branch of #{original_id}, edited at step 2" in info
    page.screenshot(path=str(ARTIFACTS / "ui-branch.png"), full_page=True)

    # Compare the branch's answer with the original's, side by side.
    page.locator("#compare").get_by_text("Compare answers").first.click()
    page.locator("#compare-with input").click()
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{original_id} "]').click()
    page.locator("#compare-right label").get_by_text(f"#{original_id}").wait_for(timeout=30_000)
    left, right = (page.locator(f"#compare-{side} textarea").input_value() for side in ("left", "right"))
    assert left.startswith("Answer: branch answer") and f"branch of #{original_id}, memory edited at step 2" in left
    assert right.startswith("Answer: ships 1 to 4") and "read from the start" in right
    assert f"Final memory: {MEMORIES[-1]}" in right
    page.screenshot(path=str(ARTIFACTS / "ui-compare.png"), full_page=True)

    after = page.request.get(f"{ui_server.url}/api/readings/{original_id}").json()
    assert after["checkpoints"] == before["checkpoints"] and after["answer"] == "ships 1 to 4"
    assert [b["id"] for b in page.request.get(f"{ui_server.url}/api/readings/{original_id}/branches").json()] == [
        branch_id
    ]

    page.wait_for_timeout(1000)
    assert not dialogs, dialogs
    assert not stray, stray
    assert not page.locator(
        "#step-info img, #step-diff img, #step-diff script, #edit-msg img, #sources img, "
        "#source-passage img, #source-passage script"
    ).count()
    assert not page.page_errors, page.page_errors


def test_the_word_diff_wraps_between_words(ui_page, ui_server) -> None:
    """A memory of long words, changed at every step: the diff's lines break between words, never inside one
    ("com / mon", "Govern / mental" before)."""
    page = ui_page
    doc = page.request.post(
        ui_server.url + "/api/documents",
        multipart={"file": {"name": "words.txt", "mimeType": "text/plain", "buffer": (TEXT + " words").encode()}},
    ).json()
    long = " ".join(["Governmental healthcare commonwealth indemnification notwithstanding"] * 8)
    memories = [long, f"{long} counterparties", f"{long} counterparties subcontractors", f"{long} reimbursements"]
    url = Settings(data_dir=ui_server.data_dir).resolved_database_url
    with session_scope(url) as s:
        from app.models import Document

        text = s.get(Document, doc["id"]).text
    _seed(ui_server, doc["id"], text, memories)
    page.goto(ui_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#document input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{doc["id"]} "]').click()
    page.locator("#readings [role=gridcell]").filter(has_text="Which ships were logged?").first.click()
    page.locator("#timeline").get_by_text("Timeline").first.click()
    _wait_info(page, "Step 4 of 4")
    page.locator("#step-diff .token").first.wait_for(timeout=30_000)
    diff = page.locator("#step-diff .textfield").element_handle()
    assert page.evaluate("el => el.getBoundingClientRect().height", diff) > 60  # several lines
    assert page.evaluate(BROKEN_WORDS, diff) == []
    page.screenshot(path=str(ARTIFACTS / "ui-diff-long-words.png"), full_page=True)
