"""A training run's estimate (app/services/training_runs/estimate.py): a run's start plus its steps, each at
least its phase's first or shortest step, from this deployment's finished runs or the built-in figures."""

from __future__ import annotations

import pytest

from app.services.training_runs.estimate import BUILT_IN, _units, estimate_with, measure
from training.config import make_config


def config(sft: int, rl: int, tokens: int = 256, samples: int = 1, group: int = 2):
    return make_config(
        {
            "preset": "small",
            "sft_steps": sft,
            "rl_steps": rl,
            "chunk_tokens": 128,
            "memory_tokens": 32,
            "sft_samples_per_step": samples,
            "samples_per_step": samples,
            "group_size": group,
            "data": {"curriculum": [(tokens, sft + rl)], "contracts": False},
        }
    )


def test_a_tiny_run_costs_its_start_and_its_steps_overheads_not_its_few_tokens():
    tiny, b = config(2, 2), BUILT_IN
    by_rate = sum(_units(tiny, i) * b.rate["sft" if i < 2 else "rl"] for i in range(4))
    assert by_rate < 15  # what the estimate said before: 12 s for a run that took 117 s
    assert estimate_with(b, tiny) == b.start_s + b.first["sft"] + b.shortest["sft"] + b.first["rl"] + b.shortest["rl"]
    assert estimate_with(b, tiny) == 106.0  # the run the built-in figures come from took 106 s


def test_large_steps_cost_their_work_at_the_phase_rate():
    small, large = config(0, 3, tokens=2048, samples=4, group=8), config(0, 3, tokens=8192, samples=4, group=8)
    per_step = (estimate_with(BUILT_IN, large) - BUILT_IN.start_s) / 3
    assert per_step == pytest.approx(4 * 8 * 8192 * BUILT_IN.rate["rl"], rel=1e-3)
    assert estimate_with(BUILT_IN, large) - BUILT_IN.start_s == pytest.approx(
        4 * (estimate_with(BUILT_IN, small) - BUILT_IN.start_s), rel=1e-3
    )


def test_finished_runs_set_the_rate_the_first_and_shortest_steps_and_the_start():
    run = config(2, 2)
    rows = [
        {"step": 1, "phase": "sft", "seconds": 46.0},
        {"step": 2, "phase": "sft", "seconds": 21.0},
        {"step": 3, "phase": "rl", "seconds": 113.0},
        {"step": 4, "phase": "rl", "seconds": 16.0},
    ]
    speed = measure([(run, rows, 245.0)])
    assert speed.runs == 1 and set(speed.phases) == {"sft", "rl"}
    assert speed.start_s == pytest.approx(245.0 - 196.0)
    assert speed.first == {"sft": 46.0, "rl": 113.0} and speed.shortest == {"sft": 21.0, "rl": 16.0}
    assert speed.rate["sft"] == pytest.approx(67.0 / (_units(run, 0) + _units(run, 1)))
    # the same run again: each phase's first step, then its mean step (the rate), at least its shortest
    assert estimate_with(speed, run) == pytest.approx(49.0 + 46.0 + 33.5 + 113.0 + 64.5, abs=0.1)


def test_a_phase_no_run_measured_keeps_the_built_in_figures():
    speed = measure([(config(1, 0), [{"step": 1, "phase": "sft", "seconds": 30.0}], None)])
    assert speed.runs == 0 and speed.start_s == BUILT_IN.start_s  # no wall time: the start is not measured
    assert speed.rate["rl"] == BUILT_IN.rate["rl"] and speed.shortest == BUILT_IN.shortest
    assert speed.first == {"sft": 30.0, "rl": BUILT_IN.first["rl"]} and speed.phases == ("sft",)
