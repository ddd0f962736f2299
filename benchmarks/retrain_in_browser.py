"""Retraining from the browser, end to end on a running app, as an admin would do it by hand: the
figures and screenshots of issue 12's closing note. Not a test (tests/browser/test_training_ui.py is):
a real run takes the better part of an hour on a 2-core CPU, so this runs in phases, each one resumable.

    longread serve                                   # the app on the embedded defaults (another shell)
    python -m benchmarks.retrain_in_browser feedback --url http://127.0.0.1:8000
    python -m benchmarks.retrain_in_browser start --url ... --sft-steps 30 --lengths 2048,8192
    python -m benchmarks.retrain_in_browser watch --url ...       # a screenshot of the run's page, its state
    python -m benchmarks.retrain_in_browser evaluate --url ...    # then waits for the table
    python -m benchmarks.retrain_in_browser promote --url ...     # and asks the held-out contract again

`feedback` uploads the shortest training contracts of ../shared/data/contracts-train (the fifth gets an id
the app holds out: every fifth document), asks each its governing law in the Read tab, waits for the answers and
judges each in the browser against the expert answer (incorrect: with the corrected answer).
Screenshots go to docs/screenshots/retrain-*.png. Embedded mode: the local user is the admin.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from tests.conftest import CHROMIUM, CHROMIUM_ARGS
from training.tasks import CONTRACTS_TRAIN_DIR, contract_cases, contract_ids

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "screenshots"
QUESTION = "Which state's law governs this agreement?"


def shot(page, name: str) -> None:
    page.wait_for_timeout(800)  # plots draw after their data arrives
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"retrain-{name}.png"), full_page=True)
    print(f"screenshot docs/screenshots/retrain-{name}.png", flush=True)


def tab(page, name: str, inside: str | None = None) -> None:
    (page.locator(inside) if inside else page).get_by_role("tab", name=name, exact=True).click()


def choose(page, box: str, label_start: str) -> None:
    page.locator(f"{box} input").fill("")
    page.locator(f'ul[role=listbox] [role=option][aria-label^="{label_start}"]').first.click()


def training_contracts(n: int = 7) -> dict[str, tuple[Path, str]]:
    """The `n` shortest training contracts whose experts name one governing law: id -> (text file, law).
    Training ones only (contract_ids("train")): the feedback given here is trained on, and a dev or
    held-out contract trained on would no longer measure anything."""
    trainable = set(contract_ids("train"))
    found = []
    for case in contract_cases(CONTRACTS_TRAIN_DIR):
        laws = [q["answer"] for q in case["qa"] if q["category"] == "Governing Law"]
        if case["id"] in trainable and len(laws) == 1 and ";" not in laws[0]:
            path = CONTRACTS_TRAIN_DIR / case["txt"]
            found.append((path.stat().st_size, case["id"], path, laws[0]))
    return {case_id: (path, law) for _, case_id, path, law in sorted(found)[:n]}


#: id -> (text file, the expert's governing law)
DOCS = training_contracts()
#: the fifth uploaded: its document id (5 in a new app) is one the app holds out of training
HELD = list(DOCS)[4]


def feedback(page, url: str) -> None:
    api = page.request
    have = {d["filename"]: d for d in api.get(f"{url}/api/documents").json()}
    docs = {}
    for case_id, (path, _) in DOCS.items():
        name = f"{case_id}.txt"
        docs[case_id] = (
            have.get(name)
            or api.post(
                f"{url}/api/documents",
                multipart={"file": {"name": name, "mimeType": "text/plain", "buffer": path.read_bytes()}},
            ).json()
        )
    page.reload()  # the document list is the page's as it loaded
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    for case_id, doc in docs.items():
        _, law = DOCS[case_id]
        name = f"{case_id}.txt"
        readings = api.get(f"{url}/api/documents/{doc['id']}/readings").json()
        if not any(r["question"] == QUESTION for r in readings):
            tab(page, "Read")
            choose(page, "#document", f"#{doc['id']} ")
            page.locator("#question textarea").fill(QUESTION)
            page.locator("#ask").click()
            page.locator("#readings [role=gridcell]").filter(has_text=QUESTION).first.wait_for(timeout=60_000)
            print(f"asked #{doc['id']} {name} (expert: {law})", flush=True)
    for case_id, (_, law) in DOCS.items():
        doc = next(d for d in api.get(f"{url}/api/documents").json() if d["filename"] == f"{case_id}.txt")
        deadline = time.monotonic() + 1800
        while True:
            reading = next(
                r for r in api.get(f"{url}/api/documents/{doc['id']}/readings").json() if r["question"] == QUESTION
            )
            if reading["status"] in ("done", "failed") or time.monotonic() > deadline:
                break
            time.sleep(5)
        answer = reading.get("answer") or ""
        right = law.lower() in answer.lower()
        print(
            f"#{doc['id']} {case_id}: {reading['status']}, answered {answer[:80]!r}, expert {law!r}: "
            f"{'correct' if right else 'incorrect'}",
            flush=True,
        )
        tab(page, "Read")
        choose(page, "#document", f"#{doc['id']} ")
        # The table shows the chosen document's readings once it has loaded: every document here has the
        # same question, so wait for this reading's id (the "#" column) before opening it.
        page.locator("#readings").get_by_role("gridcell", name=str(reading["id"]), exact=True).first.click()
        page.locator("#status").get_by_text("Done").wait_for(timeout=60_000)
        page.locator("#verdict").get_by_label("correct" if right else "incorrect", exact=True).check()
        if not right:
            page.locator("#corrected-answer textarea").fill(law)
        page.locator("#save-feedback").click()
        page.locator("#feedback-list").get_by_text("Saved:").first.wait_for(timeout=30_000)
        if case_id == next(iter(DOCS)):
            shot(page, "feedback")


def start(page, url: str, args: argparse.Namespace) -> None:
    tab(page, "Training")
    tab(page, "Data", "#training-pages")
    page.locator("#feedback-table [role=gridcell]").first.wait_for(timeout=30_000)
    page.locator("#include-feedback input").check()
    page.locator("#use-contracts input").check()
    for kind in args.kinds.split(","):
        box = page.locator(f'#synthetic-kinds input[name="{kind}"]')
        if not box.is_checked():
            box.check()
    page.locator("#lengths textarea, #lengths input").first.fill(args.lengths)
    page.locator("#preview").click()
    page.locator("#preview-table [role=gridcell]").first.wait_for(timeout=120_000)
    shot(page, "data")
    tab(page, "New run", "#training-pages")
    page.locator("#run-name textarea, #run-name input").first.fill(args.name)
    params = {
        "sft-steps": args.sft_steps,
        "sft-samples-per-step": args.sft_samples,
        "sft-carry": args.sft_carry,
        "sft-learning-rate": args.sft_lr,
        "rl-steps": args.rl_steps,
        "mix-feedback": args.mix_feedback,
        "save-every": 5,
    }
    for key, value in params.items():
        page.locator(f"#param-{key} input").fill(str(value))
    page.locator("#estimate").get_by_text("Estimated time").wait_for(timeout=60_000)
    shot(page, "new-run")
    page.locator("#start-run").click()
    page.locator("#run-head").get_by_text(re.compile(r"· (queued|running) ·")).wait_for(timeout=60_000)
    print(page.locator("#run-head").inner_text(), flush=True)


def open_run(page, name: str) -> str:
    tab(page, "Training")
    tab(page, "Runs", "#training-pages")
    page.locator("#runs-table [role=gridcell]").filter(has_text=name).first.click()
    page.locator("#run-head").get_by_text(name).wait_for(timeout=30_000)
    page.wait_for_timeout(3000)
    return page.locator("#run-head").inner_text()


def eval_table(page) -> str:
    """The evaluation table's text; empty while there is none (the table is not on the page then)."""
    table = page.locator("#eval-table")
    return table.inner_text() if table.count() else ""


