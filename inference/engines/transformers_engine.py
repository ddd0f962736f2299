"""In-process engine: a Hugging Face causal LM on the CPU (or a GPU if torch has one), greedy,
all prompts of a call in one left-padded batch."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from inference.engines.base import Completion, Engine


class TransformersEngine(Engine):
    name = "transformers"

    def __init__(self, model_path: Path, max_batch: int = 16):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self.model_path = Path(model_path)
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.tokenizer.padding_side = "left"
        self.model = AutoModelForCausalLM.from_pretrained(self.model_path, dtype=torch.float32)
        self.model.eval()
        self.max_batch = max_batch

    def generate(self, messages: Sequence[str], max_tokens: int) -> list[Completion]:
        out: list[Completion] = []
        for i in range(0, len(messages), self.max_batch):
            out.extend(self._generate_batch(messages[i : i + self.max_batch], max_tokens))
        return out

    def _generate_batch(self, messages: Sequence[str], max_tokens: int) -> list[Completion]:
        tok = self.tokenizer
        texts = [
            tok.apply_chat_template([{"role": "user", "content": m}], tokenize=False, add_generation_prompt=True)
            for m in messages
        ]
        batch = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with self._torch.inference_mode():
            generated = self.model.generate(
                **batch,
                max_new_tokens=max_tokens,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
            )
        new = generated[:, batch["input_ids"].shape[1] :]
        completions = []
        for row, mask in zip(new.tolist(), batch["attention_mask"]):
            n = next((i + 1 for i, t in enumerate(row) if t == tok.eos_token_id), len(row))
            text = tok.decode(row[:n], skip_special_tokens=True)
            completions.append(Completion(text, int(mask.sum()), n))
        return completions
