"""A reading page lists its family as a tree: the original, its branches, and branches of branches,
indented under the reading each was made from; choosing any one opens it."""

from __future__ import annotations

import re

import pytest

from app.services import readings
from app.services.runner import run_readings
from app.settings import Settings
from app.ui.read_views import BRANCH_COLUMNS
from tests.browser.test_timeline_ui import TEXT, _seed
from tests.browser.uihelpers import watch
from tests.conftest import ARTIFACTS
from tests.fakes import FakeEngine

pytestmark = pytest.mark.browser


def _tree(page) -> list[str]:
    cells = page.locator("#branches [role=gridcell]").all_inner_texts()
    return [t.replace("\u00a0", " ").strip() for t in cells[1 :: len(BRANCH_COLUMNS)]]


def test_branches_are_listed_as_a_tree_and_any_one_opens(ui_page, ui_server, tokenizer) -> None:
    page = ui_page
    dialogs, stray = watch(page, ui_server.url)
    doc = page.request.post(
        ui_server.url + "/api/documents",
        multipart={"file": {"name": "tree.txt", "mimeType": "text/plain", "buffer": TEXT.encode()}},
    ).json()
    settings = Settings(data_dir=ui_server.data_dir)
    from app.db import session_scope
    from app.models import Document

    with session_scope(settings.resolved_database_url) as s:
        text = s.get(Document, doc["id"]).text
    original = _seed(ui_server, doc["id"], text)

    # A branch of the original at step 2, a branch of that branch at step 3, another of the original at step 3.
    def respond(prompt: str) -> str:
        memory = re.search(r"<memory>\n(.*?)\n</memory>", prompt, re.DOTALL).group(1)
        return memory + " +" if "<section>" in prompt else "\\boxed{answer of " + memory.split()[0] + "}"

    a = readings.edit(settings, original, 2, "EDITED at two", edited_by="test", enqueue=False).id
    run_readings(settings, [a], FakeEngine(tokenizer, respond))
    b = readings.edit(settings, a, 3, "EDITED again at three", edited_by="test", enqueue=False).id
    run_readings(settings, [b], FakeEngine(tokenizer, respond))
    c = readings.edit(settings, original, 3, "<b>EDITED</b> at three", edited_by="test", enqueue=False).id

    page.goto(ui_server.url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#document input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="#{doc["id"]} "]').click()
    page.locator("#readings [role=gridcell]").filter(has_text=f"#{a} at step 3").first.click()  # open b
    page.locator("#branches [role=gridcell]").filter(has_text="◀ open").first.wait_for(timeout=30_000)
    assert _tree(page) == [
        f"#{original} original: Which ships were logged?",
        f"├─ #{a} branch at step 2",
        f"│   └─ #{b} branch at step 3 ◀ open",
        f"└─ #{c} branch at step 3",
    ], _tree(page)
    assert "3 branches" in page.locator("#branches-note").inner_text()
    page.locator("#branches").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui-branch-tree.png"), full_page=True)

    # Any one opens: the branch of the original at step 3 (queued), then the original itself.
    page.locator("#branches [role=gridcell]").filter(has_text=f"#{c} branch at step 3").first.click()
    page.locator("#branches [role=gridcell]").filter(has_text=f"#{c} branch at step 3 ◀ open").first.wait_for(
        timeout=30_000
    )
    page.locator("#status").get_by_text("Queued").wait_for(timeout=30_000)
    page.locator("#branches [role=gridcell]").filter(has_text=f"#{original} original").first.click()
    page.locator("#status").get_by_text("Done").wait_for(timeout=30_000)
    assert page.locator("#answer textarea").input_value() == "ships 1 to 4"
    page.locator("#branches [role=gridcell]").filter(
        has_text=f"#{original} original: Which ships were logged? ◀ open"
    ).first.wait_for(timeout=30_000)
    assert not page.locator("#branches b").count()  # the edited memory's tag is nowhere as HTML
    assert not dialogs and not stray and not page.page_errors, (dialogs, stray, page.page_errors)
