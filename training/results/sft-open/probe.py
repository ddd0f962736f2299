"""What an adapter writes for the throughput benchmark's 8 questions on the first 4,096 tokens of Little Women
(transformers, float32, greedy, 1024-token chunks, chunk-first), and how likely its first token is to start the
empty memory for the weather question at chunk 1.

    PYTHONPATH=. .venv/bin/python training/results/sft-open/probe.py ADAPTER [ADAPTER ...]
"""

import json
import sys
import tempfile
from pathlib import Path

import torch

from benchmarks.run import QUESTIONS, book_prefix
from inference.adapters import merged_model
from inference.agent import AgentConfig, MemoryAgent
from inference.engines.transformers_engine import TransformersEngine
from inference.models import MODEL_CACHE, resolve_model_path
from training.policy import prompt_ids

base = resolve_model_path("smollm2", MODEL_CACHE)
for adapter in sys.argv[1:]:
    engine = TransformersEngine(merged_model(base, Path(adapter), Path(tempfile.mkdtemp())))
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=1024, memory_tokens=128, answer_tokens=64,
                                            template_set="chunk-first"))
    document = book_prefix(engine.tokenizer, 4096)
    readings = agent.read_batch([(q, document) for q in QUESTIONS])
    weather = readings[QUESTIONS.index("What is the weather like when the story begins?")].messages[0]  # chunk 1
    with torch.no_grad():
        p = torch.softmax(engine.model(torch.tensor([prompt_ids(engine.tokenizer, weather)])).logits[0, -1], -1)
    top = torch.topk(p, 5)
    print(json.dumps({"adapter": adapter,
                      "weather_first_token": [(engine.tokenizer.decode([int(i)]), round(v.item(), 3))
                                              for v, i in zip(top.values, top.indices)],
                      "memories_and_tokens": {r.problem: [[c.text, c.completion_tokens] for c in r.completions[:-1]]
                                              for r in readings}}, indent=1), flush=True)
