"""The admins' Training and Models tabs: choose data (readers' feedback only when included), start a
run, watch it live (curves, sample rollouts, log), cancel, resume, evaluate and promote it; list the
model versions with their lineage and switch the active one (back to the base included).

Each page is built by its own module, which owns its components and handlers: training_data.py (Data),
training_form.py (New run), training_run_page.py (Runs), models_page.py (Models); this one lays out the tabs
and wires the events between pages. Handlers return dicts keyed by component: an output left out is left as
it is.

Every action calls app/services/training_runs or app/services/models.py, passing the signed-in user
(`me`), so a reader who reaches these handlers is refused by the services; the tabs are hidden for
readers anyway (gradio_app.on_account). Values from users, documents and the model go into Markdown
through `text_md`; tables and text boxes show them as text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.services.users import UserView
from app.settings import Settings
from app.ui.admin_context import REFUSED, Admin
from app.ui.models_page import build_models_page
from app.ui.text import text_md
from app.ui.training_data import build_data_page
from app.ui.training_form import RunForm, build_run_form
from app.ui.training_run_page import RunsPage, build_runs_page


@dataclass
class AdminTabs:
    """The tabs on_account shows to admins only."""

    training: gr.Tab
    models: gr.Tab


def build_admin_tabs(settings: Settings, me: Callable[[], UserView | None]) -> AdminTabs:
    """The Training and Models tabs, hidden; call inside the page's gr.Tabs."""
    admin = Admin(settings, me)
    with gr.Tab("Training", id="training", visible=False, elem_id="training-tab") as training_tab:
        with gr.Tabs(elem_id="training-pages") as pages:
            with gr.Tab("Data", id="data", elem_id="training-data"):
                data = build_data_page(admin)
            with gr.Tab("New run", id="new", elem_id="training-new"):
                form = build_run_form(admin, data)
            with gr.Tab("Runs", id="runs", elem_id="training-runs"):
                runs = build_runs_page(admin)
    with gr.Tab("Models", id="models", visible=False, elem_id="models-tab") as models_tab:
        models = build_models_page(admin)

    training_tab.select(
        lambda: data.load(also=form.version_menu), None, [*data.loaded, form.start_version], show_progress="hidden"
    )
    runs.then_axes(training_tab.select(runs.show, runs.run_id, runs.view, show_progress="hidden"))
    data.connect()
    gr.on(
        [c.change for c in form.inputs] + [training_tab.select],
        form.on_estimate,
        form.inputs,
        form.estimate,
        show_progress="hidden",
    )
    runs.then_axes(
        form.start.click(
            start_handler(form, runs, pages),
            {*form.inputs, form.name, form.start_version},
            [form.start_msg, pages, runs.run_id, *runs.view],
            show_progress="hidden",
        )
    )
    runs.connect(also=models.table_now, also_outputs=[models.table])
    models.connect(models_tab)
    return AdminTabs(training_tab, models_tab)


def start_handler(form: RunForm, runs: RunsPage, pages: gr.Tabs) -> Callable[[dict], dict]:
    def on_start(values: dict[gr.components.Component, Any]) -> dict:
        """Start the run and open it on the Runs page; a refusal stays on the form and says what to change."""
        try:
            run = form.start_run(values)
        except REFUSED as exc:
            return {form.start_msg: f"**Cannot start:** {text_md(exc)}"}
        note = f"Started run #{run.id} {text_md(run.name)}: " + (
            f"queued, position {run.queue_position}." if run.status == "queued" else f"{text_md(run.status)}."
        )
        return {form.start_msg: "", pages: gr.Tabs(selected="runs"), runs.run_id: run.id, **runs.show(run.id, note)}

    return on_start
