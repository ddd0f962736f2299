"""LLM engines behind one small interface: a batch of user messages in, a batch of completions out."""

from inference.engines.base import Completion, Engine, EngineError, EngineUnavailable

__all__ = ["Completion", "Engine", "EngineError", "EngineUnavailable"]
