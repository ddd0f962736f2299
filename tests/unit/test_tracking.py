"""The experiment tracker (TensorBoard event files): what training and evaluation log is what
TensorBoard's own reader (EventAccumulator, behind its UI) reads back."""

from __future__ import annotations

import pytest

from inference.agent import AgentConfig, MemoryAgent
from tests.fakes import FakeEngine
from training.evaluate import evaluate, log_scores, summarize
from training.tasks import Task
from training.tracking import Tracker, read_scalars, tracking_root

STEPS = [
    {"phase": "sft", "loss": 0.91, "tokens": 3000, "grad_norm": 1.25},
    {"phase": "sft", "loss": 0.52, "tokens": 2900, "grad_norm": 0.75},
    {"phase": "rl", "reward": 0.375, "kl": 1e-4, "tokens_per_s": None, "loss": -0.02},
]


def _log(folder, steps, first=1, resume_step=0):
    with Tracker(folder, resume_step=resume_step) as tracker:
        for step, metrics in enumerate(steps, first):
            tracker.scalars(metrics, step, prefix=f"{metrics['phase']}/")


def test_a_short_run_reads_back_step_by_step(tmp_path):
    _log(tmp_path, STEPS)
    got = read_scalars(tmp_path)
    assert set(got) == {"sft/loss", "sft/tokens", "sft/grad_norm", "rl/reward", "rl/kl", "rl/loss"}  # no None, no text
    assert [s for s, _ in got["sft/loss"]] == [1, 2]
    assert [v for _, v in got["sft/loss"]] == pytest.approx([0.91, 0.52])  # float32 in the event file
    assert got["sft/tokens"] == [(1, 3000.0), (2, 2900.0)]
    assert got["rl/reward"] == [(3, 0.375)] and got["rl/kl"][0][1] == pytest.approx(1e-4)


def test_a_resumed_run_keeps_one_point_per_step(tmp_path):
    """A run stopped after logging step 3 but saved at step 1 redoes steps 2-3: the curve has the redone values."""
    _log(tmp_path, STEPS)
    redone = [{"phase": "sft", "loss": 0.4}, {"phase": "rl", "loss": 0.01}]
    _log(tmp_path, redone, first=2, resume_step=1)
    got = read_scalars(tmp_path)
    assert [s for s, _ in got["sft/loss"]] == [1, 2]
    assert [v for _, v in got["sft/loss"]] == pytest.approx([0.91, 0.4])
    assert [s for s, _ in got["rl/loss"]] == [3] and got["rl/loss"][0][1] == pytest.approx(0.01)


def test_evaluation_scores_read_back(tmp_path, tokenizer):
    doc = "The red box is in Oslo. " * 5
    tasks = [
        Task(f"t{i}", doc, "Where?", ("Oslo",) if i % 2 else ("Rome",), kind="single-needle", doc_tokens=2048)
        for i in range(4)
    ]
    agent = MemoryAgent(
        FakeEngine(tokenizer, lambda m: r"\boxed{Oslo}" if "Your answer" in m else "Oslo."),
        AgentConfig(chunk_tokens=64),
    )
    out = {
        "config": {"label": "fake"},
        "summary": summarize(evaluate(agent, tasks, "synthetic", lambda t: "2K")),
        "timing": [{"set": "2K", "tokens_per_s": 812.5}],
    }
    log_scores(out, tmp_path)
    got = read_scalars(tmp_path)
    assert got["synthetic/2K/single-needle/sub_em"] == [(0, 0.5)]
    assert got["synthetic/2K/single-needle/n"] == [(0, 4.0)]
    assert got["speed/2K/tokens_per_s"] == [(0, 812.5)]


def test_the_store_defaults_to_runs_tracking(monkeypatch):
    monkeypatch.delenv("LONGREAD_TRACKING_DIR", raising=False)
    assert tracking_root().as_posix() == "runs/tracking"
    monkeypatch.setenv("LONGREAD_TRACKING_DIR", "/elsewhere")
    assert tracking_root().as_posix() == "/elsewhere"
