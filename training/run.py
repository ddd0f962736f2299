"""Running a training config: its data, the trainer, the optional vLLM rollout server and when to stop.

`longread train` calls `train()` with what the app knows (feedback documents from its database, the
vLLM virtualenv of its settings); training itself knows nothing of the app.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any, Callable

from inference.agent import AgentConfig
from training.config import TrainConfig
from training.data import TaskSource
from training.policy import init_distributed
from training.trainer import Trainer


def train(
    config: TrainConfig,
    run_dir: Path,
    model_path: Path,
    *,
    resume: bool = False,
    max_steps: int | None = None,
    stop_file: Path | None = None,
    max_minutes: float | None = None,
    documents: Callable[[Any], str] | None = None,
    vllm_python: Path | None = None,
    log: Callable[[str], None] = lambda line: print(line, flush=True),
    progress: Callable[[int, int], None] | None = None,
) -> Trainer:
    """Train (or resume) into `run_dir` until the end, `max_steps` more steps, `stop_file` appearing or
    `max_minutes` passing (the last two save a checkpoint after the step under way). `documents` finds
    a feedback line's document text by id. `log` says what happens (a line per step); `progress(step,
    total)` is told before the first step and after each."""
    from transformers import AutoTokenizer

    init_distributed()  # under `accelerate launch` / torchrun: one process per device
    deadline = time.monotonic() + 60 * max_minutes if max_minutes else None
    source = TaskSource(
        config.data, AutoTokenizer.from_pretrained(model_path), config.seed, documents, reading=AgentConfig.of(config)
    )
    rollouts = None
    if config.rollout_engine == "vllm":
        from training.rollout_server import VLLMRollouts

        if vllm_python is None:
            raise ValueError("rollout_engine vllm needs a vLLM virtualenv's python (LONGREAD_VLLM_PYTHON)")
        rollouts = VLLMRollouts(
            vllm_python,
            model_path,
            source.tokenizer,
            config.lora_r,
            max_model_len=config.chunk_tokens + 2 * config.memory_tokens + 1024,
            log_path=run_dir / "rollout-vllm.log",
            extra_args=shlex.split(config.rollout_vllm_args),
        )
        rollouts.start()
    try:

        def step_done(line: str) -> None:
            log(line)
            if progress:
                progress(trainer.step, trainer.total_steps)

        trainer = Trainer(config, run_dir, model_path, source.draw, log=step_done, rollout_server=rollouts)
        say = log if trainer.rank == 0 else (lambda _line: None)  # one voice under torchrun
        if resume:
            trainer.resume()
            say(f"resuming {run_dir} at step {trainer.step} of {trainer.total_steps}")
        else:
            say(
                f"training into {run_dir} on {trainer.device}: {trainer.total_steps} steps ({config.sft_steps} SFT, "
                f"{config.rl_steps} RL)"
            )
        if trainer.precision != config.precision:
            say(
                f'precision = "{config.precision}" runs in {trainer.precision}: this CPU has no bfloat16 instructions '
                "(AVX-512 BF16, AMX) and would emulate it, many times slower"
            )
        if progress and trainer.rank == 0:
            progress(trainer.step, trainer.total_steps)

        def should_stop() -> bool:
            return bool(stop_file and stop_file.exists()) or bool(deadline and time.monotonic() > deadline)

        trainer.run(max_steps=max_steps, should_stop=should_stop)
    finally:
        if rollouts:
            rollouts.close()
    done = trainer.step == trainer.total_steps
    say(
        f"metrics: {run_dir / 'metrics.jsonl'}, curve: {run_dir / 'curve.png'}, tracker: {trainer.tracking_dir}"
        + (
            f", adapter: {run_dir / 'adapter'}"
            if done
            else f"; stopped at step {trainer.step}: resume with --resume {run_dir}"
        )
    )
    return trainer
