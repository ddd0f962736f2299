"""A timer's listeners as one event a tick. Each listener a tick fires is its own request, queue entry and round of
the page's bookkeeping: the Read tab's five listeners every 3 s (the readings list, the estimate, the branches,
the review, the health line) kept an idle tab's Chromium renderer at about a fifth of a core, against a twelfth
with no timer at all (docs/experiments/2026-12-07-one-event-a-tick.md). Registered here, they run as one
listener that calls each in turn and sends all their updates in one answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr
from gradio.blocks import Block


class Ticks:
    """`tick(fn, inputs, outputs)` as on a `gr.Timer`; `wire()` once every listener is registered."""

    def __init__(self, timer: gr.Timer) -> None:
        self.timer = timer
        self._parts: list[tuple[Callable[..., Any], list[Block], list[Block]]] = []
        self._kwargs: dict[str, Any] | None = None

    def tick(
        self, fn: Callable[..., Any], inputs: Block | Sequence[Block] | None, outputs: Block | Sequence[Block], **kwargs
    ) -> None:
        if self._kwargs is not None and kwargs != self._kwargs:
            raise ValueError(f"a tick's listeners share one event and its options: {kwargs} against {self._kwargs}")
        self._kwargs = kwargs
        self._parts.append((fn, _listed(inputs), _listed(outputs)))

    def wire(self) -> None:
        inputs = _unique(c for _, ins, _ in self._parts for c in ins)
        outputs = _unique(c for _, _, outs in self._parts for c in outs)
        if len(outputs) != sum(len(outs) for _, _, outs in self._parts):
            raise ValueError("two of a tick's listeners update the same component")
        parts = self._parts

        def on_tick(*values):
            given = dict(zip(map(id, inputs), values, strict=True))
            updates: dict[Block, Any] = {}
            for fn, ins, outs in parts:
                updates |= _keyed(fn(*(given[id(c)] for c in ins)), outs)
            return [updates.get(c, gr.skip()) for c in outputs]

        on_tick.parts = [(fn, outs) for fn, _, outs in parts]  # each listener with its own outputs (tests)
        self.timer.tick(on_tick, inputs, outputs, **(self._kwargs or {}))


def _listed(blocks: Block | Sequence[Block] | None) -> list[Block]:
    return [] if blocks is None else [blocks] if isinstance(blocks, Block) else list(blocks)


def _unique(blocks) -> list[Block]:
    return list({id(b): b for b in blocks}.values())


def _keyed(result: Any, outputs: list[Block]) -> dict[Block, Any]:
    """A listener's answer as Gradio reads it: a dict keyed by components, one `gr.skip()` for all its outputs, a
    single output's value, or one value an output in order."""
    if isinstance(result, dict) and result and all(isinstance(k, Block) for k in result):
        return result
    if isinstance(result, dict) and result == gr.skip():
        return {}
    if len(outputs) == 1:
        return {outputs[0]: result}
    return dict(zip(outputs, result, strict=True))
