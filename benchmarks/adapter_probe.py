"""What an adapter writes for 8 open questions (the throughput benchmark's until issue 38) on the first
4,096 tokens of Little Women (transformers, float32, greedy, 1024-token chunks, chunk-first), and how likely
its first token is to start the empty memory for the weather question at chunk 1: the probe behind the
open-question rounds (small-sft-open*.toml; their probe.json in training/results.jsonl).

    .venv/bin/python -m benchmarks.adapter_probe ADAPTER [ADAPTER ...] > probe.json

An ADAPTER is a folder or `sha256:<hex>` (training/weights.py finds it).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from benchmarks.run import book_prefix
from inference.agent import AgentConfig, MemoryAgent
from inference.engines.transformers_engine import TransformersEngine
from inference.models import BUNDLED, model_folder
from training.policy import prompt_ids
from training.weights import resolve_adapter

#: The throughput benchmark's questions until issue 38 (close to what the open-question rounds trained on, so
#: the benchmark now asks held-out ones); this probe and benchmarks.memory_caps keep them to stay comparable.
QUESTIONS = [
    "Who is the main character, and what does she want?",
    "Where does the story take place?",
    "Which letters are written, and by whom?",
    "Who marries whom?",
    "What is the weather like when the story begins?",
    "Which journeys are made, and why?",
    "Who is the oldest person mentioned?",
    "What does the heroine fear most?",
]
WEATHER = QUESTIONS[4]


def probe(adapter: str) -> dict[str, Any]:
    import torch

    engine = TransformersEngine(model_folder(BUNDLED, resolve_adapter(adapter)))
    agent = MemoryAgent(
        engine, AgentConfig(chunk_tokens=1024, memory_tokens=128, answer_tokens=64, template_set="chunk-first")
    )
    document = book_prefix(engine.tokenizer, 4096)
    readings = agent.read_batch([(q, document) for q in QUESTIONS])
    first_update = readings[QUESTIONS.index(WEATHER)].messages[0]
    with torch.no_grad():
        logits = engine.model(torch.tensor([prompt_ids(engine.tokenizer, first_update)])).logits[0, -1]
    top = torch.topk(torch.softmax(logits, -1), 5)
    return {
        "adapter": adapter,
        "weather_first_token": [
            (engine.tokenizer.decode([int(i)]), round(v.item(), 3)) for v, i in zip(top.values, top.indices)
        ],
        "memories_and_tokens": {
            r.problem: [[c.text, c.completion_tokens] for c in r.completions[:-1]] for r in readings
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("adapters", nargs="+", help="adapter folders or sha256:<hex>")
    args = parser.parse_args(argv)
    print(json.dumps([probe(a) for a in args.adapters], indent=1, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
