"""The Training tab's New run page: a name, the version to train further, the trainer's numbers (the
`small` preset, the app's reading sizes), an estimate of the time it takes, and Start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.services import registry, training_runs
from app.services.models import version_label
from app.services.training_runs import RunParams, RunView
from app.ui.admin_context import REFUSED, Admin
from app.ui.text import fmt_seconds, text_md
from app.ui.training_data import DataPage
from app.ui.training_views import DATA, FLOATS, FORM, LABELS, base_label, parse_params
from training.config import DataConfig, TrainConfig


@dataclass(eq=False)  # eq=False: hashable, as Gradio needs its handlers (these bound methods) to be
class RunForm:
    admin: Admin
    data: DataPage  #: the run's data is chosen there
    name: gr.Textbox
    start_version: gr.Dropdown
    numbers: dict[str, gr.Number]  #: FORM's keys
    estimate: gr.Markdown
    start: gr.Button
    start_msg: gr.Markdown

    @property
    def inputs(self) -> set[gr.components.Component]:
        """What a run is made of: the Data page's choices and the numbers (the estimate's inputs)."""
        return {*self.data.choices, *self.numbers.values()}

    def params(self, values: dict[gr.components.Component, Any]) -> RunParams:
        """The numbers, from an event's inputs by component (inputs given as a set)."""
        return parse_params({key: values[box] for key, box in self.numbers.items()})

    def version_menu(self) -> dict:
        """The versions a run can start from; the active model (the service's default) first and chosen."""
        settings = self.admin.settings
        try:
            versions = registry.registry(settings, user=self.admin.me())
        except REFUSED:
            return {}
        names = {v["id"]: f"#{v['id']} {version_label(v['name'])}" for v in versions}
        active = next((names[v["id"]] for v in versions if v["active"]), base_label(settings))
        choices = [(f"the active model: {active}", 0)] + [(name, i) for i, name in names.items()]
        return {self.start_version: gr.update(choices=choices, value=0)}

    def on_estimate(self, values: dict[gr.components.Component, Any]) -> str:
        if not self.admin.is_admin():  # estimate_seconds takes no user: the check is here
            return ""
        try:
            seconds, basis = training_runs.estimate_seconds(
                self.admin.settings, self.data.selection(values), self.params(values)
            )
        except REFUSED as exc:
            return f"**No estimate:** {text_md(exc)}"
        return f"**Estimated time:** about {fmt_seconds(seconds)} on this deployment ({text_md(basis)})."

    def start_run(self, values: dict[gr.components.Component, Any]) -> RunView:
        """Start the run the form and the Data page describe (`values`: the inputs, with the name and the start
        version); the services' refusals and the form's (REFUSED) pass through."""
        start_version = values[self.start_version]
        return training_runs.start_run(
            self.admin.settings,
            self.data.selection(values),
            self.params(values),
            name=(values[self.name] or "").strip() or None,
            start_version_id=int(start_version) if start_version else None,
            user=self.admin.me(),
        )


def build_run_form(admin: Admin, data: DataPage) -> RunForm:
    """The page's components, in the current layout context (the New run tab)."""
    gr.Markdown(
        "The data comes from **Data**; the reading sizes are the start version's; the other settings are "
        "the trainer's `small` preset."
    )
    with gr.Row():
        name = gr.Textbox(label="Name (empty: one is made from the date)", max_length=200, elem_id="run-name")
        start_version = gr.Dropdown(
            label="Start from (the weights it trains further)",
            choices=[("the active model", 0)],
            value=0,
            elem_id="start-version",
        )
    defaults = {
        **vars(RunParams()),
        "sft_samples_per_step": RunParams().samples_per_step,
        "sft_carry": 0,
        "mix_feedback": DataConfig.model_fields["mix_feedback"].default,
    }
    numbers = {}
    for i in range(0, len(FORM), 3):
        with gr.Row():
            for key in FORM[i : i + 3]:
                numbers[key] = gr.Number(
                    defaults[key],
                    label=LABELS[key],
                    info=(DataConfig if key in DATA else TrainConfig).model_fields[key].description or "",
                    precision=None if key in FLOATS else 0,
                    elem_id=f"param-{key.replace('_', '-')}",
                )
    estimate = gr.Markdown(elem_id="estimate", latex_delimiters=[])
    start = gr.Button("Start", variant="primary", elem_id="start-run")
    start_msg = gr.Markdown(elem_id="start-msg", latex_delimiters=[])
    return RunForm(admin, data, name, start_version, numbers, estimate, start, start_msg)
