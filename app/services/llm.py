"""One engine per process, loaded on first use (the web app only ever needs the tokenizer)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from app.settings import Settings
from inference.engines.base import Engine
from inference.models import resolve_model_path


@lru_cache
def _engine(kind: str, model: str, cache_dir: Path) -> Engine:
    path = resolve_model_path(model, cache_dir)
    if kind == "transformers":
        from inference.engines.transformers_engine import TransformersEngine

        return TransformersEngine(path)
    raise ValueError(f"unknown engine {kind!r}")


@lru_cache
def _tokenizer(model: str, cache_dir: Path):  # noqa: ANN202 - a Hugging Face tokenizer
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model_path(model, cache_dir))


def engine_for(settings: Settings) -> Engine:
    return _engine(settings.engine, settings.model, settings.model_cache_dir)


def tokenizer_for(settings: Settings):  # noqa: ANN201
    return _tokenizer(settings.model, settings.model_cache_dir)
