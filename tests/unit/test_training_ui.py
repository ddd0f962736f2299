"""The Training and Models pages' pure parts: reading the form, the evaluation side by side, the run's
headline (escaped), and the registry's lineage through runs."""

from __future__ import annotations

import html
import re
from datetime import UTC, date, datetime
from types import SimpleNamespace

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from app.services.registry import lineage
from app.services.training_runs import RunView
from app.services.training_runs.shared import start_label
from app.ui.models_page import MODEL_COLUMNS, model_rows
from app.ui.training_views import (
    EVAL_COLUMNS,
    PLOTS,
    curve_axes,
    curve_plot,
    curves,
    describe_run,
    eval_view,
    parse_params,
    parse_selection,
    round_range,
)

IMG = "<img src=x onerror=alert(1)>"


def _run(**kw) -> RunView:
    fields = dict(
        id=7,
        name=f"tiny {IMG} **run**",
        status="failed",
        created_by="ada",
        created_at=datetime.now(UTC),
        started_at=None,
        finished_at=None,
        step=2,
        total_steps=3,
        eta_s=None,
        queue_position=None,
        attempts=1,
        error=None,
        start_version="base smollm2",
        version_id=None,
        evaluation=None,
        config={},
        selection={},
        run_dir="/tmp/run-7",
        resumable=True,
    )
    return RunView(**{**fields, **kw})


def test_the_form_becomes_a_selection_and_params() -> None:
    s = parse_selection(True, " 2025-03-01 ", [3, 4], False, None, ["single-needle"], "256, 1024 2048")
    assert (s.include_feedback, s.feedback_since, s.feedback_ids, s.lengths) == (
        True,
        date(2025, 3, 1),
        (3, 4),
        (256, 1024, 2048),
    )
    assert parse_selection(False, "", None, False, [], [], "").feedback_ids is None
    with pytest.raises(ValueError, match="feedback since: '1 March' is not a day; write it as YYYY-MM-DD"):
        parse_selection(True, "1 March", None, False, [], [], "256")
    with pytest.raises(ValueError, match="lengths: '2K' is not a list of whole numbers"):
        parse_selection(False, "", None, False, [], [], "2K")
    p = parse_params({"sft_steps": 2.0, "learning_rate": 0.001, "sft_carry": 1.0, "sft_samples_per_step": None})
    assert (p.sft_steps, p.learning_rate, p.extra) == (2, 0.001, {"sft_carry": 1})
    assert isinstance(p.sft_steps, int) and isinstance(p.extra["sft_carry"], int)
    # the feedback share is a data field: it goes under "data", where the service's config takes it
    p = parse_params({"rl_steps": 3.0, "mix_feedback": 0.5})
    assert (p.rl_steps, p.extra) == (3, {"data": {"mix_feedback": 0.5}})


def test_the_evaluation_side_by_side_with_the_held_out_feedback() -> None:
    def side(label: str, sub_em: float) -> dict:
        rows = [
            {"suite": "synthetic", "group": "256", "kind": k, "n": 2, "sub_em": sub_em, "exact_match": sub_em / 2}
            for k in ("multi-hop", "single-needle")
        ]
        rows.append({"suite": "synthetic", "group": "256", "kind": "all", "n": 4, "sub_em": sub_em, "exact_match": 0.0})
        misses = {"answerable": 4, "never-entered": 1 - sub_em, "overwritten": 0.0, "answer-missed": None}
        return {
            "label": label,
            "summary": rows,
            "suites": {"synthetic": misses},
            "cases": {"sub_em": sub_em, "exact_match": 0.0, "n": 1, "cases": []},
        }

    evaluation = {"status": "done", "baseline": side(f"base {IMG}", 0.25), "candidate": side("run 7", 0.75)}
    note, table, plot = eval_view(evaluation)
    assert IMG not in note and "&lt;img" in note
    # Where the misses happened, per suite, baseline → this run.
    assert (
        "synthetic (4 answerable): never entered the memory 75.0% → 25.0%; entered, then overwritten 0.0% → "
        "0.0%; in the final memory, answer missed – → –"
    ) in note
    assert "Where the misses happened" not in eval_view({**evaluation, "baseline": {}, "candidate": {}})[0]
    rows = table["value"]
    assert table["visible"] is True
    assert rows[0] == ["synthetic", "256 tokens", "multi-hop", 2, "25.0%", "75.0%", "+50.0%", "12.5%", "37.5%"]
    assert rows[-1][:7] == ["feedback", "held-out feedback", "readers' questions", 1, "25.0%", "75.0%", "+50.0%"]
    # One pair of bars per set: a set of several kinds by its `all` row.
    assert plot.values.tolist() == [
        ["256 tokens · baseline", 0.25, "baseline"],
        ["256 tokens · this run", 0.75, "this run"],
        ["held-out feedback · baseline", 0.25, "baseline"],
        ["held-out feedback · this run", 0.75, "this run"],
    ]
    nothing = eval_view(None)
    assert nothing[1]["visible"] is False
    assert nothing[2].values.tolist() == [
        ["–", 0.0, "baseline"],
        ["–", 0.0, "this run"],
    ]  # both colours, from the start
    assert "Evaluate" in eval_view(None)[0] and eval_view(None, done=False)[0] == "A run is evaluated once it is done."
    failed = eval_view({"status": "failed", "error": f"`longread eval` stopped; its log:\nTraceback\nboom {IMG}"})
    assert _rendered(failed[0])[1].startswith(f"The evaluation failed: `longread eval` stopped; its log: … boom {IMG}")
    assert failed[1]["value"] == []


