"""How fast the extractive memory reads (issue 51, item 5): wall seconds of `MemoryAgent.read_batch` on the
in-process engine (the reader's weights, torch on `--threads` threads), or with `--engine vllm-local` on the app's
default engine (its vLLM server for the reader, started before the clock), the chunking, the scoring of every
sentence and the one answer call all included. Against the generative memory on the same document where it is given
(`--generative`: one rewrite of the memory per chunk, decoded).

- one question on an 8K and a 32K-token window of a novel;
- 8 questions against 1 on the 32K window;
- a training contract's review questions (all it carries: 40 for the first) against 1;
- one question on a 1M-token document (the four novels, repeated).

    .venv/bin/python -m benchmarks.extractive_speed [--threads 2] [--generative 8192] [--engine vllm-local]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def timed(agent, items) -> tuple[float, list]:
    t = time.perf_counter()
    out = agent.read_batch(items)
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--engine", choices=("transformers", "vllm-local"), default="transformers")
    ap.add_argument("--generative", type=int, nargs="*", default=[8192], help="window sizes read generatively too")
    ap.add_argument("--out", type=Path, default=Path("runs/bench/extractive_speed.json"))
    args = ap.parse_args()

    import torch

    from inference.agent import AgentConfig, MemoryAgent
    from inference.engines.transformers_engine import TransformersEngine
    from inference.models import model_folder
    from training.tasks import BOOKS_DIR, CONTRACTS_TRAIN_DIR, contract_cases

    torch.set_num_threads(args.threads)
    if args.engine == "vllm-local":
        from app.services.llm import engine_for
        from app.settings import Settings

        engine = engine_for(Settings(engine="vllm-local", model="smollm2-reader"))
        engine.generate(["Say yes."], 1)  # the server's start is not the reading's time
    else:
        engine = TransformersEngine(model_folder("smollm2-reader"))
    tok = engine.tokenizer
    books = "\n\n".join(p.read_bytes().decode("cp1252") for p in sorted(BOOKS_DIR.glob("pg*.txt")))
    ids = tok(books, add_special_tokens=False)["input_ids"]

    def window(n: int) -> str:
        return tok.decode((ids * (n // len(ids) + 1))[:n])

    sizes = {"chunk_tokens": 1024, "memory_tokens": 128, "answer_tokens": 64, "template_set": "chunk-first"}
    extractive = MemoryAgent(engine, AgentConfig(**sizes, memory_policy="extractive"))
    question = "Who is the narrator's sister?"
    rows = []

    def record(name: str, seconds: float, questions: int, tokens: int) -> None:
        rows.append({"case": name, "seconds": round(seconds, 2), "questions": questions, "doc_tokens": tokens})
        print(f"{name:<44} {seconds:8.1f} s  ({questions} question(s), {tokens:,} tokens)", flush=True)

    for n in (8192, 32768):
        text = window(n)
        record(f"extractive, 1 question, {n // 1024}K", timed(extractive, [(question, text)])[0], 1, n)
        if n in args.generative:
            generative = MemoryAgent(engine, AgentConfig(**sizes))
            record(f"generative, 1 question, {n // 1024}K", timed(generative, [(question, text)])[0], 1, n)
    text = window(32768)
    eight = [f"{question} ({i})" for i in range(8)]
    record("extractive, 8 questions, 32K", timed(extractive, [(q, text) for q in eight])[0], 8, 32768)

    case = contract_cases(CONTRACTS_TRAIN_DIR)[0]
    contract = (CONTRACTS_TRAIN_DIR / case["txt"]).read_text(encoding="utf-8")
    n = len(tok(contract, add_special_tokens=False)["input_ids"])
    review = [qa["question"] for qa in case["qa"]]
    record("extractive, 1 question, contract", timed(extractive, [(review[0], contract)])[0], 1, n)
    record(
        f"extractive, review ({len(review)} questions), contract",
        timed(extractive, [(q, contract) for q in review])[0],
        len(review),
        n,
    )
    record("extractive, 1 question, 1M", timed(extractive, [(question, window(1 << 20))])[0], 1, 1 << 20)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"threads": args.threads, "engine": args.engine, "rows": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
