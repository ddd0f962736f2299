"""Where a reader fails on governing law, one chunk at a time, teacher-forced on the held-out contracts.

Each probe gives the reader the oracle's memory and one chunk (greedy, in-process), so a failure is
the chunk's own, not an earlier one's:

- capture: the memory before the clause's chunk, then that chunk: does the new memory name the law?
- carry: the clause as memory, then a later chunk (2 a contract): is the law still there?
- keep-empty: "No relevant information yet.", then an earlier chunk (2 a contract): is it kept as is?

    .venv/bin/python -m benchmarks.clause_skills [--adapter DIR] [--split held-out|train]

Prints each capture or carry that failed and the three counts (3 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from inference.agent import AgentConfig, MemoryAgent, holds_nothing
from inference.chunking import split_into_chunks
from inference.engines.transformers_engine import TransformersEngine
from inference.models import BUNDLED, READER_ADAPTER, model_folder
from training.config import TrainConfig
from training.policy import load_policy
from training.tasks import NO_EVIDENCE_MEMORY, contract_tasks, oracle_memories


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", type=Path, default=READER_ADAPTER, help="a peft LoRA folder (default: the reader)")
    parser.add_argument("--split", default="held-out", choices=["held-out", "train"])
    args = parser.parse_args()
    c = TrainConfig()
    model_path = model_folder(BUNDLED)
    model, tokenizer = load_policy(model_path, c.lora_r, c.lora_alpha, 0.0, c.lora_targets, args.adapter, 0)
    agent = MemoryAgent(TransformersEngine.from_model(model, tokenizer), AgentConfig.of(c))
    rng = random.Random(0)
    probes = []  # (skill, task, memory, chunk)
    for t in contract_tasks(args.split, ["Governing Law"]):
        if not t.evidence or ";" in t.answers[0]:  # several laws: no one clause to capture
            continue
        chunks = [ch.text(t.document) for ch in split_into_chunks(t.document, tokenizer, c.chunk_tokens)]
        memories = oracle_memories(t, chunks)
        k = next(i for i, m in enumerate(memories) if m != NO_EVIDENCE_MEMORY)
        probes.append(("capture", t, memories[k - 1] if k else NO_EVIDENCE_MEMORY, chunks[k]))
        later = rng.sample(range(k + 1, len(chunks)), min(2, len(chunks) - k - 1))
        probes += [("carry", t, memories[k], chunks[j]) for j in later]
        probes += [("keep-empty", t, NO_EVIDENCE_MEMORY, chunks[j]) for j in rng.sample(range(k), min(2, k))]
    messages = agent.update_messages([(t.question, m, ch) for _, t, m, ch in probes])
    outputs = agent.engine.generate(messages, c.memory_tokens)
    counts: dict[str, list[bool]] = {}
    for (skill, t, _, _), out in zip(probes, outputs):
        ok = holds_nothing(out.text) if skill == "keep-empty" else t.answers[0].lower() in out.text.lower()
        counts.setdefault(skill, []).append(ok)
        if not ok and skill != "keep-empty":
            print(f"{skill} {t.id} ({t.answers[0]}): {out.text[:100]!r}")
    print(args.adapter, ", ".join(f"{skill} {sum(v)}/{len(v)}" for skill, v in counts.items()))


if __name__ == "__main__":
    main()
