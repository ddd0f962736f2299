"""How long a run will take on this deployment: its finished runs' measured speed, else the built-in figure."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from app.db import session_scope
from app.models import RunStatus, TrainingRun
from app.services.training_runs.config import run_config, start_point
from app.services.training_runs.data import check_selection
from app.services.training_runs.folder import read_jsonl
from app.services.training_runs.shared import DataSelection, RunParams
from app.settings import Settings
from training.config import TrainConfig
from training.data import doc_tokens_at

#: Built-in speed of the 2-core development machine (SmolLM2-135M, LoRA), used until this
#: deployment has finished a run: SFT trains ~200 tokens/s (all threads; 175-198 in the run of
#: benchmarks/retrain_in_browser.py on 2026-11-24); an RL step of 4 samples x 8 rollouts of
#: 2,048-token documents takes ~250 s (one thread), scaling with samples x rollouts x document tokens.
SFT_TOKENS_PER_S = 200.0
RL_SECONDS_PER_UNIT = 250.0 / (4 * 8 * 2048)


def _units(config: TrainConfig, step: int) -> float:
    """The work of step `step` (0-based) in the unit its phase's speed is measured in: SFT, the tokens
    of the conversations it trains (per sample: about one that gains evidence, `sft_keeps` that keep,
    `sft_carry` that carry it, and the answer, whatever the document's length: Trainer.sft_rows); RL, samples x
    rollouts x document tokens."""
    tokens = doc_tokens_at([tuple(c) for c in config.data.curriculum], step)
    if step < config.sft_steps:
        chunks = -(-tokens // config.chunk_tokens)
        conversations = min(chunks, 1 + config.sft_keeps + config.sft_carry) + 1
        return config.sft_samples_per_step * conversations * (config.chunk_tokens + config.memory_tokens)
    return config.samples_per_step * config.group_size * tokens


def _measured_speed(settings: Settings) -> dict[str, tuple[float, int]]:
    """Seconds per unit of each phase over this deployment's finished runs: {phase: (rate, runs)}."""
    with session_scope(settings.resolved_database_url) as s:
        runs = s.execute(
            select(TrainingRun.config, TrainingRun.run_dir).where(TrainingRun.status == RunStatus.done)
        ).all()
    seconds: dict[str, float] = {}
    units: dict[str, float] = {}
    counted: dict[str, set[str]] = {}
    for raw, run_dir in runs:
        try:
            config = TrainConfig(**raw)
        except ValueError:
            continue
        for m in read_jsonl(Path(run_dir) / "metrics.jsonl"):
            phase = m.get("phase")
            if phase in ("sft", "rl") and m.get("seconds") and m.get("step"):
                seconds[phase] = seconds.get(phase, 0.0) + float(m["seconds"])
                units[phase] = units.get(phase, 0.0) + _units(config, int(m["step"]) - 1)
                counted.setdefault(phase, set()).add(run_dir)
    return {p: (seconds[p] / units[p], len(counted[p])) for p in seconds if units[p]}


def estimate_config(settings: Settings, config: TrainConfig) -> tuple[float, str]:
    measured = _measured_speed(settings)
    built_in = {"sft": 1 / SFT_TOKENS_PER_S, "rl": RL_SECONDS_PER_UNIT}
    total = 0.0
    for step in range(config.sft_steps + config.rl_steps):
        phase = "sft" if step < config.sft_steps else "rl"
        total += _units(config, step) * (measured[phase][0] if phase in measured else built_in[phase])
    basis = []
    for phase, steps in (("sft", config.sft_steps), ("rl", config.rl_steps)):
        if not steps:
            continue
        if phase in measured:
            runs = measured[phase][1]
            basis.append(f"{phase.upper()}: the speed of this deployment's {runs} finished run{'s' * (runs != 1)}")
        else:
            basis.append(f"{phase.upper()}: the built-in figure of the 2-core development machine ("
                         + ("~200 trained tokens/s" if phase == "sft" else
                            "~250 s a step at 2,048 tokens with 4 samples x 8 rollouts, scaled") + ")")  # fmt: skip
    return round(total, 1), "; ".join(basis)


def estimate_seconds(settings: Settings, selection: DataSelection, params: RunParams) -> tuple[float, str]:
    """(seconds, basis): the run's expected duration on this deployment, and where the figure comes
    from (a finished run's measured seconds per step, or the built-in figure of the 2-core machine)."""
    check_selection(settings, selection)
    with session_scope(settings.resolved_database_url) as s:
        _, start = start_point(s, settings, None)
    feedback = [Path("feedback-train.jsonl")] if selection.include_feedback else []
    return estimate_config(settings, run_config(selection, params, start, feedback))
