"""How long a run will take on this deployment: its finished runs' measured times, else the built-in figures.

A run costs its start (the trainer's process, the model, the data; the final adapter) plus its steps. A step
costs its work at the phase's rate, but never less than the phase's shortest step (its first step: the
phase's first step, which warms up): tiny steps are all overhead (a run of 2 SFT and 2 RL tiny steps was
estimated at 12 s from the rates alone and took 117 s)."""

from __future__ import annotations

from dataclasses import dataclass
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
#: Built-in overheads, from the browser test's tiny run (2 SFT + 2 RL steps of one sample, 128-token chunks)
#: on the 2-core development machine on 2026-11-29 (tests/browser/test_training_ui.py in the full suite):
#: 106 s in all, 21 s of it outside its steps; SFT steps of 13 s then 10 s, RL steps of 54 s then 8 s.
START_S = 21.0
FIRST_STEP_S = {"sft": 13.0, "rl": 54.0}
SHORTEST_STEP_S = {"sft": 10.0, "rl": 8.0}


@dataclass(frozen=True)
class Speed:
    """Per phase: seconds per unit of work (`_units`), its first step and its shortest later step; a run's
    time outside its steps."""

    rate: dict[str, float]
    first: dict[str, float]
    shortest: dict[str, float]
    start_s: float
    runs: int  #: finished runs measured (0: the built-in figures)
    phases: tuple[str, ...] = ()  #: the phases measured; the others take the built-in figures


BUILT_IN = Speed({"sft": 1 / SFT_TOKENS_PER_S, "rl": RL_SECONDS_PER_UNIT}, FIRST_STEP_S, SHORTEST_STEP_S, START_S, 0)


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


def measure(runs: list[tuple[TrainConfig, list[dict], float | None]]) -> Speed:
    """This deployment's speed from its finished runs (config, metrics rows, wall seconds): each phase's
    seconds per unit, mean first step and shortest later step, and the mean time a run spent outside its
    steps; the built-in figure for what no run measured."""
    seconds: dict[str, float] = {}
    units: dict[str, float] = {}
    firsts: dict[str, list[float]] = {}
    shortest: dict[str, float] = {}
    outside: list[float] = []
    for config, rows, wall in runs:
        steps = [m for m in rows if m.get("phase") in ("sft", "rl") and m.get("seconds") and m.get("step")]
        seen: set[str] = set()
        for m in steps:
            phase, s = m["phase"], float(m["seconds"])
            seconds[phase] = seconds.get(phase, 0.0) + s
            units[phase] = units.get(phase, 0.0) + _units(config, int(m["step"]) - 1)
            if phase in seen:
                shortest[phase] = min(shortest.get(phase, s), s)
            else:
                seen.add(phase)
                firsts.setdefault(phase, []).append(s)
        if wall is not None and steps:
            outside.append(max(0.0, wall - sum(float(m["seconds"]) for m in steps)))
    rate = {p: seconds[p] / units[p] if units.get(p) else BUILT_IN.rate[p] for p in BUILT_IN.rate}
    return Speed(
        rate,
        {p: sum(firsts[p]) / len(firsts[p]) if p in firsts else BUILT_IN.first[p] for p in BUILT_IN.first},
        {p: shortest.get(p, BUILT_IN.shortest[p]) for p in BUILT_IN.shortest},
        sum(outside) / len(outside) if outside else BUILT_IN.start_s,
        len(outside),
        tuple(p for p in BUILT_IN.rate if units.get(p)),
    )


def _measured_speed(settings: Settings) -> Speed:
    with session_scope(settings.resolved_database_url) as s:
        rows = s.execute(
            select(TrainingRun.config, TrainingRun.run_dir, TrainingRun.started_at, TrainingRun.finished_at).where(
                TrainingRun.status == RunStatus.done
            )
        ).all()
    runs = []
    for raw, run_dir, started, finished in rows:
        try:
            config = TrainConfig(**raw)
        except ValueError:
            continue
        wall = (finished - started).total_seconds() if started and finished else None
        runs.append((config, read_jsonl(Path(run_dir) / "metrics.jsonl"), wall))
    return measure(runs)


def estimate_with(speed: Speed, config: TrainConfig) -> float:
    """Seconds for `config`'s run at `speed`: the start, then each step's work at its phase's rate, at least
    the phase's first step (for its first) or shortest step (for the others)."""
    total = speed.start_s
    for step in range(config.sft_steps + config.rl_steps):
        phase = "sft" if step < config.sft_steps else "rl"
        least = speed.first[phase] if step in (0, config.sft_steps) else speed.shortest[phase]
        total += max(_units(config, step) * speed.rate[phase], least)
    return round(total, 1)


def _steps(config: TrainConfig, phase: str) -> int:
    return config.sft_steps if phase == "sft" else config.rl_steps


def estimate_config(settings: Settings, config: TrainConfig) -> tuple[float, str]:
    speed = _measured_speed(settings)
    if speed.runs:
        basis = f"the measured steps and start of this deployment's {speed.runs} finished run{'s' * (speed.runs != 1)}"
        if unmeasured := [p.upper() for p in ("sft", "rl") if p not in speed.phases and _steps(config, p)]:
            basis += f" (built-in figures for {' and '.join(unmeasured)}, which none of them ran)"
    else:
        basis = (
            "the built-in figures of the 2-core development machine (~200 trained tokens/s for SFT, ~250 s an "
            "RL step at 2,048 tokens with 4 samples x 8 rollouts, tiny steps 8-54 s, "
            f"{START_S:.0f} s to start)"
        )
    return estimate_with(speed, config), basis


def estimate_seconds(settings: Settings, selection: DataSelection, params: RunParams) -> tuple[float, str]:
    """(seconds, basis): the run's expected duration on this deployment, and where the figure comes
    from (the finished runs' measured times, or the built-in figures of the 2-core machine)."""
    check_selection(settings, selection)
    with session_scope(settings.resolved_database_url) as s:
        _, start = start_point(s, settings, None)
    feedback = [Path("feedback-train.jsonl")] if selection.include_feedback else []
    return estimate_config(settings, run_config(selection, params, start, feedback))
