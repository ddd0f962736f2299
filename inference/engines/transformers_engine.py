"""In-process engine: a Hugging Face causal LM on the CPU (or a GPU if torch has one), all prompts
of a call in one left-padded batch; greedy, or sampled at a temperature (RL rollouts). Loaded in the dtype the
CPU computes natively, as the vLLM server is (`inference.vllm_server.cpu_dtype`): bfloat16 where it has
AVX-512 BF16, AMX or Arm BF16, else float32."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from inference.engines.base import Completion, Engine


class TransformersEngine(Engine):
    name = "transformers"

    def __init__(self, model_path: Path, max_batch: int = 16, dtype: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from inference.vllm_server import cpu_dtype

        tokenizer = AutoTokenizer.from_pretrained(Path(model_path))
        model = AutoModelForCausalLM.from_pretrained(Path(model_path), dtype=getattr(torch, dtype or cpu_dtype()))
        self._use(model, tokenizer, max_batch)

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, max_batch: int = 16) -> TransformersEngine:
        """An engine over a model already in memory (the trainer's policy, adapters and all)."""
        engine = cls.__new__(cls)
        engine._use(model, tokenizer, max_batch)
        return engine

    def _use(self, model: Any, tokenizer: Any, max_batch: int) -> None:
        import torch

        self._torch = torch
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:  # e.g. Llama's, or a GGUF converted by older transformers
            tokenizer.pad_token = tokenizer.eos_token
        self.model = model
        self.max_batch = max_batch

    def generate(self, messages: Sequence[str], max_tokens: int, temperature: float = 0.0) -> list[Completion]:
        out: list[Completion] = []
        for i in range(0, len(messages), self.max_batch):
            out.extend(self._generate_batch(messages[i : i + self.max_batch], max_tokens, temperature))
        return out

    def _generate_batch(self, messages: Sequence[str], max_tokens: int, temperature: float) -> list[Completion]:
        tok = self.tokenizer
        texts = [
            tok.apply_chat_template([{"role": "user", "content": m}], tokenize=False, add_generation_prompt=True)
            for m in messages
        ]
        batch = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.model.device)
        sampling = (
            dict(do_sample=True, temperature=temperature, top_p=1.0, top_k=0)
            if temperature > 0
            else dict(do_sample=False)
        )
        was_training = self.model.training
        self.model.eval()
        try:
            with self._torch.inference_mode():
                generated = self.model.generate(
                    **batch,
                    max_new_tokens=max_tokens,
                    pad_token_id=tok.pad_token_id,
                    eos_token_id=tok.eos_token_id,
                    **sampling,
                )
        finally:
            self.model.train(was_training)
        new = generated[:, batch["input_ids"].shape[1] :]
        completions = []
        for row, mask in zip(new.tolist(), batch["attention_mask"]):
            n = next((i + 1 for i, t in enumerate(row) if t == tok.eos_token_id), len(row))
            text = tok.decode(row[:n], skip_special_tokens=True)
            completions.append(Completion(text, int(mask.sum()), n, tuple(row[:n])))
        return completions
