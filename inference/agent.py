"""The MemAgent loop (arXiv 2507.02259): read a document chunk by chunk, overwriting a bounded
memory after each chunk, then answer from the final memory.

The agent is stateless: it turns batches of (problem, memory, chunk) into new memories and batches
of (problem, memory) into answers. Whoever drives it (a worker, the CLI, a benchmark) keeps the
state, so many readings can advance in one engine call and resume from any checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from inference.chunking import Chunk, split_into_chunks
from inference.engines.base import Completion, Engine
from inference.templates import NO_MEMORY, get_template_set


@dataclass(frozen=True)
class AgentConfig:
    chunk_tokens: int = 5000
    memory_tokens: int = 1024
    answer_tokens: int = 1024
    template_set: str = "memagent"

    def __post_init__(self) -> None:
        for field in ("chunk_tokens", "memory_tokens", "answer_tokens"):
            if getattr(self, field) < 1:
                raise ValueError(f"{field} must be a positive number of tokens")
        get_template_set(self.template_set)


@dataclass(frozen=True)
class Answer:
    answer: str  # the content of the last \boxed{}, or the whole output when there is none
    output: str  # what the model wrote
    completion: Completion


_BOXED = "\\boxed{"


def extract_boxed(text: str) -> str | None:
    """Content of the last complete `\\boxed{...}` in `text`, braces balanced; None if there is none."""
    start = text.rfind(_BOXED)
    while start != -1:
        depth, i = 1, start + len(_BOXED)
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[start + len(_BOXED) : i].strip()
            i += 1
        start = text.rfind(_BOXED, 0, start)  # unclosed: try an earlier one
    return None


class MemoryAgent:
    def __init__(self, engine: Engine, config: AgentConfig | None = None):
        self.engine = engine
        self.config = config or AgentConfig()
        self.templates = get_template_set(self.config.template_set)

    def chunks(self, text: str) -> list[Chunk]:
        return split_into_chunks(text, self.engine.tokenizer, self.config.chunk_tokens)

    def update(self, items: Sequence[tuple[str, str | None, str]]) -> list[Completion]:
        """One memory rewrite per (problem, memory or None for the first chunk, chunk text)."""
        prompts = [
            self.templates.render_update(problem, NO_MEMORY if memory is None else memory, chunk)
            for problem, memory, chunk in items
        ]
        return self.engine.generate(prompts, self.config.memory_tokens)

    def answer(self, items: Sequence[tuple[str, str | None]]) -> list[Answer]:
        prompts = [
            self.templates.render_final(problem, NO_MEMORY if memory is None else memory)
            for problem, memory in items
        ]
        completions = self.engine.generate(prompts, self.config.answer_tokens)
        answers = []
        for c in completions:
            boxed = extract_boxed(c.text)
            answers.append(Answer(boxed if boxed is not None else c.text.strip(), c.text, c))
        return answers

    def read(
        self,
        problems: Sequence[str],
        text: str,
        on_memory: Callable[[Chunk, list[Completion]], None] | None = None,
    ) -> list[Answer]:
        """Read `text` once for all `problems` together (one batched call per chunk)."""
        memories: list[str | None] = [None] * len(problems)
        for chunk in self.chunks(text):
            section = chunk.text(text)
            completions = self.update([(p, m, section) for p, m in zip(problems, memories)])
            memories = [c.text for c in completions]
            if on_memory:
                on_memory(chunk, completions)
        return self.answer(list(zip(problems, memories)))
