"""Retraining from the browser (issue 12) on the real app (`longread serve`: web app, reading worker and
training worker, the bundled SmolLM2): an admin judges an answer, includes that feedback, starts a tiny
run from the form, watches its curves fill, evaluates it beside the active model, promotes it and sees
new readings use it (and switches back); a run that fails says why. A reader (production mode) has no
Training or Models tab, and the API refuses them. Screenshots of every page go to artifacts/browser/.

The app serves with the `transformers` engine: the same bundled model as the default `vllm-local`, without
a vLLM server compiling for minutes on the CPU the tiny run needs (tests/integration test vLLM)."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from app.db import session_scope
from app.models import Checkpoint, Reading, ReadingStatus
from app.settings import Settings
from tests.authutil import SECRET, new_user, production_settings
from tests.browser.conftest import LiveServer, _page, _serve
from tests.browser.test_sign_in_ui import _sign_in
from tests.browser.uihelpers import watch
from tests.conftest import ARTIFACTS, LIGHTHOUSE

pytestmark = pytest.mark.browser

IMG = "<img src=http://127.0.0.1:9/t.png onerror=alert(7)>"
#: the run's name: long, and with markup that must show as text
NAME = f"tiny **run** {IMG} from the lighthouse keeper's feedback"
#: as small as the real trainer goes (tests/integration/test_training_runs.py TINY), through the form; two
#: RL steps, so that an RL curve is seen to grow (one point draws no line)
TINY = {
    "sft-steps": 2,
    "sft-samples-per-step": 1,
    "rl-steps": 2,
    "samples-per-step": 1,
    "group-size": 2,
    "save-every": 1,
}


@pytest.fixture(scope="module")
def trainer_server(tmp_path_factory) -> Iterator[LiveServer]:
    yield from _serve(tmp_path_factory, env={"LONGREAD_ENGINE": "transformers", "LONGREAD_EVAL_N": "1"})


@pytest.fixture
def page(chromium, trainer_server):
    yield from _page(chromium)


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(600)  # the plots draw after their data arrives
    # A record, not a check: a long page drawn while a run trains took over the default 30 s on a 2-core AVX2 machine.
    page.screenshot(path=str(ARTIFACTS / name), full_page=True, timeout=120_000)


def _text(
    page,
    selector: str,
    expect: str | re.Pattern,
    timeout_s: float,
    server: LiveServer | None = None,
) -> str:
    """The element's text once it shows `expect`; fails with what it showed (and the app's log)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = page.locator(selector)
        text = found.inner_text() if found.count() else ""  # a hidden element is not on the page
        if expect.search(text) if isinstance(expect, re.Pattern) else expect in text:
            return text
        if time.monotonic() > deadline:
            log = f"\n--- the app's log:\n{server.log_tail(80)}" if server else ""
            pytest.fail(f"{selector} did not show {expect!r} within {timeout_s} s; it shows:\n{text}{log}")
        page.wait_for_timeout(500)


def _steps(page, plot: str) -> set[int]:
    """The steps a line plot has points for (its SVG labels every point: "step: 3; value: …")."""
    if not page.locator(plot).is_visible():
        return set()
    return {int(s) for s in re.findall(r'aria-label="step: (\d+);', page.locator(plot).inner_html())}


def _tab(page, name: str, inside: str | None = None) -> None:
    (page.locator(inside) if inside else page).get_by_role("tab", name=name, exact=True).click()


