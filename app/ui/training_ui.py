"""The admins' Training and Models tabs: choose data (readers' feedback only when included), start a
run, watch it live (curves, sample rollouts, log), cancel, resume, evaluate and promote it; list the
model versions with their lineage and switch the active one (back to the base included).

Every action calls app/services/training_runs or app/services/models.py, passing the signed-in user
(`me`), so a reader who reaches these handlers is refused by the services; the tabs are hidden for
readers anyway (gradio_app.on_account). Values from users, documents and the model go into Markdown
through `text_md`; tables and text boxes show them as text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from app.db import session_scope
from app.services import registry, training_runs
from app.services.errors import NotFound
from app.services.models import activate_version
from app.services.training_runs import RunParams
from app.services.users import UserView
from app.settings import Settings
from app.ui.text import fmt_seconds, text_md
from app.ui.training_views import (
    COLORS,
    DATA,
    EVAL_COLUMNS,
    FEEDBACK_COLUMNS,
    FLOATS,
    FORM,
    LABELS,
    MODEL_COLUMNS,
    NO_RUNS,
    PLOTS,
    RUN_COLUMNS,
    SAMPLE_COLUMNS,
    bars_frame,
    curve_axes,
    curve_plot,
    curves,
    describe_feedback,
    describe_run,
    describe_samples,
    eval_view,
    feedback_rows,
    model_rows,
    one_line,
    parse_params,
    parse_selection,
    run_rows,
)
from training.config import DataConfig, TrainConfig

#: statuses a run's page follows live
LIVE = {"queued", "running", "cancelling"}
REFUSED = (NotFound, ValueError, PermissionError)  # RunError is a ValueError, Forbidden a PermissionError


@dataclass
class AdminTabs:
    """The tabs on_account shows to admins only."""

    training: gr.Tab
    models: gr.Tab


def build_admin_tabs(settings: Settings, me: Callable[[], UserView | None]) -> AdminTabs:
    """The Training and Models tabs, hidden; call inside the page's gr.Tabs."""
    help_text = {key: (DataConfig if key in DATA else TrainConfig).model_fields[key].description or "" for key in FORM}

    def is_admin() -> bool:
        who = me()
        return who is None or who.is_admin  # None: the local admin (embedded); production refuses in the services

    # --- Data -------------------------------------------------------------------------------------

    def load_data():
        """The Data page: the feedback collected, the sets on offer; the start-version menu."""
        keep = (gr.update(),) * 7
        if not is_admin():
            return keep
        try:
            d = training_runs.data_overview(settings, user=me())
        except REFUSED as exc:
            return f"**Cannot list the training data:** {text_md(exc)}", *keep[1:]
        docs, questions, held = d.contracts
        return (describe_feedback(d), feedback_rows(d),
                gr.update(choices=[(f"#{f.id} {f.verdict}: {one_line(f.question, 60)}", f.id) for f in d.feedback]),
                gr.update(label=f"Contracts' expert QA: {docs} training documents, {questions} questions "
                          f"({held} documents held out for evaluation)"),
                gr.update(choices=[(f"{p} ({n} questions)", p) for p, n in d.qa_files],
                          info=None if d.qa_files else "No QA files on the server."),
                gr.update(choices=[(f"{k}: {text}", k) for k, text in d.synthetic_kinds]),
                version_menu())  # fmt: skip

    def version_menu():
        """The versions a run can start from; the active model (the service's default) first and chosen."""
        try:
            versions = registry.registry(settings, user=me())
        except REFUSED:
            return gr.update()
        active = next((f"#{v['id']} {v['name']}" for v in versions if v["active"]), f"base: {settings.model}")
        return gr.update(choices=[(f"the active model ({active})", 0)] + [(f"#{v['id']} {v['name']}", v["id"])
                                                                          for v in versions], value=0)  # fmt: skip

    def on_preview(*choices):
        try:
            samples = training_runs.preview_samples(settings, parse_selection(*choices), user=me())
        except REFUSED as exc:
            return f"**Cannot preview:** {text_md(exc)}", []
        rows = [[x.source, one_line(x.question), " | ".join(x.answers), x.doc_tokens, one_line(x.excerpt, 160)]
                for x in samples]  # fmt: skip
        note = (
            f"{len(rows)} of the samples this selection makes:"
            if rows
            else "This selection makes no samples: include feedback, contracts, QA files or synthetic kinds."
        )
        return note, rows

    # --- New run ----------------------------------------------------------------------------------

    def _params(values: tuple) -> RunParams:
        return parse_params(dict(zip(FORM, values)))

    def on_estimate(*values):
        choices, numbers = values[:7], values[7:]
        if not is_admin():  # estimate_seconds takes no user: the check is here
            return ""
        try:
            seconds, basis = training_runs.estimate_seconds(settings, parse_selection(*choices), _params(numbers))
        except REFUSED as exc:
            return f"**No estimate:** {text_md(exc)}"
        return f"**Estimated time:** about {fmt_seconds(seconds)} on this deployment ({text_md(basis)})."

    def on_start(open_id: int | None, name: str, start_version: int | None, *values):
        """Start the run and open it on the Runs page; a refusal stays on the form and says what to change."""
        choices, numbers = values[:7], values[7:]
        try:
            run = training_runs.start_run(
                settings,
                parse_selection(*choices),
                _params(numbers),
                name=(name or "").strip() or None,
                start_version_id=int(start_version) if start_version else None,
                user=me(),
            )
        except REFUSED as exc:
            return f"**Cannot start:** {text_md(exc)}", gr.update(), open_id, *(gr.update(),) * len(run_view)
        note = f"Started run #{run.id} {text_md(run.name)}: " + (
            f"queued, position {run.queue_position}." if run.status == "queued" else f"{text_md(run.status)}."
        )
        return "", gr.Tabs(selected="runs"), run.id, *show_run(run.id, note)

    # --- Runs -------------------------------------------------------------------------------------

    def runs_list():
        try:
            runs = training_runs.list_runs(settings, user=me())
        except REFUSED as exc:
            return f"**Cannot list the runs:** {text_md(exc)}", []
        return (NO_RUNS if not runs else "Choose a run in the table to watch it."), run_rows(runs)

    def show_run(run_id: int | None, note: str | None = "", shown: str | None = None):
        """Everything on the open run's page (`note`: the message line; None leaves it), what it shows in
        one string, and the timer, on while the run or its evaluation moves. Nothing is sent when that
        string is `shown`: the page does not redraw every tick."""
        message = gr.update() if note is None else note
        if run_id is None:
            return (gr.update(visible=False), "", message, *curves([]), None, "", "", *eval_view(None), *runs_list(),
                    "", gr.Timer(active=False))  # fmt: skip
        try:
            r = training_runs.get_run(settings, run_id, user=me())
            metrics = training_runs.run_metrics(settings, run_id, user=me())
            samples = training_runs.run_samples(settings, run_id, user=me())
            log = training_runs.run_log(settings, run_id, user=me())
            evaluating = (r.evaluation or {}).get("status") == "running"
            progress = training_runs.run_eval_progress(settings, run_id, user=me()) if evaluating else None
        except REFUSED as exc:
            return (gr.update(visible=True), f"**Cannot show run #{run_id}:** {text_md(exc)}", message, *curves([]),
                    None, "", "", *eval_view(None), *runs_list(), "", gr.Timer(active=False))  # fmt: skip
        live = r.status in LIVE or (r.evaluation or {}).get("status") in ("queued", "running")
        listed = runs_list()
        now = repr((r, len(metrics), samples[-1:], log, listed, progress))
        if now == shown:
            return *(gr.update(),) * (len(run_view) - 2), now, gr.Timer(active=live)
        head = describe_run(r) + ("  \nNo steps yet: the curves fill as it trains." if live and not metrics else "")
        frames = curves(metrics)
        return (gr.update(visible=True), head, message, *frames, curve_axes(frames, r.total_steps),
                describe_samples(samples), log,
                *eval_view(r.evaluation, r.status == "done", progress, r.selection), *listed, now,
                gr.Timer(active=live))  # fmt: skip

    def show_axes(kept: list[dict] | None):
        """The curves' axes show_run kept, sent after their data (curve_axes); unchanged limits redraw nothing."""
        return kept or [gr.update()] * len(plots)

    def on_tick(run_id: int | None, shown: str | None):
        return show_run(run_id, None, shown)

    def on_open(evt: gr.SelectData):
        run_id = int(evt.row_value[0])
        return run_id, *show_run(run_id)

    def act(action: Callable[..., object], verb: str, done: Callable[[object], str]):
        """A button's handler: do it to the open run, then show the run and the registry as they are now."""

        def handler(run_id: int | None):
            if run_id is None:
                return *show_run(None, f"**Cannot {verb}:** choose a run in the table first."), gr.update()
            try:
                result = action(settings, int(run_id), user=me())
            except REFUSED as exc:
                return *show_run(run_id, f"**Cannot {verb}:** {text_md(exc)}"), gr.update()
            return *show_run(run_id, done(result)), models_view()[0]

        return handler

    # --- Models -----------------------------------------------------------------------------------

    def models_view(note: str = ""):
        try:
            versions = registry.registry(settings, user=me())
        except REFUSED as exc:
            return [], gr.update(), f"**Cannot list the model versions:** {text_md(exc)}"
        choices = [(f"base: {settings.model} (no version)", 0)] + [
            (f"#{v['id']} {v['name']}", v["id"]) for v in versions
        ]
        return model_rows(settings, versions), gr.update(choices=choices, value=None), note

    def on_activate(version_id: int | None):
        if version_id is None:
            return models_view("**Cannot switch:** choose a version (or the base) first.")
        try:
            with session_scope(settings.resolved_database_url) as s:
                v = activate_version(s, int(version_id), user=me())
                name = v.name if v else None
        except REFUSED as exc:
            return models_view(f"**Cannot switch:** {text_md(exc)}")
        now = f"version #{int(version_id)} {text_md(name)}" if name else f"the base model {text_md(settings.model)}"
        return models_view(f"New readings now use {now}; readings in flight finish on the version they began with.")

    # --- the tabs ---------------------------------------------------------------------------------

    with gr.Tab("Training", id="training", visible=False, elem_id="training-tab") as training_tab:
        with gr.Tabs(elem_id="training-pages") as pages:
            with gr.Tab("Data", id="data", elem_id="training-data"):
                gr.Markdown(
                    "### The feedback collected\nWhat readers said about answers. A reader's feedback "
                    "trains a run only when you include it."
                )
                feedback_note = gr.Markdown(elem_id="feedback-note", latex_delimiters=[])
                feedback_table = gr.Dataframe(
                    value=[],
                    headers=FEEDBACK_COLUMNS,
                    type="array",
                    interactive=False,
                    wrap=True,
                    max_height=320,
                    elem_id="feedback-table",
                    column_widths=["5%", "8%", "19%", "14%", "14%", "13%", "9%", "11%", "7%"],
                )
                gr.Markdown("### What the run trains on")
                with gr.Row():
                    include = gr.Checkbox(
                        False,
                        label="Include readers' feedback (held-out documents are never trained on)",
                        elem_id="include-feedback",
                    )
                    since = gr.Textbox(label="Feedback since (YYYY-MM-DD, UTC; empty: all)", elem_id="feedback-since")
                    picked = gr.Dropdown(
                        label="Only these verdicts (empty: all since that day)",
                        choices=[],
                        multiselect=True,
                        elem_id="feedback-pick",
                    )
                contracts = gr.Checkbox(False, label="Contracts' expert QA", elem_id="use-contracts")
                qa_files = gr.CheckboxGroup([], label="QA files on the server", elem_id="qa-files")
                kinds = gr.CheckboxGroup(  # its choices from the start: an event before the data loads was refused
                    [(f"{k}: {text}", k) for k, text in training_runs.KIND_HELP.items()],
                    value=["single-needle"],
                    label="Synthetic tasks planted in the training books",
                    elem_id="synthetic-kinds",
                )
                lengths = gr.Textbox(
                    "1024",
                    label="Synthetic document lengths in tokens, shortest first (a curriculum over the run)",
                    elem_id="lengths",
                )
                preview = gr.Button("Preview samples", elem_id="preview")
                preview_note = gr.Markdown(elem_id="preview-note", latex_delimiters=[])
                samples_table = gr.Dataframe(
                    value=[],
                    headers=SAMPLE_COLUMNS,
                    type="array",
                    interactive=False,
                    wrap=True,
                    max_height=360,
                    elem_id="preview-table",
                    column_widths=["10%", "30%", "15%", "10%", "35%"],
                )
            with gr.Tab("New run", id="new", elem_id="training-new"):
                gr.Markdown("The data comes from **Data**; the other settings are the trainer's `small` preset.")
                with gr.Row():
                    name = gr.Textbox(
                        label="Name (empty: one is made from the date)", max_length=200, elem_id="run-name"
                    )
                    start_version = gr.Dropdown(
                        label="Start from (the weights it trains further)",
                        choices=[("the active model", 0)],
                        value=0,
                        elem_id="start-version",
                    )
                # A model is best served with the sizes it was trained on: the app's own reading sizes first.
                defaults = {
                    **vars(RunParams()),
                    "sft_samples_per_step": RunParams().samples_per_step,
                    "sft_carry": 0,
                    "chunk_tokens": settings.chunk_tokens,
                    "memory_tokens": settings.memory_tokens,
                    "mix_feedback": DataConfig.model_fields["mix_feedback"].default,
                }
                numbers = []
                for i in range(0, len(FORM), 3):
                    with gr.Row():
                        for key in FORM[i : i + 3]:
                            numbers.append(
                                gr.Number(
                                    defaults[key],
                                    label=LABELS[key],
                                    info=help_text.get(key),
                                    precision=None if key in FLOATS else 0,
                                    elem_id=f"param-{key.replace('_', '-')}",
                                )
                            )
                estimate = gr.Markdown(elem_id="estimate", latex_delimiters=[])
                start = gr.Button("Start", variant="primary", elem_id="start-run")
                start_msg = gr.Markdown(elem_id="start-msg", latex_delimiters=[])
            with gr.Tab("Runs", id="runs", elem_id="training-runs"):
                runs_note = gr.Markdown(NO_RUNS, elem_id="runs-note", latex_delimiters=[])
                runs_table = gr.Dataframe(
                    value=[],
                    headers=RUN_COLUMNS,
                    type="array",
                    interactive=False,
                    wrap=True,
                    max_height=300,
                    elem_id="runs-table",
                    column_widths=["6%", "34%", "11%", "9%", "8%", "17%", "15%"],
                )
                # Shown once a run is open, never hidden again: Gradio errs on plots hidden after a tab switch.
                with gr.Column(visible=False, elem_id="run-page") as run_page:
                    run_head = gr.Markdown(elem_id="run-head", latex_delimiters=[])
                    with gr.Row():
                        cancel = gr.Button("Cancel", size="sm", elem_id="run-cancel")
                        resume = gr.Button("Resume", size="sm", elem_id="run-resume")
                        evaluate = gr.Button("Evaluate", size="sm", elem_id="run-evaluate")
                        promote = gr.Button("Promote", size="sm", elem_id="run-promote")
                    run_msg = gr.Markdown(elem_id="run-msg", latex_delimiters=[])
                    plots = []
                    for i in range(0, len(PLOTS), 2):
                        with gr.Row():
                            for title, elem_id, *_ in PLOTS[i : i + 2]:
                                plots.append(curve_plot(title, elem_id))
                    with gr.Accordion(
                        "Latest sample rollouts: question, each step's memory, answer, reward", open=True
                    ):
                        samples = gr.Markdown(elem_id="run-samples", latex_delimiters=[])
                    log = gr.Textbox(
                        label="Log (last lines)",
                        lines=10,
                        max_lines=20,
                        interactive=False,
                        autoscroll=True,
                        elem_id="run-log",
                    )
                    with gr.Column(elem_id="evaluation"):
                        gr.Markdown("### Evaluation: the active model and this run on the same held-out sets")
                        eval_note = gr.Markdown(elem_id="eval-note", latex_delimiters=[])
                        eval_table = gr.Dataframe(
                            value=[],
                            headers=EVAL_COLUMNS,
                            type="array",
                            interactive=False,
                            wrap=True,
                            visible=False,
                            elem_id="eval-table",
                        )
                        eval_plot = gr.BarPlot(
                            bars_frame([]),
                            x="set",
                            y="sub_em",
                            color="model",
                            y_lim=[0, 1],
                            color_map=COLORS,
                            sort=[],  # Vega-Lite: values not listed keep their order
                            label="Sub-EM per held-out set: baseline and this run",
                            elem_id="eval-plot",
                        )
                run_id = gr.State(None)
                shown = gr.State("")
                limits = gr.State(None)  # the open run's curve axes (curve_axes), sent after the data
                timer = gr.Timer(2.0, active=False)
    with gr.Tab("Models", id="models", visible=False, elem_id="models-tab") as models_tab:
        gr.Markdown(
            "### Model versions\nThe active version reads new questions; readings in flight finish on the "
            "version they began with. Lineage: the base, then each run and the version it was promoted to."
        )
        models_table = gr.Dataframe(
            value=[],
            headers=MODEL_COLUMNS,
            type="array",
            interactive=False,
            wrap=True,
            elem_id="models-table",
            column_widths=["5%", "17%", "8%", "30%", "15%", "15%", "10%"],
        )
        with gr.Row():
            pick_version = gr.Dropdown(label="Version", choices=[], value=None, elem_id="pick-version")
            activate = gr.Button("Activate", variant="primary", scale=0, min_width=160, elem_id="activate-version")
        models_msg = gr.Markdown(elem_id="models-msg", latex_delimiters=[])

    selection = [include, since, picked, contracts, qa_files, kinds, lengths]
    data_view = [feedback_note, feedback_table, picked, contracts, qa_files, kinds, start_version]
    run_view = [
        run_page,
        run_head,
        run_msg,
        *plots,
        limits,
        samples,
        log,
        eval_note,
        eval_table,
        eval_plot,
        runs_note,
        runs_table,
        shown,
        timer,
    ]
    models_out = [models_table, pick_version, models_msg]

    axes = {"fn": show_axes, "inputs": limits, "outputs": plots, "show_progress": "hidden"}  # after the data
    training_tab.select(load_data, None, data_view, show_progress="hidden")
    training_tab.select(show_run, run_id, run_view, show_progress="hidden").then(**axes)
    preview.click(on_preview, selection, [preview_note, samples_table], show_progress="hidden")
    gr.on(
        [c.change for c in (*selection, *numbers)] + [training_tab.select],
        on_estimate,
        [*selection, *numbers],
        estimate,
        show_progress="hidden",
    )
    start.click(
        on_start,
        [run_id, name, start_version, *selection, *numbers],
        [start_msg, pages, run_id, *run_view],
        show_progress="hidden",
    ).then(**axes)
    runs_table.select(on_open, None, [run_id, *run_view], show_progress="hidden").then(**axes)
    timer.tick(on_tick, [run_id, shown], run_view, show_progress="hidden").then(**axes)
    for button, action, verb, done in (
        (cancel, training_runs.cancel_run, "cancel", lambda r: f"Run #{r.id} is {text_md(r.status)}."),
        (resume, training_runs.resume_run, "resume", lambda r: f"Run #{r.id} is queued again: it continues from its "
         "last checkpoint."),
        (evaluate, training_runs.evaluate_run, "evaluate", lambda r: f"Evaluation of run #{r.id} queued: the active "
         "model and this run read the same held-out sets."),
        (promote, training_runs.promote_run, "promote", lambda v: f"Promoted: model version #{v} is now active; "
         "new readings use it (readings in flight finish on the version they began with)."),
    ):  # fmt: skip
        button.click(act(action, verb, done), run_id, [*run_view, models_table], show_progress="hidden").then(**axes)
    models_tab.select(models_view, None, models_out, show_progress="hidden")
    activate.click(on_activate, pick_version, models_out, show_progress="hidden")
    return AdminTabs(training_tab, models_tab)