def evaluate(page, url: str, name: str) -> None:
    head = open_run(page, name)
    if "· done ·" not in head:
        sys.exit(f"the run is not done yet: {head}")
    if not eval_table(page):
        page.locator("#run-evaluate").click()
        page.locator("#run-msg").get_by_text("Evaluation of run #").wait_for(timeout=30_000)
    deadline = time.monotonic() + 3600
    while "synthetic" not in eval_table(page):
        if time.monotonic() > deadline:
            sys.exit("no evaluation within an hour")
        page.wait_for_timeout(30_000)
        open_run(page, name)
    print(page.locator("#eval-note").inner_text(), page.locator("#eval-table").inner_text(), sep="\n", flush=True)
    shot(page, "evaluated")


def promote(page, url: str, name: str) -> None:
    """Promote the run, then ask the held-out contract (#5) again: the new reading records the version."""
    tab(page, "Models")
    active = page.locator("#models-table [role=row]").filter(has_text="● active").filter(has_text=name)
    if not active.count():  # not promoted by an earlier try of this phase
        open_run(page, name)
        page.locator("#run-promote").click()
        message = page.locator("#run-msg").get_by_text("Promoted: model version #")
        message.wait_for(timeout=30_000)
        print(message.inner_text(), flush=True)
        tab(page, "Models")
    active.first.wait_for(timeout=30_000)
    shot(page, "models")
    doc = next(d for d in page.request.get(f"{url}/api/documents").json() if d["filename"] == f"{HELD}.txt")
    before = {r["id"] for r in page.request.get(f"{url}/api/documents/{doc['id']}/readings").json()}
    tab(page, "Read")
    choose(page, "#document", f"#{doc['id']} ")
    page.locator("#question textarea").fill(QUESTION)
    page.locator("#ask").click()
    page.locator("#status").get_by_text("Done").wait_for(timeout=1_800_000)
    (reading,) = [
        r for r in page.request.get(f"{url}/api/documents/{doc['id']}/readings").json() if r["id"] not in before
    ]
    print(
        f"new reading #{reading['id']} of #{doc['id']} {HELD} (held out): model {reading['model']!r}, "
        f"answered {reading['answer']!r}, expert {DOCS[HELD][1]!r}",
        flush=True,
    )
    shot(page, "after-promote")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=("feedback", "start", "watch", "evaluate", "promote"))
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--name", default="SFT from readers' feedback")
    p.add_argument("--kinds", default="single-needle,multi-needle")
    p.add_argument("--lengths", default="2048,8192")
    p.add_argument("--sft-steps", type=int, default=30)
    p.add_argument("--sft-samples", type=int, default=4)
    p.add_argument("--sft-carry", type=int, default=2)
    p.add_argument("--sft-lr", type=float, default=2e-4)
    p.add_argument("--rl-steps", type=int, default=0)
    p.add_argument("--mix-feedback", type=float, default=0.25)
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.set_default_timeout(30_000)
        page.goto(args.url + "/")
        page.locator("#ask").wait_for(state="visible", timeout=60_000)
        if args.phase == "feedback":
            feedback(page, args.url)
        elif args.phase == "start":
            start(page, args.url, args)
        elif args.phase == "watch":
            print(open_run(page, args.name), flush=True)
            shot(page, "run")
        elif args.phase == "evaluate":
            evaluate(page, args.url, args.name)
        else:
            promote(page, args.url, args.name)
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
