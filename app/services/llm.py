"""One engine per process, built on first use (the web app only ever needs the tokenizer).

- `transformers`: the model in this process.
- `openai`: an OpenAI-compatible server somewhere else (vLLM on a GPU in production).
- `vllm-local`: this process starts a vLLM server for the model folder and talks to it over HTTP.
  Whoever generates owns it, so it is the worker (or `longread ask`, or a benchmark): started once
  on first use, stopped when the process exits (and, if this process is killed, by the kernel).
"""

from __future__ import annotations

import atexit
import shlex
import threading
from functools import lru_cache

from app.settings import Settings
from inference.engines.base import Engine
from inference.models import base_of, model_folder

_ENGINE_FIELDS = (
    "engine",
    "model",
    "model_cache_dir",
    "tokenizer",
    "openai_base_url",
    "openai_model",
    "openai_api_key",
    "openai_timeout_s",
    "openai_max_tries",
    "openai_vllm_extensions",
    "vllm_python",
    "vllm_args",
    "vllm_max_model_len",
    "vllm_kvcache_gb",
    "vllm_startup_timeout_s",
    "data_dir",
)
_engines: dict[tuple, Engine] = {}
_lock = threading.Lock()


def _build(settings: Settings) -> Engine:
    if settings.engine == "transformers":
        from inference.engines.transformers_engine import TransformersEngine

        return TransformersEngine(model_folder(settings.model, cache_dir=settings.model_cache_dir))

    from inference.engines.openai_engine import OpenAIEngine

    options = dict(
        api_key=settings.openai_api_key or None,
        timeout_s=settings.openai_timeout_s,
        max_tries=settings.openai_max_tries,
        vllm_extensions=settings.openai_vllm_extensions,
    )
    if settings.engine == "openai":
        return OpenAIEngine(settings.openai_base_url, tokenizer_for(settings), settings.openai_model or None, **options)
    if settings.engine == "vllm-local":
        from inference.vllm_server import VLLMServer

        server = VLLMServer(
            settings.vllm_python,
            model_folder(settings.model, cache_dir=settings.model_cache_dir),
            served_model_name=settings.openai_model or None,
            max_model_len=settings.vllm_max_model_len,
            kv_cache_gb=settings.vllm_kvcache_gb,
            extra_args=shlex.split(settings.vllm_args),
            log_path=settings.vllm_log,
            startup_timeout_s=settings.vllm_startup_timeout_s,
        )
        server.start()
        try:
            return OpenAIEngine(
                server.base_url, tokenizer_for(settings), server.served_model_name, server=server, **options
            )
        except BaseException:
            server.stop()
            raise
    raise ValueError(f"unknown engine {settings.engine!r}")


def _key(settings: Settings) -> tuple:
    # `model` is the served folder: a model version's merged folder gets an engine of its own.
    return tuple(str(getattr(settings, f)) for f in _ENGINE_FIELDS)


def engine_for(settings: Settings) -> Engine:
    key = _key(settings)
    with _lock:
        if key not in _engines:
            _engines[key] = _build(settings)
        return _engines[key]


@atexit.register
def close_engines() -> None:
    """Stop what the engines hold (a local vLLM server); the next engine_for builds afresh."""
    with _lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.close()


def release_engines(keep: Settings) -> None:
    """Stop every engine but `keep`'s: after a worker's pass, those of model versions no longer
    active (a local vLLM server each, or weights in memory) are not needed until asked for again."""
    key = _key(keep)
    with _lock:
        gone = [k for k in _engines if k != key]
        engines = [_engines.pop(k) for k in gone]
    for engine in engines:
        engine.close()


@lru_cache
def _tokenizer(name_or_path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name_or_path)


def tokenizer_for(settings: Settings):
    """The serving model's tokenizer: LONGREAD_TOKENIZER, else the model folder's."""
    source = settings.tokenizer or str(model_folder(base_of(settings.model), cache_dir=settings.model_cache_dir))
    return _tokenizer(source)
