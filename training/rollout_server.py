"""Rollouts through a vLLM server that serves the base model and hot-loads the policy's LoRA adapter.

This is how MemAgent's recipe rolls out on GPUs (verl samples with vLLM, trains with PyTorch), and
it is faster on the CPU too: vLLM generates where the in-process model would step token by token.
Each RL step the trainer saves its current adapter and the server loads it under a new name
(`/v1/load_lora_adapter`, allowed by VLLM_ALLOW_RUNTIME_LORA_UPDATING); the previous one is
unloaded. The server samples in its own precision (bfloat16 by default), so its rollouts are a
close, not a bit-exact, sample of the fp32 policy; the trainer takes every log-probability itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

import httpx

from inference.engines.base import EngineError
from inference.engines.openai_engine import OpenAIEngine
from inference.vllm_server import VLLMServer

# vLLM accepts these LoRA ranks (--max-lora-rank).
_VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


def vllm_lora_rank(r: int) -> int:
    """The smallest rank vLLM accepts that holds a rank-`r` adapter.

    >>> vllm_lora_rank(16), vllm_lora_rank(4), vllm_lora_rank(17)
    (16, 8, 32)
    """
    for rank in _VLLM_LORA_RANKS:
        if rank >= r:
            return rank
    raise ValueError(f"vLLM serves LoRA ranks up to {_VLLM_LORA_RANKS[-1]}; lora_r is {r}")


class VLLMRollouts:
    """A vLLM server for one training run; `engine(adapter_folder, step)` serves that adapter."""

    def __init__(
        self,
        python: str | Path,
        model: str | Path,
        tokenizer: Any,
        lora_r: int,
        max_model_len: int,
        log_path: Path,
        extra_args: Sequence[str] = (),
    ):
        self.tokenizer = tokenizer
        self.server = VLLMServer(
            python,
            model,
            served_model_name="base",
            max_model_len=max_model_len,
            log_path=log_path,
            extra_args=[
                "--enable-lora",
                "--max-lora-rank",
                str(vllm_lora_rank(lora_r)),
                "--max-loras",
                "1",
                *extra_args,
            ],
            env={"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"},
        )
        self.loaded: str | None = None

    def start(self) -> None:
        self.server.start()

    def engine(self, adapter: Path, name: str) -> OpenAIEngine:
        """Load `adapter` as `name` (unloading the previous adapter) and return an engine that samples it."""
        self.server.ensure_running()
        with httpx.Client(base_url=self.server.base_url, timeout=120) as http:
            if self.loaded and self.loaded != name:
                http.post("/unload_lora_adapter", json={"lora_name": self.loaded})
                self.loaded = None
            if self.loaded != name:
                r = http.post("/load_lora_adapter", json={"lora_name": name, "lora_path": str(Path(adapter).resolve())})
                if r.status_code != 200:
                    raise EngineError(
                        f"vLLM could not load the adapter {adapter} as {name}: "
                        f"{r.status_code} {r.text[:300]} (log {self.server.log_path})"
                    )
                self.loaded = name
        return OpenAIEngine(self.server.base_url, self.tokenizer, name, server=None)

    def close(self) -> None:
        self.server.stop()


def copy_adapter(model: Any, folder: Path) -> Path:
    """Write the policy's adapter to `folder` (replaced whole) for the server to load."""
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    return folder