def test_the_models_tab_tells_the_bundled_versions_apart_and_says_its_metrics_in_words() -> None:
    """The stored names (smollm2, smollm2-reader, smollm2-reader-extractive) stay in the lineage, the database and
    the API; the page names each bundled version by what it is, and its sets and metrics in words."""

    def version(i: int, name: str, metrics: dict, active: bool = False) -> dict:
        return {
            "id": i,
            "name": name,
            "active": active,
            "key_metrics": metrics,
            "adapter_path": None,
            "base_model": "smollm2",
            "engine": None,
            "lineage": ["smollm2", name],
            "created_at": "2026-12-01T10:00:00",
        }

    settings = SimpleNamespace(model="smollm2-reader", engine="vllm-local")
    rows = model_rows(
        settings,
        [
            version(1, "smollm2", {"2K": 0.4062, "Governing Law": 0.1}),
            version(2, "smollm2-reader", {"gold No": 1.0, "gold Yes": 0.0}),
            version(3, "smollm2-reader-extractive", {"128K": 0.875}, active=True),
            version(4, "run-4: contracts", {"sub_em": 0.5}),
        ],
    )
    assert [r[1] for r in rows] == [
        "no version: Longread reader (rewrites its memory)",
        "SmolLM2-135M, untrained",
        "Longread reader (rewrites its memory)",
        "Longread reader (keeps sentences)",
        "run-4: contracts",
    ]
    assert rows[3][3] == "smollm2 → smollm2-reader-extractive"  # the lineage keeps the stored names
    assert [r[4] for r in rows[1:]] == [
        "2K tokens: 41%; Governing Law: 10%",
        "answer is No: 100%; answer is Yes: 0%",
        "128K tokens: 88%",
        "all questions: 50%",
    ]
    assert MODEL_COLUMNS[4] == "Answers right on held-out sets (gold in answer)"
    words = " ".join([*MODEL_COLUMNS, *EVAL_COLUMNS, eval_view({"status": "done", "baseline": {}, "candidate": {}})[0]])
    assert not re.search(r"sub-EM|\bEM\b|gold No", words, re.IGNORECASE), words
    evaluation = {"status": "done", "baseline": {"label": "smollm2-reader-extractive"}, "candidate": {"label": "run 7"}}
    note = _rendered(eval_view(evaluation)[0])[1]
    assert note.startswith("Baseline: Longread reader (keeps sentences); this run: run 7."), note


def test_a_failed_run_says_why_in_its_first_and_last_line_escaped() -> None:
    error = "the trainer stopped (exit code 1); the end of its log:\nTraceback …\n\nOSError: no model at /x <b>\n"
    tags, text = _rendered(describe_run(_run(error=error)))
    assert set(tags) == {"p", "strong", "br"}, tags  # the name's and the error's markup stays text
    assert text.startswith(f"#7 tiny {IMG} **run** · failed · step 2 of 3 · from base smollm2 · by ada"), text
    assert (
        "Error: the trainer stopped (exit code 1); the end of its log: … OSError: no model at /x <b> (the log "
        "below has the rest)"
    ) in text
    assert "Resume continues from its last checkpoint." in text
    assert "ETA 1 min 05 s" in describe_run(_run(status="running", eta_s=65))


def _rendered(markdown: str) -> tuple[list[str], str]:
    """The tags and the text a browser shows for Markdown (as tests/unit/test_ui_text.py renders it)."""
    out = MarkdownIt("commonmark").render(markdown)
    return re.findall(r"</?([a-zA-Z0-9]+)", out), html.unescape(re.sub(r"<[^>]*>", "", out))


