"""In-process RL rollouts: the seconds and tokens of `Trainer.rollouts` on the training tests' tiny task (the
bundled SmolLM2, a fresh LoRA, the run's precision by the CPU), the same seeded batch read `--repeats` times.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.rollout_speed [--groups 2] [--repeats 3] [--precision float32]

To compare with another tree, run the same file there: `cp benchmarks/rollout_speed.py OTHER/benchmarks/ && cd
OTHER && .venv/bin/python -m benchmarks.rollout_speed`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=2, help="tasks a batch (each read group_size = 8 times)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--precision", choices=["bfloat16", "float32"], default="bfloat16", help="as a recipe asks it")
    args = ap.parse_args()

    from inference.models import model_folder
    from tests.integration.test_training import tiny_config, tiny_tasks
    from training.trainer import Trainer

    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(
            tiny_config(precision=args.precision),
            Path(run_dir),
            model_folder("smollm2"),
            tiny_tasks,
            log=lambda _: None,
        )
        tasks = tiny_tasks(0, args.groups)
        trainer.rollouts(tasks)  # warm
        print(f"precision {trainer.precision}, {args.groups * trainer.config.group_size} rollouts a batch")
        for _ in range(args.repeats):
            cpu, wall = time.process_time(), time.perf_counter()
            groups = trainer.rollouts(tasks)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            calls = [c for group in groups for t in group for c in t.completions]
            generated = sum(len(c.token_ids) for c in calls)
            prompt = sum(c.prompt_tokens for c in calls)
            print(
                f"{wall:5.2f} s ({cpu:5.1f} CPU s): {len(calls)} calls, {prompt} prompt and {generated} generated "
                f"tokens, {1000 * cpu / generated:.0f} CPU ms a generated token"
            )


if __name__ == "__main__":
    main()
