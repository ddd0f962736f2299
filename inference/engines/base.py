from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence


class EngineError(RuntimeError):
    """The engine could not complete a batch; the message says what failed, for the user to read.

    Nothing is half-done: a caller that keeps its own state (a reading's cursor) can simply retry.
    """


class EngineUnavailable(EngineError):
    """The model server could not be reached or kept failing (refused, reset, timeouts, 5xx) through
    every retry: an outage, not a bad request. Nothing was generated; try again later."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    #: the generated token ids (the stop token included) when the engine reports them; training needs them
    token_ids: tuple[int, ...] = ()


class Engine(ABC):
    """A chat model that completes many single-turn user messages at once.

    Batching is the engine's business: callers hand over every prompt that is ready (one per
    reading at the current chunk) and the engine runs them together.
    """

    name: str
    #: the serving model's Hugging Face tokenizer; chunking counts tokens with it
    tokenizer: Any

    @abstractmethod
    def generate(self, messages: Sequence[str], max_tokens: int, temperature: float = 0.0) -> list[Completion]:
        """Complete each user message (the engine applies the model's chat template): greedy at
        temperature 0, else sampled from the full distribution at that temperature (RL rollouts)."""

    def close(self) -> None:
        """Release processes or memory the engine holds."""
