"""Seconds per chunk of the in-process transformers engine, the figure behind
app.services.documents.ENGINE_SPEEDS["transformers"] (the reading-time estimate shown before a
question). One question, the default sizes (512-token chunk, 128-token memory), MemAgent's update
template on real novel text; prompt and written tokens timed separately, in CPU seconds of one
torch thread so that a busy shared machine does not distort the figure.

    .venv/bin/python -m benchmarks.reading_speed [--chunk-tokens 512] [--memory-tokens 128]
"""

from __future__ import annotations

import argparse
import statistics
import time

from training.tasks import BOOKS_DIR

BOOK = BOOKS_DIR / "pg84.txt"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunk-tokens", type=int, default=512)
    ap.add_argument("--memory-tokens", type=int, default=128)
    ap.add_argument("--decode-sample", type=int, default=32, help="written tokens timed (then scaled)")
    args = ap.parse_args()

    import torch

    from inference.engines.transformers_engine import TransformersEngine
    from inference.models import model_folder
    from inference.templates import MEMAGENT

    torch.set_num_threads(1)
    engine = TransformersEngine(model_folder("smollm2"))
    tok = engine.tokenizer
    ids = tok(BOOK.read_bytes().decode("cp1252"), add_special_tokens=False)["input_ids"]
    chunk = tok.decode(ids[5000 : 5000 + args.chunk_tokens])
    memory = tok.decode(ids[9000 : 9000 + args.memory_tokens])
    prompt = MEMAGENT.render_update("Who is the narrator's sister?", memory, chunk)
    text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
    batch = tok([text], return_tensors="pt", add_special_tokens=False)
    n_prompt = batch["input_ids"].shape[1]

    def cpu_seconds(new_tokens: int) -> float:
        with torch.inference_mode():
            start = time.process_time()
            engine.model.generate(
                **batch,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
            )
            return time.process_time() - start

    cpu_seconds(1)  # warm-up
    prefill = statistics.median(cpu_seconds(1) for _ in range(3))
    both = statistics.median(cpu_seconds(args.decode_sample + 1) for _ in range(2))
    decode = (both - prefill) / args.decode_sample
    print(f"prompt tokens: {n_prompt}")
    print(f"prefill: {prefill / n_prompt * 1000:.2f} ms CPU per prompt token ({prefill:.2f} s for the prompt)")
    print(f"decode:  {decode * 1000:.1f} ms CPU per written token")
    print(
        f"one chunk writing a full {args.memory_tokens}-token memory: {prefill + decode * args.memory_tokens:.1f} s CPU"
    )


if __name__ == "__main__":
    main()
