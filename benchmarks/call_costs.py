"""What a call to the local vLLM server costs on this machine, split into prompt and decoding: the
figures behind "8 questions at N x one question" (README, "Speed").

A trained reader writes ~10-token memories, so one question's step is mostly the prefill of its prompt
(the chunk and the template), which 8 questions share; what they do not share is their own ~50 prompt
tokens and the wait for the longest of their memories. Each figure is the best of 3 runs on an empty
prefix cache, prompts cut from the benchmark's novel, every token generated (`ignore_eos`).

    .venv/bin/python -m benchmarks.call_costs [--out runs/benchmarks/call-costs.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import httpx

from app.services.llm import engine_for
from app.settings import Settings
from benchmarks.run import book_prefix


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/benchmarks/call-costs.json"))
    args = ap.parse_args()
    os.environ.setdefault("VLLM_SERVER_DEV_MODE", "1")  # offers /reset_prefix_cache
    settings = Settings(data_dir=Path(tempfile.mkdtemp()), database_url="", engine="vllm-local")
    engine = engine_for(settings)
    base = engine.server.base_url.removesuffix("/v1")
    ids = engine.tokenizer(book_prefix(engine.tokenizer, 2048), add_special_tokens=False)["input_ids"]

    def seconds(prompts: list[str], max_tokens: int) -> float:
        best = float("inf")
        for _ in range(3):
            httpx.post(base + "/reset_prefix_cache", timeout=60).raise_for_status()
            started = time.monotonic()
            body = {
                "model": engine.model_name(),
                "prompt": prompts,
                "max_tokens": max_tokens,
                "temperature": 0,
                "ignore_eos": True,
                "add_special_tokens": False,
            }
            httpx.post(engine.base_url + "/completions", json=body, timeout=600).raise_for_status()
            best = min(best, time.monotonic() - started)
        return best

    rows = []
    for n in (50, 650, 1150):  # a question's own part; a 512- and a 1024-token chunk's update prompt
        rows.append({"call": f"prefill {n} tokens", "seconds": seconds([engine.tokenizer.decode(ids[:n])], 1)})
    short = [engine.tokenizer.decode(ids[i * 20 : (i + 1) * 20]) for i in range(8)]
    for batch in (1, 8):
        one, many = seconds(short[:batch], 1), seconds(short[:batch], 101)
        rows.append({"call": f"decode, batch {batch}, per step", "seconds": (many - one) / 100})
    engine.close()
    for r in rows:
        print(f"{r['call']:32} {1000 * r['seconds']:8.1f} ms", flush=True)
    setup = f"vllm-local, model {settings.model}, {os.cpu_count()} CPUs, LONGREAD_VLLM_ARGS={settings.vllm_args!r}"
    args.out.write_text(json.dumps({"setup": setup, "calls": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
