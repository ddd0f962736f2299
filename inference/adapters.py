"""Serving a trained adapter: merge a peft LoRA folder into its base once and cache the result.

A merged folder is an ordinary Hugging Face model folder, so every engine serves it unchanged (the
in-process transformers engine, a local vLLM server, `longread eval --adapter`), and it costs
nothing per token, unlike an unmerged adapter. The cache key is the base folder's path and the
adapter's bytes, so retraining into the same folder makes a new merge rather than serving a stale one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from inference.folders import building_folder

_ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")


def adapter_digest(base_dir: Path, adapter_dir: Path) -> str:
    """Hex digest of the base folder's resolved path and the adapter's config and weights."""
    h = hashlib.sha256(str(Path(base_dir).resolve()).encode())
    found = False
    for name in _ADAPTER_FILES:
        f = Path(adapter_dir) / name
        if f.is_file():
            found = True
            h.update(name.encode())
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    if not (Path(adapter_dir) / "adapter_config.json").is_file() or not found:
        raise FileNotFoundError(f"{adapter_dir} is not a peft adapter folder (no adapter_config.json)")
    return h.hexdigest()[:16]


def merged_model(base_dir: Path, adapter_dir: Path, cache_dir: Path) -> Path:
    """A model folder with the LoRA of `adapter_dir` merged into `base_dir`'s weights, built once
    into `cache_dir/<digest>` (atomically: parallel first calls are safe) and reused afterwards."""
    target = Path(cache_dir) / f"merged-{adapter_digest(base_dir, adapter_dir)}"
    if (target / "config.json").is_file():
        return target
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with building_folder(target) as tmp:
        base = AutoModelForCausalLM.from_pretrained(Path(base_dir), dtype=torch.float32)
        model = PeftModel.from_pretrained(base, Path(adapter_dir)).merge_and_unload()
        model.save_pretrained(tmp)
        has_tokenizer = any((Path(adapter_dir) / f).is_file() for f in _TOKENIZER_FILES)
        AutoTokenizer.from_pretrained(Path(adapter_dir) if has_tokenizer else Path(base_dir)).save_pretrained(tmp)
    return target
