"""A scripted engine for unit tests of the logic around the model (never the only test of a feature:
tests/model and tests/integration run the real SmolLM2)."""

from __future__ import annotations

from typing import Callable, Sequence

from inference.engines.base import Completion, Engine


def activate_version_named(settings, name: str) -> None:
    """Make the seeded model version `name` the one new readings use. A scripted engine writes a reading's memory
    only under the rewriting reader (`smollm2-reader`); the default keeps the document's sentences itself."""
    from app.db import session_scope
    from app.services import models as mv

    with session_scope(settings.resolved_database_url) as s:
        (version,) = [v for v in mv.list_versions(s) if v.name == name]
        mv.activate_version(s, version.id)


class FakeEngine(Engine):
    """Answers each message with `respond(message)`; records every call.

    `fail_on_call=n` raises on the n-th generate call (1-based), to simulate a crash mid-reading.
    """

    name = "fake"

    def __init__(self, tokenizer, respond: Callable[[str], str], fail_on_call: int | None = None):
        self.tokenizer = tokenizer
        self.respond = respond
        self.fail_on_call = fail_on_call
        self.calls: list[tuple[list[str], int]] = []

    def generate(self, messages: Sequence[str], max_tokens: int, temperature: float = 0.0) -> list[Completion]:
        self.calls.append((list(messages), max_tokens))
        if self.fail_on_call == len(self.calls):
            raise RuntimeError("simulated engine crash")
        return [Completion(self.respond(m), len(m), 3) for m in messages]
