"""A timer's listeners run as one event a tick (app/ui/ticks.py): each gets its own inputs and its answer lands on
its own outputs, whichever form Gradio allows it to answer in; what none updated is left as it is. The browser
tests drive the page's real timers (the readings list, the estimate, branches, review and health line)."""

from __future__ import annotations

import gradio as gr
import pytest

from app.ui.ticks import Ticks


def _wired(build):
    """The one tick listener `build(ticks, components)` wires, with its inputs and outputs."""
    with gr.Blocks() as ui:
        ticks = Ticks(gr.Timer(3.0))
        parts = {name: gr.Textbox() for name in "abcde"} | {"state": gr.State(0)}
        build(ticks, parts)
        ticks.wire()
    (dep,) = ui.fns.values()
    return dep, parts


def test_each_listener_gets_its_inputs_and_updates_its_outputs_in_one_event():
    def build(ticks, c):
        ticks.tick(lambda a: a.upper(), c["a"], c["b"], show_progress="hidden")  # one output: its value
        ticks.tick(lambda a, s: (a + "!", s + 1), [c["a"], c["state"]], [c["c"], c["state"]], show_progress="hidden")
        ticks.tick(lambda: {c["d"]: "keyed"}, None, [c["d"], c["e"]], show_progress="hidden")  # a dict, e left out
        ticks.tick(lambda b: gr.skip(), c["b"], [c["a"]], show_progress="hidden")

    dep, c = _wired(build)
    assert dep.inputs == [c["a"], c["state"], c["b"]]
    assert dep.outputs == [c["b"], c["c"], c["state"], c["d"], c["e"], c["a"]]
    out = dict(zip(dep.outputs, dep.fn("read", 4, "shown"), strict=True))
    assert out[c["b"]] == "READ" and out[c["c"]] == "read!" and out[c["state"]] == 5 and out[c["d"]] == "keyed"
    assert out[c["e"]] == out[c["a"]] == gr.skip()  # not updated: left as shown


def test_a_single_skip_for_several_outputs_skips_them_all():
    dep, c = _wired(lambda t, c: t.tick(lambda: gr.skip(), None, [c["a"], c["b"]], show_progress="hidden"))
    assert dep.fn() == [gr.skip(), gr.skip()]


def test_two_listeners_may_not_update_one_component_nor_differ_in_options():
    with pytest.raises(ValueError, match="update the same component"):
        _wired(lambda t, c: [t.tick(str, None, c["a"]), t.tick(str, None, [c["b"], c["a"]])])
    with pytest.raises(ValueError, match="share one event"):
        _wired(lambda t, c: [t.tick(str, None, c["a"], show_progress="hidden"), t.tick(str, None, c["b"])])
