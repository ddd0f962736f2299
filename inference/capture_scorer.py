"""A pointer read-out over numbered sentences, scored by an in-process transformers model in one prefill.

The prompt numbers the chunk's sentences ([1] ... [n]) before the question, so the chunk's prefill (its KV
cache) is computed once and shared by every question of a pass; each question adds only its own few tokens and
the cue "The relevant sentence is [". The next token's distribution over the digits, and for numbers past 9 one
more step over the second digit or "]", gives P(i) for every label i, with "0" meaning none. A sentence's
score is log P(i) - log P(0): log-odds against "none", so that scores of different chunks (and questions with
and without an answer) can be compared, which the memory needs (a kept sentence keeps its score).

Nothing is decoded: a second step is one batched single-token forward, only for chunks of 10 sentences or more.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

INSTRUCTION = "Read the numbered sentences of a section of a document, then say which one helps answer a question."
ASK = "Which sentence helps answer the question? Give its number, or 0 if none does."
CUE = "The relevant sentence is ["
_SLOT = "\x00"


def label_log_probs(first: torch.Tensor, second: torch.Tensor | None, n: int) -> torch.Tensor:
    """log P(label) for the labels 0 (none) to n, differentiable: from the logits of the first digit (`first`,
    digits 0-9) and of what follows each first digit d in 1..n//10 (`second[d-1]`: "]" then digits 0-9), every step
    normalised over the continuations that make a label. Training's loss reads these; `pointer_scores` too."""
    if n > 99:
        raise ValueError("the pointer labels are the numbers 1 to 99")
    log1 = torch.log_softmax(first[: min(n, 9) + 1].double(), 0)
    labels = [log1[i] for i in range(min(n, 9) + 1)]
    for d in range(1, n // 10 + 1):
        last = min(9, n - 10 * d)
        log2 = torch.log_softmax(torch.cat([second[d - 1][:1], second[d - 1][1 : last + 2]]).double(), 0)
        labels[d] = log1[d] + log2[0]  # "]" ends label d; digit e makes label 10d + e
        labels += [log1[d] + log2[1 + e] for e in range(last + 1)]
    return torch.stack(labels)


def pointer_scores(first: torch.Tensor, second: torch.Tensor | None, n: int) -> list[float]:
    """Scores of labels 1..n: log P(i) - log P(0), the log-odds against "none" (`label_log_probs`).

    >>> pointer_scores(torch.tensor([0.0, 1.0, 0.0, 5.0] + [9.0] * 6), None, 2)
    [1.0, 0.0]
    """
    logp = label_log_probs(first, second, n)
    return (logp[1:] - logp[0]).tolist()


class PointerScorer:
    """`Scorer` (inference/capture.py) for a causal LM with a chat template, e.g. the bundled SmolLM2 or the
    reader merged into it."""

    def __init__(self, model: Any, tokenizer: Any):
        self.model, self.tok = model.eval(), tokenizer
        turn = tokenizer.apply_chat_template(
            [{"role": "user", "content": _SLOT}], tokenize=False, add_generation_prompt=True
        )
        self.head, self.tail = turn.split(_SLOT)
        self.digits = [tokenizer.convert_tokens_to_ids(str(d)) for d in range(10)]
        self.close = tokenizer.convert_tokens_to_ids("]")

    @classmethod
    def from_folder(cls, path: Path | str, dtype: torch.dtype = torch.float32) -> PointerScorer:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        return cls(AutoModelForCausalLM.from_pretrained(Path(path), dtype=dtype), AutoTokenizer.from_pretrained(path))

    def prefix(self, chunk: Sequence[str]) -> str:
        lines = "\n".join(f"[{i}] {' '.join(s.split())}" for i, s in enumerate(chunk, 1))
        return f"{self.head}{INSTRUCTION}\n\n{lines}\n\n"

    def suffix(self, question: str) -> str:
        return f"Question: {' '.join(question.split())}\n\n{ASK}{self.tail}{CUE}"

    def _ids(self, text: str) -> torch.Tensor:
        return torch.tensor([self.tok(text, add_special_tokens=False)["input_ids"]])

    @torch.inference_mode()
    def score(self, chunk: Sequence[str], questions: Sequence[str], document: str | None = None) -> list[list[float]]:
        if not chunk:
            return [[] for _ in questions]
        return [(logp[1:] - logp[0]).tolist() for logp in self.log_probs(chunk, questions)]

    def log_probs(self, chunk: Sequence[str], questions: Sequence[str]) -> list[torch.Tensor]:
        """`label_log_probs` (labels 0..n) of every question, from the chunk's one prefill, differentiable
        outside inference mode: training's loss reads exactly what `score` reads."""
        n = len(chunk)
        from transformers import DynamicCache

        out = self.model(self._ids(self.prefix(chunk)), use_cache=True, logits_to_keep=1)
        shared = [(layer.keys, layer.values) for layer in out.cache.layers]
        digits, follow = torch.tensor(self.digits), torch.tensor([self.close, *self.digits])
        result = []
        for q in questions:
            cache = DynamicCache(shared)  # a fresh cache on the shared tensors: update() concatenates, never writes
            out = self.model(self._ids(self.suffix(q)), cache=cache, use_cache=True, logits_to_keep=1)
            first, second = out.logits[0, -1, digits], None
            if n >= 10:
                cache = out.cache
                cache.batch_repeat_interleave(n // 10)
                step = digits[1 : n // 10 + 1].unsqueeze(1)
                second = self.model(step, cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1, follow]
            result.append(label_log_probs(first, second, n))
        return result
