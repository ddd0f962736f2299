"""What an extractive answer-step config teaches, counted: its SFT draws replayed (`TaskSource.draw`, pure in the
seed and step) through the capture as the trainer runs it (`MemoryAgent.extract`, the shipped scorer, no model), and
each sample counted drawn and taught by its answer: "yes", "no" (a clause question's gold) or its task kind. A memory
that keeps nothing teaches no row, and with `sft_answers_supported` neither does one that lacks a value's answer
(`training.answer_rows`), so the mix taught is not the mix drawn (docs/experiments/2026-12-06-extractive-answers.md).

    .venv/bin/python -m benchmarks.answer_mix training/configs/small-sft-extractive-answers4.toml --steps 20
"""

from __future__ import annotations

import argparse
from collections import Counter
from types import SimpleNamespace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--steps", type=int, default=None, help="the first N steps (default: all SFT steps)")
    args = ap.parse_args()

    from transformers import AutoTokenizer

    from inference.agent import AgentConfig, MemoryAgent
    from inference.models import model_folder
    from training.answer_rows import final_memory, teaches
    from training.config import load_config
    from training.data import TaskSource

    config = load_config(args.config)
    tokenizer = AutoTokenizer.from_pretrained(model_folder("smollm2"))
    source = TaskSource(config.data, tokenizer, config.seed, None, reading=AgentConfig.of(config))
    agent = MemoryAgent(SimpleNamespace(tokenizer=tokenizer), AgentConfig.of(config))  # extract needs no engine
    drawn: Counter[str] = Counter()
    taught: Counter[str] = Counter()
    for step in range(args.steps or config.sft_steps):
        for task in source.draw(step, config.sft_samples_per_step):
            kind = {("Yes",): "yes", ("No",): "no"}.get(tuple(task.answers), task.kind.split(":")[0])
            drawn[kind] += 1
            taught[kind] += teaches(task, final_memory(agent, task), config.sft_answers_supported)
        print(f"steps 1-{step + 1}: drawn {dict(drawn)}; taught {dict(taught)}", flush=True)


if __name__ == "__main__":
    main()
