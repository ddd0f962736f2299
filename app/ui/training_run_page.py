"""The Training tab's Runs page: the runs, and the open run followed live (its headline, curves, sample
rollouts, log and evaluation), with Cancel, Resume, Evaluate and Promote."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.services import training_runs
from app.ui.admin_context import REFUSED, Admin
from app.ui.tables import table
from app.ui.text import text_md
from app.ui.training_views import (
    COLORS,
    EVAL_COLUMNS,
    NO_RUNS,
    PLOTS,
    RUN_COLUMNS,
    bars_frame,
    curve_axes,
    curve_plot,
    curves,
    describe_run,
    describe_samples,
    eval_view,
    run_rows,
)

#: statuses a run's page follows live
LIVE = {"queued", "running", "cancelling"}


@dataclass(eq=False)  # eq=False: hashable, as Gradio needs its handlers (these bound methods) to be
class RunsPage:
    admin: Admin
    runs_note: gr.Markdown
    runs_table: gr.Dataframe
    page: gr.Column  #: the open run's page
    head: gr.Markdown
    buttons: dict[str, gr.Button]  #: cancel, resume, evaluate, promote
    msg: gr.Markdown
    plots: list[gr.ScatterPlot]  #: PLOTS' curves
    samples: gr.Markdown
    log: gr.Textbox
    eval_note: gr.Markdown
    eval_table: gr.Dataframe
    eval_plot: gr.BarPlot
    run_id: gr.State  #: the open run's
    shown: gr.State  #: what the page shows, in one string (see show)
    limits: gr.State  #: the open run's curve axes (curve_axes), sent after the data
    timer: gr.Timer

    @property
    def view(self) -> list[gr.components.Component]:
        """What `show` fills."""
        return [
            self.page,
            self.head,
            self.msg,
            *self.plots,
            self.limits,
            self.samples,
            self.log,
            self.eval_note,
            self.eval_table,
            self.eval_plot,
            self.runs_note,
            self.runs_table,
            self.shown,
            self.timer,
        ]

    def runs_list(self) -> tuple[str, list]:
        try:
            runs = training_runs.list_runs(self.admin.settings, user=self.admin.me())
        except REFUSED as exc:
            return f"**Cannot list the runs:** {text_md(exc)}", []
        return (NO_RUNS if not runs else "Choose a run in the table to watch it."), run_rows(runs)

    def show(self, run_id: int | None, note: str | None = "", shown: str | None = None) -> dict:
        """Everything on the open run's page (`note`: the message line; None leaves it), what it shows in
        one string, and the timer, on while the run or its evaluation moves. Nothing is sent when that
        string is `shown`: the page does not redraw every tick."""
        message = gr.update() if note is None else note
        if run_id is None:
            return self._blank(False, "", message)
        settings, user = self.admin.settings, self.admin.me()
        try:
            r = training_runs.get_run(settings, run_id, user=user)
            metrics = training_runs.run_metrics(settings, run_id, user=user)
            samples = training_runs.run_samples(settings, run_id, user=user)
            log = training_runs.run_log(settings, run_id, user=user)
            evaluating = (r.evaluation or {}).get("status") == "running"
            progress = training_runs.run_eval_progress(settings, run_id, user=user) if evaluating else None
        except REFUSED as exc:
            return self._blank(True, f"**Cannot show run #{run_id}:** {text_md(exc)}", message)
        live = r.status in LIVE or (r.evaluation or {}).get("status") in ("queued", "running")
        listed = self.runs_list()
        now = repr((r, len(metrics), samples[-1:], log, listed, progress))
        if now == shown:
            return {self.shown: now, self.timer: gr.Timer(active=live)}
        head = describe_run(r) + ("  \nNo steps yet: the curves fill as it trains." if live and not metrics else "")
        frames = curves(metrics)
        evaluation = eval_view(r.evaluation, r.status == "done", progress, r.selection)
        return {
            self.page: gr.update(visible=True),
            self.head: head,
            self.msg: message,
            **dict(zip(self.plots, frames, strict=True)),
            self.limits: curve_axes(frames, r.total_steps),
            self.samples: describe_samples(samples),
            self.log: log,
            **dict(zip((self.eval_note, self.eval_table, self.eval_plot), evaluation, strict=True)),
            self.runs_note: listed[0],
            self.runs_table: listed[1],
            self.shown: now,
            self.timer: gr.Timer(active=live),
        }

    def _blank(self, visible: bool, head: str, message: Any) -> dict:
        """The page with no run on it (`head`: why), and the runs."""
        note, rows = self.runs_list()
        return {
            self.page: gr.update(visible=visible),
            self.head: head,
            self.msg: message,
            **dict(zip(self.plots, curves([]), strict=True)),
            self.limits: None,
            self.samples: "",
            self.log: "",
            **dict(zip((self.eval_note, self.eval_table, self.eval_plot), eval_view(None), strict=True)),
            self.runs_note: note,
            self.runs_table: rows,
            self.shown: "",
            self.timer: gr.Timer(active=False),
        }

    def show_axes(self, kept: list[dict] | None) -> list:
        """The curves' axes show kept, sent after their data (curve_axes); unchanged limits redraw nothing."""
        return kept or [gr.update()] * len(self.plots)

    def on_tick(self, run_id: int | None, shown: str | None) -> dict:
        return self.show(run_id, None, shown)

    def on_open(self, evt: gr.SelectData) -> dict:
        run_id = int(evt.row_value[0])
        return {self.run_id: run_id, **self.show(run_id)}

    def act(self, action: Callable[..., Any], verb: str, done: Callable[[Any], str], also: Callable[[], dict]):
        """A button's handler: do it to the open run, then show the run and, once done, `also` (the registry)."""

        def handler(run_id: int | None) -> dict:
            if run_id is None:
                return self.show(None, f"**Cannot {verb}:** choose a run in the table first.")
            try:
                result = action(self.admin.settings, int(run_id), user=self.admin.me())
            except REFUSED as exc:
                return self.show(run_id, f"**Cannot {verb}:** {text_md(exc)}")
            return {**self.show(run_id, done(result)), **also()}

        return handler

    def then_axes(self, event: Any) -> None:
        """Send the curves' axes after an event that showed their data (see curve_axes)."""
        event.then(self.show_axes, self.limits, self.plots, show_progress="hidden")

    def connect(self, also: Callable[[], dict], also_outputs: list[gr.components.Component]) -> None:
        """The table, the timer and the buttons; `also`: what else a button that did its work refreshes."""
        self.then_axes(self.runs_table.select(self.on_open, None, [self.run_id, *self.view], show_progress="hidden"))
        self.then_axes(self.timer.tick(self.on_tick, [self.run_id, self.shown], self.view, show_progress="hidden"))
        for verb, action, done in (
            ("cancel", training_runs.cancel_run, lambda r: f"Run #{r.id} is {text_md(r.status)}."),
            (
                "resume",
                training_runs.resume_run,
                lambda r: f"Run #{r.id} is queued again: it continues from its last checkpoint.",
            ),
            (
                "evaluate",
                training_runs.evaluate_run,
                lambda r: (
                    f"Evaluation of run #{r.id} queued: the active model and this run read the same held-out sets."
                ),
            ),
            (
                "promote",
                training_runs.promote_run,
                lambda v: (
                    f"Promoted: model version #{v} is now active; "
                    "new readings use it (readings in flight finish on the version they began with)."
                ),
            ),
        ):
            handler = self.act(action, verb, done, also)
            event = self.buttons[verb].click(handler, self.run_id, [*self.view, *also_outputs], show_progress="hidden")
            self.then_axes(event)