def test_a_run_says_what_it_starts_from() -> None:
    """Its version when it has one; else its config's base model and the adapter it loads (a run queued from
    a config file has no version, yet may start from the reader or any adapter); the bare base only when so."""
    digest = "sha256:" + "be07" * 16
    config = {"model": "smollm2", "init_adapter": digest}
    assert start_label(config, "run-3-contracts") == "run-3-contracts"
    assert start_label(config, None) == f"smollm2 + adapter {digest}"
    assert start_label({**config, "init_adapter": "/runs/sft/adapter"}, None) == "smollm2 + adapter /runs/sft/adapter"
    assert start_label({"model": "/models/qwen", "init_adapter": None}, None) == "base /models/qwen"
    _, text = _rendered(describe_run(_run(start_version=start_label(config, None))))
    assert f"· from smollm2 + adapter {digest} ·" in text


def test_lineage_follows_runs_back_to_the_base() -> None:
    v1 = {"id": 1, "name": "run-1: first", "base_model": "smollm2", "adapter_path": "/a1"}
    v2 = {"id": 2, "name": "run-2: second", "base_model": "smollm2", "adapter_path": "/a2"}
    v3 = {"id": 3, "name": "run-3: third", "base_model": "smollm2", "adapter_path": "/a3"}
    by_hand = {"id": 4, "name": "imported", "base_model": "smollm2", "adapter_path": "/a4"}
    made_by = {
        1: _run(id=1, name="first", start_version="base smollm2"),
        2: _run(id=2, name="second", start_version=v1["name"]),
        3: _run(id=3, name="third", start_version="smollm2 + adapter /reader"),  # queued from a config file
    }
    by_name = {v["name"]: v for v in (v1, v2, v3, by_hand)}
    assert lineage(v2, made_by, by_name) == [
        "base smollm2",
        "run #1 first",
        "run-1: first",
        "run #2 second",
        "run-2: second",
    ]
    assert lineage(v3, made_by, by_name) == ["smollm2 + adapter /reader", "run #3 third", "run-3: third"]
    assert lineage(by_hand, made_by, by_name) == ["smollm2", "imported"]


def test_a_curve_of_one_step_shows_its_point_on_whole_step_axes_set_apart_from_its_data() -> None:
    """Points, not a line (drawn only under the pointer); x in whole steps. The data and the axes go in
    separate updates (curve_axes): x from 0 to past the last step and at least 20 wide, whole-step ticks;
    y 0 to 1 for fractions, round limits around the data otherwise (a flat KL of 0 keeps an axis of height)."""
    kl = curve_plot("KL to the reference", "plot-kl")
    assert kl.get_mark() == "point" and kl.x_axis_format == "d" and kl.x_lim is None and kl.y_lim is None
    rows = [{"step": 3, "phase": "rl", "reward": 0.5, "kl": 0.0, "tokens_per_s": 250.0}]
    frames = curves(rows)
    by_key = dict(zip([key for *_, key in PLOTS], frames, strict=True))
    assert all(isinstance(f, pd.DataFrame) for f in frames)
    assert by_key["kl"].to_dict("records") == [{"step": 3, "value": 0.0, "metric": "kl"}]
    assert by_key["loss"].empty  # no loss logged
    axes = dict(zip([key for *_, key in PLOTS], curve_axes(frames, total_steps=4), strict=True))
    assert {str(a["x_lim"]) for a in axes.values()} == {"[0, 20]"}
    assert curve_axes(frames, total_steps=60)[0]["x_lim"] == [0, 61]  # the last step is not on the edge
    assert axes["reward"]["y_lim"] == axes["clip_fraction"]["y_lim"] == axes["kl"]["y_lim"] == [-0.05, 1.05]
    assert axes["tokens_per_s"]["y_lim"] == [0.0, 500.0]
    assert "value" not in axes["kl"] and "visible" not in axes["kl"]  # axes only: the data went before


def test_round_limits_hold_the_data_and_move_only_when_it_leaves_them() -> None:
    assert round_range([0.5234, 0.2617]) == [0.25, 0.54]
    assert round_range([0.0369, 0.0492, 0.0615]) == [0.035, 0.063]
    assert round_range([0.0369, 0.0492, 0.0615, 0.0571]) == [0.035, 0.063]  # a point inside: the same limits
    assert round_range([1.0, 1.0]) == [0.0, 2.0] and round_range([-0.2]) == [-0.4, 0.0]
    assert round_range([]) == round_range([0.0, 0.0]) == [-0.05, 1.05]
    assert round_range([0.0, 0.00031]) == [-0.00001, 0.00032]  # a point at 0 is not on the edge
    assert round_range([-0.3, 0.2]) == [-0.31, 0.21]
