"""A running evaluation's progress (questions read of the total, whose turn, the ETA) from the files its
`longread eval` commands keep, and whether the held-out feedback was scored or why there was none."""

from __future__ import annotations

import json
import time

import pytest

from app.services.evaluation import Progress
from app.services.training_runs import EvalProgress, eval_progress, progress_file
from app.ui.text import fmt_seconds
from app.ui.training_views import eval_progress_text, eval_view, held_out_text


def _cases(run_dir, n: int) -> None:
    data = run_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"document": "docs/d.txt", "question": f"q{i}", "answers": ["a"]}) for i in range(n)]
    (data / "heldout-cases.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _write(run_dir, side: str, part: int, done: int, total: int, elapsed_s: float) -> None:
    path = progress_file(run_dir, side, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"done": done, "total": total, "elapsed_s": elapsed_s}), encoding="utf-8")


def test_the_progress_file_counts_questions_as_documents_finish(tmp_path):
    path = tmp_path / "eval" / "progress" / "baseline-0.json"
    p = Progress(path, 12, time.monotonic())
    assert json.loads(path.read_text())["done"] == 0  # written at once: the total is known before any reading
    p.add(5)
    p.add(3)
    got = json.loads(path.read_text())
    assert (got["done"], got["total"]) == (8, 12) and got["elapsed_s"] >= 0
    assert [f.name for f in path.parent.iterdir()] == [path.name]  # the temporary file was renamed over it
    Progress(None, 3, time.monotonic()).add(1)  # no file asked for: nothing written, no error


def test_progress_adds_both_sides_and_sizes_the_side_not_started_like_the_other(tmp_path):
    assert eval_progress(tmp_path) is None  # no command has begun
    _write(tmp_path, "baseline", 0, 10, 40, 100.0)
    p = eval_progress(tmp_path)
    assert (p.done, p.total, p.side) == (10, 80, "baseline")  # the candidate reads the same 40
    assert p.eta_s == pytest.approx(100.0 / 10 * (80 - 10))
    _write(tmp_path, "baseline", 0, 40, 40, 300.0)
    _write(tmp_path, "candidate", 0, 20, 40, 150.0)
    p = eval_progress(tmp_path)
    assert (p.done, p.total, p.side) == (60, 80, "candidate")
    assert p.eta_s == pytest.approx(450.0 / 60 * 20)


def test_held_out_feedback_is_a_part_of_its_own_sized_once_read(tmp_path):
    _cases(tmp_path, 3)
    _write(tmp_path, "baseline", 0, 40, 40, 300.0)
    p = eval_progress(tmp_path)
    assert p.total is None and p.eta_s is None  # the feedback part's size is not known yet
    _write(tmp_path, "baseline", 1, 0, 3, 30.0)
    assert eval_progress(tmp_path).total == 2 * (40 + 3)
    progress_file(tmp_path, "candidate", 0).write_text("{half a fi")
    assert eval_progress(tmp_path).done == 40  # a file that cannot be read counts as not begun


def test_the_running_line_says_how_far_and_whose_turn():
    p = EvalProgress(done=12, total=80, eta_s=125.0, side="candidate")
    line = eval_progress_text(p)
    assert line.startswith("12 of 80 questions read (this run reading)") and f"ETA {fmt_seconds(p.eta_s)}" in line
    assert "ETA after the first document" in eval_progress_text(EvalProgress(0, None, None, "baseline"))
    assert "starting" in eval_progress_text(None)
    note, _, _ = eval_view({"status": "running", "worker": "w"}, True, p)
    assert note == f"Evaluation running: {line}"


DONE = {"status": "done", "baseline": {"summary": []}, "candidate": {"summary": []}}


def test_the_result_says_whether_held_out_feedback_was_scored():
    scored = {**DONE, "candidate": {"summary": [], "cases": {"sub_em": 0.5, "exact_match": 0.0, "n": 3}}}
    assert held_out_text(scored, {}).startswith("Held-out feedback: 3 readings scored")
    assert held_out_text(scored, {}) in eval_view(scored, True, None, {})[0]
    none_selected = held_out_text(DONE, {"include_feedback": False})
    assert none_selected == "No held-out feedback: no feedback was selected for this run."
    only_train = held_out_text(DONE, {"include_feedback": True, "feedback_readings": {"train": 4, "held_out": 0}})
    assert only_train.startswith("No held-out feedback: none of the 4 selected feedback readings was on a held-out")
    unscorable = held_out_text(DONE, {"include_feedback": True, "feedback_readings": {"train": 4, "held_out": 2}})
    assert "none of the 2 held-out feedback readings has an answer to score" in unscorable
    assert "config file" in held_out_text(DONE, {"config_file": True, "feedback": []})