def build_runs_page(admin: Admin) -> RunsPage:
    """The page's components, in the current layout context (the Runs tab)."""
    runs_note = gr.Markdown(NO_RUNS, elem_id="runs-note", latex_delimiters=[])
    runs_table = table(
        RUN_COLUMNS, "runs-table", max_height=300, column_widths=["6%", "34%", "11%", "9%", "8%", "17%", "15%"]
    )
    # Shown once a run is open, never hidden again: Gradio errs on plots hidden after a tab switch.
    with gr.Column(visible=False, elem_id="run-page") as page:
        head = gr.Markdown(elem_id="run-head", latex_delimiters=[])
        with gr.Row():
            buttons = {
                verb: gr.Button(verb.capitalize(), size="sm", elem_id=f"run-{verb}")
                for verb in ("cancel", "resume", "evaluate", "promote")
            }
        msg = gr.Markdown(elem_id="run-msg", latex_delimiters=[])
        plots = []
        for i in range(0, len(PLOTS), 2):
            with gr.Row():
                plots += [curve_plot(title, elem_id) for title, elem_id, *_ in PLOTS[i : i + 2]]
        with gr.Accordion("Latest sample rollouts: question, each step's memory, answer, reward", open=True):
            samples = gr.Markdown(elem_id="run-samples", latex_delimiters=[])
        log = gr.Textbox(
            label="Log (last lines)", lines=10, max_lines=20, interactive=False, autoscroll=True, elem_id="run-log"
        )
        with gr.Column(elem_id="evaluation"):
            gr.Markdown("### Evaluation: the active model and this run on the same held-out sets")
            eval_note = gr.Markdown(elem_id="eval-note", latex_delimiters=[])
            eval_table = table(EVAL_COLUMNS, "eval-table", visible=False)
            eval_plot = gr.BarPlot(
                bars_frame([]),
                x="set",
                y="sub_em",
                y_title="answers right",
                color="model",
                y_lim=[0, 1],
                color_map=COLORS,
                sort=[],  # Vega-Lite: values not listed keep their order
                label="Answers right per held-out set: baseline and this run",
                elem_id="eval-plot",
            )
    return RunsPage(
        admin,
        runs_note,
        runs_table,
        page,
        head,
        buttons,
        msg,
        plots,
        samples,
        log,
        eval_note,
        eval_table,
        eval_plot,
        run_id=gr.State(None),
        shown=gr.State(""),
        limits=gr.State(None),
        timer=gr.Timer(2.0, active=False),
    )
