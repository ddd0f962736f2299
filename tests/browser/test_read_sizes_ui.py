"""A question asked from the browser is read with the active model version's sizes (issue 36): the Read tab's
size boxes start empty, their placeholders say what the reading will get, and the page sends no size the user
did not type. The real app (`longread serve`, its worker, the bundled reader) with a version registered and
activated as an admin does it (`longread models add --activate`), trained at 512-token chunks and 64-token
memories, while the settings say 128 and 48 (tests/browser/conftest.py).

The app serves with the `transformers` engine: the reading's sizes do not depend on the engine, and it spares
a vLLM server's start. The version keeps sentences (extractive) rather than writing its memory: its sizes are
decided the same way, and its three chunks read in seconds rather than the two minutes the rewriting reader's
memory writing took on a 2-core AVX2 machine."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from inference.models import READER_ADAPTER
from tests.browser.conftest import REPO_ROOT, LiveServer, _page, _serve
from tests.browser.test_ui import DOCUMENT, QUESTION
from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

READ_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def sizes_server(tmp_path_factory) -> Iterator[LiveServer]:
    yield from _serve(tmp_path_factory, env={"LONGREAD_ENGINE": "transformers"})


@pytest.fixture
def page(chromium, sizes_server):
    yield from _page(chromium)


def test_a_question_asked_in_the_browser_is_read_at_the_active_versions_sizes(page, sizes_server, tmp_path):
    url = sizes_server.url
    env = {**os.environ, "LONGREAD_DATA_DIR": str(sizes_server.data_dir)}
    added = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "models",
            "add",
            "reader-512",
            "--base",
            "smollm2",
            "--adapter",
            str(READER_ADAPTER),
            "--chunk-tokens",
            "512",
            "--memory-tokens",
            "64",
            "--memory-policy",
            "extractive",
            "--activate",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert added.returncode == 0 and "registered, active" in added.stdout, added.stdout + added.stderr

    doc_path = tmp_path / "harbor-branch.txt"
    doc_path.write_text(DOCUMENT * 3, encoding="utf-8")  # about 1,300 tokens: 3 chunks of 512, 11 of 128
    page.goto(url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#upload input[type=file]").set_input_files(str(doc_path))
    page.locator("#doc-info").get_by_text("tokens").wait_for(timeout=60_000)
    tokens = int(re.search(r"([\d,]+) tokens", page.locator("#doc-info").inner_text()).group(1).replace(",", ""))

    # The boxes are empty; their placeholders name the active version's sizes, not the settings' 128 and 48.
    page.get_by_text("Reading settings").click()
    chunk_box, memory_box = (
        page.locator(f"{box} input, {box} textarea").first for box in ("#chunk-tokens", "#memory-tokens")
    )
    page.wait_for_function(
        "() => document.querySelector('#chunk-tokens input, #chunk-tokens textarea')?.placeholder === '512 (default)'",
        timeout=30_000,
    )
    assert (chunk_box.input_value(), memory_box.input_value()) == ("", "")
    assert memory_box.get_attribute("placeholder") == "64 (default)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "read-sizes-defaults.png"), full_page=True)

    page.locator("#question textarea").fill(QUESTION)
    page.locator("#ask").click()
    page.locator("#status").get_by_text("Done").wait_for(timeout=READ_TIMEOUT_S * 1000)
    doc_id = page.request.get(url + "/api/documents").json()[0]["id"]
    (reading,) = [
        r for r in page.request.get(f"{url}/api/documents/{doc_id}/readings").json() if r["question"] == QUESTION
    ]
    assert (reading["model"], reading["chunk_tokens"], reading["memory_tokens"]) == ("reader-512", 512, 64), reading
    expected = math.ceil(tokens / 512)
    assert page.locator("#status").inner_text().startswith(f"Done: read {expected} chunks"), (
        page.locator("#status").inner_text(),
        tokens,
    )