def _choose(page, box: str, label_start: str) -> None:
    page.locator(f"{box} input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="{label_start}"]').first.click()


def _answered_reading(server: LiveServer, document_id: int) -> int:
    """A finished reading with a wrong answer, written as a worker leaves one (the reading itself is
    tested elsewhere; here it is the answer an admin judges)."""
    with session_scope(Settings(data_dir=server.data_dir).resolved_database_url) as s:
        now = datetime.now(UTC)
        r = Reading(
            document_id=document_id,
            model="smollm2-reader",
            chunk_tokens=128,
            memory_tokens=48,
            answer_tokens=32,
            template_set="chunk-first",
            question="Where does the spare key hang?",
            status=ReadingStatus.done,
            cursor=1,
            total_chunks=1,
            started_at=now - timedelta(seconds=3),
            finished_at=now,
            answer="under the mat",
        )
        s.add(r)
        s.flush()
        s.add(
            Checkpoint(
                reading_id=r.id,
                step=1,
                memory="The key is under the mat.",
                start_token=0,
                end_token=120,
                start_char=0,
                end_char=len(LIGHTHOUSE),
                first_page=1,
                last_page=1,
                prompt_tokens=150,
                completion_tokens=9,
                seconds=1.0,
            )
        )
        return r.id


def _ask(page, url: str, document_id: int, question: str) -> dict:
    """Ask in the Read tab; the reading as the API shows it, then cancelled: here only the version it was given
    matters (readings are tested elsewhere), and reading on would take the CPU the rest of the test needs."""
    _tab(page, "Read")
    page.locator("#question textarea").fill(question)
    page.locator("#ask").click()
    page.locator("#readings [role=gridcell]").filter(has_text=question).first.wait_for(timeout=30_000)
    reading = next(
        r for r in page.request.get(f"{url}/api/documents/{document_id}/readings").json() if r["question"] == question
    )
    assert page.request.post(f"{url}/api/readings/{reading['id']}/cancel").ok
    return reading


def test_an_admin_trains_on_browser_feedback_watches_evaluates_and_promotes(page, trainer_server):
    url = trainer_server.url
    dialogs, stray = watch(page, url)
    doc = page.request.post(
        url + "/api/documents",
        multipart={"file": {"name": "lighthouse.txt", "mimeType": "text/plain", "buffer": (LIGHTHOUSE * 3).encode()}},
    ).json()
    assert doc["id"] % 5, "document ids divisible by 5 are held out: the test's feedback must be trainable"
    _answered_reading(trainer_server, doc["id"])

    page.goto(url + "/")
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    # Empty: no feedback, no runs; the bundled model and the shipped reader twice, the extractive one reads.
    _tab(page, "Training")
    _text(page, "#feedback-note", "No feedback yet", 30)
    _shot(page, "training-data-empty.png")
    _tab(page, "Runs", "#training-pages")
    _text(page, "#runs-note", "No runs yet: choose data and start one", 30)
    _shot(page, "training-runs-empty.png")
    _tab(page, "Models")
    registry = _text(page, "#models-table", "small-sft-extractive-answers7.toml (sha256:", 30)  # the reader's lineage
    # Named as a newcomer tells them apart (the lineage keeps the stored names), metrics in words (issue 54).
    assert "no version: Longread reader (rewrites its memory)" in registry and registry.count("● active") == 1, registry
    assert re.search(r"Longread reader \(keeps sentences\)\s+● active", registry), registry  # from the first start
    assert "SmolLM2-135M, untrained" in registry and "answer is No: " in registry, registry
    assert not re.search(r"sub-EM|gold No", page.locator("#models-table").inner_text(), re.IGNORECASE)
    _shot(page, "models-empty.png")

    # The admin judges the answer in Read, as any user does.
    _tab(page, "Read")
    _choose(page, "#document", f"#{doc['id']} ")
    page.locator("#readings [role=gridcell]").filter(has_text="Where does the spare key hang?").first.click()
    page.locator("#status").get_by_text("Done").wait_for(timeout=30_000)
    # The reading's own feedback list loads after it opens; saving before it would let that load
    # overwrite the "Saved" note on a slow machine (CI's failure of 2026-11-26).
    page.locator("#feedback-list").get_by_text("No feedback on this answer yet.").wait_for(timeout=30_000)
    page.locator("#verdict").get_by_label("incorrect").check()
    page.locator("#corrected-answer textarea").fill("behind the barometer")
    page.locator("#save-feedback").click()
    page.locator("#feedback-list").get_by_text("Saved: incorrect.").wait_for(timeout=30_000)

    # Training data: the verdict is listed; include it (it is left out unless included) and preview.
    _tab(page, "Training")
    _tab(page, "Data", "#training-pages")
    _text(page, "#feedback-table", "behind the barometer", 30)
    row = page.locator("#feedback-table").inner_text()
    assert all(
        x in row
        for x in ("incorrect", "Where does the spare key hang?", "under the mat", "lighthouse.txt", "local", "no")
    ), row
    page.locator("#lengths textarea, #lengths input").first.fill("256")
    page.locator("#preview").click()
    _text(page, "#preview-note", "samples this selection makes", 60)
    assert "feedback" not in page.locator("#preview-table").inner_text()  # not included yet
    page.locator("#include-feedback input").check()
    _choose(page, "#feedback-pick", "#")  # only this verdict
    page.locator("#preview").click()
    _text(page, "#preview-table", "behind the barometer", 60)
    assert "Where does the spare key hang?" in page.locator("#preview-table").inner_text()
    _shot(page, "training-data.png")

    # New run: tiny settings; the estimate follows them; a bad value is refused with what to change.
    _tab(page, "New run", "#training-pages")
    page.locator("#run-name textarea, #run-name input").first.fill(NAME)
    for key, value in TINY.items():
        page.locator(f"#param-{key} input").fill(str(value))
    page.locator("#param-group-size input").fill("1")
    page.locator("#start-run").click()
    _text(page, "#start-msg", "Cannot start", 30)
    assert "group_size" in page.locator("#start-msg").inner_text()
    _shot(page, "training-new-run-refused.png")
    page.locator("#param-group-size input").fill("2")
    estimate = _text(page, "#estimate", "Estimated time: about", 30)
    assert "2-core" in estimate, estimate
    _shot(page, "training-new-run.png")
    page.locator("#start-run").click()

    # Runs: it opens by itself; its curves fill while it trains.
    head = _text(page, "#run-head", re.compile(r"· (queued|running) ·"), 30, trainer_server)
    assert NAME in head, head  # its markup shows as text

    def curve_has(plot: str, steps: set[int], timeout_s: float = 600, poll_ms: int = 1000) -> None:
        deadline = time.monotonic() + timeout_s
        while not steps <= _steps(page, plot):
            if time.monotonic() > deadline:
                pytest.fail(
                    f"{plot} has points {_steps(page, plot)}, not {steps}; the app's log:\n"
                    f"{trainer_server.log_tail(80)}"
                )
            page.wait_for_timeout(poll_ms)

    curve_has("#plot-sft-loss", {1}, poll_ms=250)
    reward_live = _steps(page, "#plot-reward")  # at once: its RL steps take seconds (a run from the extractive
    # reader writes no memories); on a 2-core AVX2 CPU steps 3 and 4 were both drawn before a half-second watch
    # began after the screenshot below (the whole suite there, 2026-12-06)
    assert "· running ·" in page.locator("#run-head").inner_text()
    _shot(page, "training-run-live.png")
    curve_has("#plot-reward", {3, 4}, poll_ms=500)
    # The page was not reloaded: seen running short of steps 3 and 4, then with both, the curve grew by itself.
    assert reward_live < {3, 4}, reward_live
    _text(page, "#run-head", "· done ·", 60, trainer_server)
    page.wait_for_timeout(2500)  # the last tick
    assert _steps(page, "#plot-sft-loss") == {1, 2}
    assert _steps(page, "#plot-accuracy") == _steps(page, "#plot-kl") == _steps(page, "#plot-rl-loss") == {3, 4}
    assert _steps(page, "#plot-tokens") == {1, 2, 3, 4}
    samples = page.locator("#run-samples").inner_text()
    assert samples.index("Step 4") < samples.index("Step 3"), samples  # newest first
    assert "memory after chunk 1" in samples and "Answer:" in samples, samples
    assert "step 4/4 rl" in page.locator("#run-log textarea").input_value()
    row = page.locator("#runs-table").inner_text()
    assert "done" in row and "4/4" in row, row

    # Evaluate beside the active model, then promote.
    page.locator("#run-evaluate").click()
    _text(page, "#run-msg", "Evaluation of run #", 30)
    _text(page, "#eval-table", "synthetic", 900, trainer_server)
    table = page.locator("#eval-table").inner_text()
    assert "256" in table and "%" in table, table
    assert page.locator("#eval-plot").is_visible()
    bars = re.findall(r'aria-label="set: ([^;]+);', page.locator("#eval-plot").inner_html())
    assert bars == ["256 tokens · baseline", "256 tokens · this run"], bars
    assert (
        "Baseline: Longread reader (keeps sentences); this run" in page.locator("#eval-note").inner_text()
    )  # the active version
    _shot(page, "training-run-evaluated.png")
    page.locator("#run-promote").click()
    message = _text(page, "#run-msg", "Promoted: model version #", 30)
    version_id = int(re.search(r"version #(\d+)", message).group(1))
    run_id = int(re.search(r"#(\d+)", page.locator("#run-head").inner_text()).group(1))
    (version,) = [v["name"] for v in page.request.get(url + "/api/models").json() if v["id"] == version_id]

    # Models: the new version is active, with its lineage and metrics.
    _tab(page, "Models")
    _text(page, "#models-table", f"run #{run_id}", 30)
    registry = page.locator("#models-table").inner_text()
    assert registry.count("● active") == 1 and "256 tokens: " in registry and "LoRA adapter" in registry, registry
    _shot(page, "models.png")

    # A new reading uses the promoted version; after switching back, the base model.
    assert _ask(page, url, doc["id"], "Who keeps the lighthouse?")["model"] == version
    _tab(page, "Models")
    _choose(page, "#pick-version", "no version:")
    page.locator("#activate-version").click()
    _text(page, "#models-msg", "New readings now use the base model Longread reader (rewrites its memory)", 30)
    assert _ask(page, url, doc["id"], "What hangs behind the barometer?")["model"] == "smollm2-reader"
    _tab(page, "Models")
    _choose(page, "#pick-version", f"#{version_id} ")
    page.locator("#activate-version").click()
    _text(page, "#models-msg", f"New readings now use version #{version_id}", 30)

    # A run that fails (a model that is not there) says why, and how to go on.
    started = page.request.post(
        url + "/api/training/runs",
        data={
            "name": "x" * 200,
            "selection": {"lengths": [256]},
            "params": {"sft_steps": 1, "rl_steps": 0, "extra": {"model": "/nonexistent/model"}},
        },
    )
    assert started.status == 201, started.text()
    _tab(page, "Training")
    _tab(page, "Runs", "#training-pages")
    page.locator("#runs-table [role=gridcell]").filter(has_text="x" * 50).first.click()
    head = _text(page, "#run-head", "· failed ·", 300, trainer_server)
    assert "Error: the trainer stopped" in head and "Resume" in head and "No steps yet" not in head, head
    _shot(page, "training-run-failed.png")

    assert not dialogs, dialogs
    assert not stray, stray
    assert not page.page_errors, page.page_errors


@pytest.fixture(scope="module")
def prod_server(tmp_path_factory, postgres_url) -> Iterator[LiveServer]:
    yield from _serve(
        tmp_path_factory,
        "--no-worker",
        env={
            "LONGREAD_MODE": "production",
            "LONGREAD_SECRET_KEY": SECRET,
            "LONGREAD_DATABASE_URL": postgres_url,
        },
    )


@pytest.mark.integration
def test_a_reader_has_no_training_or_models_tab_and_the_api_refuses(chromium, prod_server, postgres_url):
    settings = production_settings(postgres_url, prod_server.data_dir)
    tag = uuid.uuid4().hex[:6]
    reader, admin = new_user(settings, prefix=f"rita-{tag}"), new_user(settings, "admin", f"adam-{tag}")
    for who, sees in ((reader, False), (admin, True)):
        for page in _page(chromium):
            _sign_in(page, prod_server.url, who.username)
            page.wait_for_timeout(1500)  # the account handler has shown (or not) the admin's tabs
            tabs = [page.get_by_role("tab", name=n, exact=True) for n in ("Training", "Models")]
            assert [t.count() > 0 and t.is_visible() for t in tabs] == [sees, sees], who.role
            assert page.get_by_role("tab", name="Read", exact=True).is_visible()
            for path in ("/api/training/runs", "/api/training/data", "/api/models"):
                assert page.request.get(prod_server.url + path).status == (200 if sees else 403), (who.role, path)
            if not sees:
                _shot(page, "training-reader-no-tabs.png")
                assert page.request.post(prod_server.url + "/api/models/0/activate").status == 403
