"""The admins' Training and Models tabs: choose data (readers' feedback only when included), start a
run, watch it live (curves, sample rollouts, log), cancel, resume, evaluate and promote it; list the
model versions with their lineage and switch the active one (back to the base included).

Every action calls app/services/training_runs.py or app/services/models.py, passing the signed-in user
(`me`), so a reader who reaches these handlers is refused by the services; the tabs are hidden for
readers anyway (gradio_app.on_account). Values from users, documents and the model go into Markdown
through `text_md`; tables and text boxes show them as text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

import gradio as gr
import pandas as pd

from app.db import session_scope
from app.services import registry, training_runs
from app.services.errors import NotFound
from app.services.models import activate_version
from app.services.training_runs import DataOverview, DataSelection, RunParams, RunView
from app.services.users import UserView
from app.settings import Settings
from app.ui.text import fmt_seconds, text_md
from training.config import DataConfig, TrainConfig

#: statuses a run's page follows live
LIVE = {"queued", "running", "cancelling"}
REFUSED = (NotFound, ValueError, PermissionError)  # RunError is a ValueError, Forbidden a PermissionError

FEEDBACK_COLUMNS = ["#", "Verdict", "Question", "Model answer", "Corrected answer", "Document", "User",
                    "Date (UTC)", "Held out"]  # fmt: skip
SAMPLE_COLUMNS = ["Source", "Question", "Answers", "Document tokens", "Document begins"]
RUN_COLUMNS = ["#", "Name", "Status", "Step", "Queue", "Started (UTC)", "ETA"]
EVAL_COLUMNS = ["Set", "Length / category", "Kind", "n", "Baseline sub-EM", "This run sub-EM", "Change",
                "Baseline EM", "This run EM"]  # fmt: skip
MODEL_COLUMNS = ["#", "Version", "Active", "Lineage", "Sub-EM on held-out sets", "Weights (engine)", "Created (UTC)"]
#: the run page's curves, one metric each: (title, elem_id, phase or None for both, metrics.jsonl key)
PLOTS = [("Reward (mean over the rollouts)", "plot-reward", "rl", "reward"),
         ("Accuracy (exact match)", "plot-accuracy", "rl", "accuracy"),
         ("Loss (SFT warm start)", "plot-sft-loss", "sft", "loss"), ("Loss (RL)", "plot-rl-loss", "rl", "loss"),
         ("KL to the reference", "plot-kl", "rl", "kl"), ("Clip fraction", "plot-clip", "rl", "clip_fraction"),
         ("Groups filtered (all rewards equal)", "plot-filtered", "rl", "groups_filtered"),
         ("Tokens per second", "plot-tokens", None, "tokens_per_s")]  # fmt: skip
#: the New run form, three a row: RunParams fields, and TrainConfig fields it sets through `extra`
#: (DataConfig's under "data")
FORM = ("sft_steps", "sft_samples_per_step", "sft_learning_rate", "sft_carry", "rl_steps", "samples_per_step", "group_size",
        "learning_rate", "temperature", "kl_coef", "chunk_tokens", "memory_tokens", "mix_feedback", "save_every")  # fmt: skip
EXTRA = {"sft_samples_per_step", "sft_carry", "chunk_tokens", "memory_tokens"}
DATA = {"mix_feedback"}
FLOATS = {"learning_rate", "sft_learning_rate", "temperature", "kl_coef", "mix_feedback"}
LABELS = {"sft_steps": "SFT warm-start steps (0: off)", "sft_samples_per_step": "Samples per SFT step",
          "sft_learning_rate": "Learning rate (SFT)", "sft_carry": "SFT conversations carrying evidence",
          "rl_steps": "RL (GRPO) steps",
          "samples_per_step": "Samples per RL step", "group_size": "Group size (rollouts per sample)",
          "learning_rate": "Learning rate (RL)", "temperature": "Sampling temperature", "kl_coef": "KL coefficient β",
          "chunk_tokens": "Chunk tokens", "memory_tokens": "Memory tokens",
          "mix_feedback": "Share of samples from feedback (when included)",
          "save_every": "Save a checkpoint every (steps)"}
NO_RUNS = "No runs yet: choose data and start one (**New run**)."


def _when(value: object) -> str:
    return f"{value:%Y-%m-%d %H:%M}" if value else ""


def _one_line(value: str | None, limit: int = 200) -> str:
    text = " ".join((value or "").split())
    return text[:limit] + ("…" if len(text) > limit else "")


def feedback_rows(overview: DataOverview) -> list[list[object]]:
    return [[f.id, f.verdict, _one_line(f.question), _one_line(f.answer), _one_line(f.corrected_answer),
             _one_line(f.document_title, 80), f.username, _when(f.created_at), "yes" if f.held_out else "no"]
            for f in overview.feedback]  # fmt: skip


def describe_feedback(overview: DataOverview) -> str:
    rows = overview.feedback
    if not rows:
        return ("No feedback yet: readers judge answers under each reading in **Read** (correct or incorrect, "
                "and the right answer); their verdicts show here.")
    held = sum(f.held_out for f in rows)
    people = len({f.username for f in rows})
    documents = len({f.document_id for f in rows})
    return (f"{len(rows)} verdict{'s' if len(rows) != 1 else ''} from {people} user{'s' if people != 1 else ''} on "
            f"{documents} document{'s' if documents != 1 else ''}; {held} on held-out documents (kept for "
            "evaluation, never trained on). A run uses them only when you include them below.")


def parse_selection(include: bool, since: str | None, feedback_ids: list[int] | None, contracts: bool,
                    qa_files: list[str] | None, kinds: list[str] | None, lengths: str | None) -> DataSelection:
    """The Data page's choices; ValueError says which one to fix."""
    try:
        day = date.fromisoformat(since.strip()) if since and since.strip() else None
    except ValueError:
        raise ValueError(f"feedback since: {since.strip()!r} is not a day; write it as YYYY-MM-DD") from None
    try:
        sizes = tuple(int(x) for x in (lengths or "").replace(",", " ").split())
    except ValueError:
        raise ValueError(f"lengths: {lengths!r} is not a list of whole numbers, e.g. 1024, 2048") from None
    return DataSelection(include_feedback=bool(include), feedback_since=day,
                         feedback_ids=tuple(int(i) for i in feedback_ids) if feedback_ids else None,
                         contracts=bool(contracts), qa_files=tuple(qa_files or ()),
                         synthetic_kinds=tuple(kinds or ()), lengths=sizes)  # fmt: skip


def parse_params(values: dict[str, float | None]) -> RunParams:
    """The New run form's numbers; an empty box keeps the default (RunParams', or the trainer's for `extra`)."""
    typed = {k: float(v) if k in FLOATS else int(v) for k, v in values.items() if v is not None}
    extra: dict[str, object] = {k: v for k, v in typed.items() if k in EXTRA}
    if data := {k: v for k, v in typed.items() if k in DATA}:
        extra["data"] = data
    return RunParams(**{k: v for k, v in typed.items() if k not in EXTRA | DATA}, extra=extra)


def run_rows(runs: list[RunView]) -> list[list[object]]:
    return [[r.id, r.name, r.status, f"{r.step}/{r.total_steps}", r.queue_position or "", _when(r.started_at),
             fmt_seconds(r.eta_s) if r.status == "running" and r.eta_s is not None else ""] for r in runs]  # fmt: skip


def describe_run(r: RunView) -> str:
    """The open run's headline: what, where it is, and what to do next."""
    line = (f"**#{r.id} {text_md(r.name)}** · {text_md(r.status)} · step {r.step} of {r.total_steps} · "
            f"from {text_md(r.start_version)}" + (f" · by {text_md(r.created_by)}" if r.created_by else ""))
    if r.status == "queued":
        line += f"  \nQueued, position {r.queue_position}: it starts when the training worker is free."
    elif r.status == "running":
        line += f" · ETA {fmt_seconds(r.eta_s)}" if r.eta_s is not None else " · ETA after the first step"
    elif r.status == "cancelling":
        line += "  \nStopping: the trainer saves a checkpoint after the step under way."
    elif r.status in ("cancelled", "failed"):
        if r.error:
            line += f"  \nError: {error_line(r.error)}" + (" (the log below has the rest)" if "\n" in r.error else "")
        line += ("  \n**Resume** continues from its last checkpoint." if r.resumable else
                 "  \n**Resume** starts it again (no checkpoint was saved).")  # fmt: skip
    elif r.status == "done":
        line += f" · finished {_when(r.finished_at)} UTC" if r.finished_at else ""
        if r.version_id:
            line += f"  \nPromoted to model version #{r.version_id}."
        elif not r.evaluation:
            line += "  \n**Evaluate** it against the active model, then **Promote** it."
    return line


def error_line(error: str) -> str:
    """An error in one line of Markdown. A child process's is "… stopped (exit code 1); the end of its log:"
    and the log's lines: its first line and its last (the cause) are shown."""
    lines = [x for x in error.splitlines() if x.strip()] or [""]
    return text_md(lines[0]) + (f" … {text_md(lines[-1])}" if len(lines) > 1 else "")


def curves(rows: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """One long frame (step, value, metric) per PLOTS entry."""
    return [curve_frame([{"step": m["step"], "value": float(m[key]), "metric": key} for m in rows
                         if phase in (None, m.get("phase")) and isinstance(m.get(key), int | float)])
            for _, _, phase, key in PLOTS]  # fmt: skip


def curve_frame(points: list[dict[str, Any]]) -> pd.DataFrame:
    """Typed even when empty: the plot takes its axes' kinds (numbers, not categories) from the frame."""
    return pd.DataFrame(points, columns=["step", "value", "metric"]).astype({"step": int, "value": float, "metric": str})


def describe_samples(samples: list[dict[str, Any]]) -> str:
    """The latest rollouts, newest first: question, the gold answers, each step's memory, answer, reward."""
    if not samples:
        return "No sample rollouts yet: RL steps write one each (the best of its groups)."
    parts = []
    for s in reversed(samples):
        gold = " | ".join(str(a) for a in s.get("gold") or [])
        lines = [f"**Step {text_md(s.get('step', '?'))}** · reward {text_md(s.get('reward', '–'))} · question: "
                 f"{text_md(s.get('question', ''))} · gold: {text_md(gold)}"]
        lines += [f"{k}. memory after chunk {k}: {text_md(m)}" for k, m in enumerate(s.get("memories") or [], 1)]
        lines.append(f"\n**Answer:** {text_md(s.get('answer', ''))}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def eval_view(evaluation: dict[str, Any] | None, done: bool = True) -> tuple[str, dict, pd.DataFrame]:
    """The evaluation's status line, the side-by-side table and the plot's bars: sub-EM per held-out set,
    a baseline bar beside a this-run bar (one x category each: Gradio stacks bars of one category), in
    the table's order. `done`: the run is."""
    if not evaluation:
        note = ("Not evaluated yet: **Evaluate** reads the held-out sets with the active model and with this run."
                if done else "A run is evaluated once it is done.")  # fmt: skip
        return note, gr.update(value=[], visible=False), bars_frame([])
    state = evaluation.get("status")
    if state in ("queued", "running"):
        note = f"Evaluation {text_md(state)}: the active model and this run read the same held-out sets…"
    elif state == "failed":
        note = (f"The evaluation failed: {error_line(evaluation.get('error') or 'no reason given')}  \n"
                "**Evaluate** tries again.")
    else:
        labels = [(evaluation.get(side) or {}).get("label") or name for side, name in
                  (("baseline", "the active model"), ("candidate", "this run"))]  # fmt: skip
        note = (f"Baseline: {text_md(labels[0])}; this run: {text_md(labels[1])}. Sub-EM: the gold answer is in "
                "the answer (or the reverse); EM: exact match.")  # fmt: skip
    base, candidate = _sets(evaluation.get("baseline")), _sets(evaluation.get("candidate"))
    mixed = {r.get("group") for r in candidate if r.get("kind") == "all"}  # several kinds: plot their `all` row
    rows, points = [], []
    for c in candidate:
        key = (c.get("suite"), c.get("group"), c.get("kind"))
        b = next((r for r in base if (r.get("suite"), r.get("group"), r.get("kind")) == key), {})
        change = f"{c['sub_em'] - b['sub_em']:+.1%}" if "sub_em" in b and "sub_em" in c else ""
        rows.append([*key, c.get("n", ""), _pct(b.get("sub_em")), _pct(c.get("sub_em")), change,
                     _pct(b.get("exact_match")), _pct(c.get("exact_match"))])  # fmt: skip
        if key[1] not in mixed or key[2] == "all":
            points += [{"set": f"{key[1]} · {name}", "sub_em": float(side["sub_em"]), "model": name}
                       for side, name in ((b, "baseline"), (c, "this run")) if "sub_em" in side]  # fmt: skip
    return note, gr.update(value=rows, visible=bool(rows)), bars_frame(points)


def _sets(side: object) -> list[dict[str, Any]]:
    """One side's rows: its `longread eval` summary (per length), then the held-out feedback as one row."""
    if not isinstance(side, dict):
        return []
    rows = [r for r in side.get("summary") or [] if isinstance(r, dict)]
    cases = side.get("cases")
    if isinstance(cases, dict) and "sub_em" in cases:
        rows.append({"suite": "feedback", "group": "held-out feedback", "kind": "readers' questions", **cases})
    return rows


def _pct(value: object) -> str:
    return f"{value:.1%}" if isinstance(value, int | float) else ""


#: the evaluation's bars. Gradio fixes a plot's colours (its legend) when the plot is drawn, not when its
#: data changes, draws it again with stale data when a property changes, and errs on a plot hidden after a
#: tab switch: so only the plot's data ever changes, and it has both colours from the start (zero bars
#: under "–" until there is an evaluation). The curves have one colour each.
COLORS = {"baseline": "#94a3b8", "this run": "#2563eb"}


def bars_frame(points: list[dict[str, Any]]) -> pd.DataFrame:
    """The evaluation plot's frame; with no bars, zero ones for both sides (see COLORS)."""
    points = points or [{"set": "–", "sub_em": 0.0, "model": m} for m in COLORS]
    return pd.DataFrame(points, columns=["set", "sub_em", "model"]).astype({"set": str, "sub_em": float, "model": str})


def model_rows(settings: Settings, versions: list[dict[str, Any]]) -> list[list[object]]:
    """The registry: the base first (active when no version is), then every version."""
    none_active = not any(v["active"] for v in versions)
    rows: list[list[object]] = [[0, f"base: {settings.model}", "● active" if none_active else "",
                                 "the settings' model (LONGREAD_MODEL)", "", f"{settings.model} ({settings.engine})",
                                 ""]]  # fmt: skip
    for v in versions:
        metrics = ", ".join(f"{k} {x:.0%}" for k, x in v["key_metrics"].items())
        weights = (f"{v['base_model']} + LoRA adapter" if v["adapter_path"] else v["base_model"]) + (
            f" ({v['engine']})" if v["engine"] else "")
        rows.append([v["id"], v["name"], "● active" if v["active"] else "", " → ".join(v["lineage"]), metrics,
                     weights, v["created_at"][:16].replace("T", " ")])  # fmt: skip
    return rows


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
                gr.update(choices=[(f"#{f.id} {f.verdict}: {_one_line(f.question, 60)}", f.id) for f in d.feedback]),
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
        rows = [[x.source, _one_line(x.question), " | ".join(x.answers), x.doc_tokens, _one_line(x.excerpt, 160)]
                for x in samples]  # fmt: skip
        note = (f"{len(rows)} of the samples this selection makes:" if rows else
                "This selection makes no samples: include feedback, contracts, QA files or synthetic kinds.")
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
            run = training_runs.start_run(settings, parse_selection(*choices), _params(numbers),
                                          name=(name or "").strip() or None,
                                          start_version_id=int(start_version) if start_version else None, user=me())
        except REFUSED as exc:
            return f"**Cannot start:** {text_md(exc)}", gr.update(), open_id, *(gr.update(),) * len(run_view)
        note = f"Started run #{run.id} {text_md(run.name)}: " + (
            f"queued, position {run.queue_position}." if run.status == "queued" else f"{text_md(run.status)}.")
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
            return (gr.update(visible=False), "", message, *curves([]), "", "", *eval_view(None), *runs_list(), "",
                    gr.Timer(active=False))  # fmt: skip
        try:
            r = training_runs.get_run(settings, run_id, user=me())
            metrics = training_runs.run_metrics(settings, run_id, user=me())
            samples = training_runs.run_samples(settings, run_id, user=me())
            log = training_runs.run_log(settings, run_id, user=me())
        except REFUSED as exc:
            return (gr.update(visible=True), f"**Cannot show run #{run_id}:** {text_md(exc)}", message, *curves([]),
                    "", "", *eval_view(None), *runs_list(), "", gr.Timer(active=False))  # fmt: skip
        live = r.status in LIVE or (r.evaluation or {}).get("status") in ("queued", "running")
        listed = runs_list()
        now = repr((r, len(metrics), samples[-1:], log, listed))
        if now == shown:
            return *(gr.update(),) * (len(run_view) - 2), now, gr.Timer(active=live)
        head = describe_run(r) + ("  \nNo steps yet: the curves fill as it trains." if live and not metrics else "")
        return (gr.update(visible=True), head, message, *curves(metrics), describe_samples(samples), log,
                *eval_view(r.evaluation, r.status == "done"), *listed, now, gr.Timer(active=live))  # fmt: skip

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
        choices = [(f"base: {settings.model} (no version)", 0)] + [(f"#{v['id']} {v['name']}", v["id"]) for v in versions]
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
                gr.Markdown("### The feedback collected\nWhat readers said about answers. A reader's feedback "
                            "trains a run only when you include it.")
                feedback_note = gr.Markdown(elem_id="feedback-note", latex_delimiters=[])
                feedback_table = gr.Dataframe(value=[], headers=FEEDBACK_COLUMNS, type="array", interactive=False,
                                              wrap=True, max_height=320, elem_id="feedback-table",
                                              column_widths=["5%", "8%", "19%", "14%", "14%", "13%", "9%", "11%", "7%"])
                gr.Markdown("### What the run trains on")
                with gr.Row():
                    include = gr.Checkbox(False, label="Include readers' feedback (held-out documents are never "
                                          "trained on)", elem_id="include-feedback")
                    since = gr.Textbox(label="Feedback since (YYYY-MM-DD, UTC; empty: all)", elem_id="feedback-since")
                    picked = gr.Dropdown(label="Only these verdicts (empty: all since that day)", choices=[],
                                         multiselect=True, elem_id="feedback-pick")
                contracts = gr.Checkbox(False, label="Contracts' expert QA", elem_id="use-contracts")
                qa_files = gr.CheckboxGroup([], label="QA files on the server", elem_id="qa-files")
                kinds = gr.CheckboxGroup([], value=["single-needle"], label="Synthetic tasks planted in the "
                                         "training books", elem_id="synthetic-kinds")
                lengths = gr.Textbox("1024", label="Synthetic document lengths in tokens, shortest first (a "
                                     "curriculum over the run)", elem_id="lengths")
                preview = gr.Button("Preview samples", elem_id="preview")
                preview_note = gr.Markdown(elem_id="preview-note", latex_delimiters=[])
                samples_table = gr.Dataframe(value=[], headers=SAMPLE_COLUMNS, type="array", interactive=False,
                                             wrap=True, max_height=360, elem_id="preview-table",
                                             column_widths=["10%", "30%", "15%", "10%", "35%"])
            with gr.Tab("New run", id="new", elem_id="training-new"):
                gr.Markdown("The data comes from **Data**; the other settings are the trainer's `small` preset.")
                with gr.Row():
                    name = gr.Textbox(label="Name (empty: one is made from the date)", max_length=200,
                                      elem_id="run-name")
                    start_version = gr.Dropdown(label="Start from (the weights it trains further)",
                                                choices=[("the active model", 0)], value=0, elem_id="start-version")
                # A model is best served with the sizes it was trained on: the app's own reading sizes first.
                defaults = {**vars(RunParams()), "sft_samples_per_step": RunParams().samples_per_step, "sft_carry": 0,
                            "chunk_tokens": settings.chunk_tokens, "memory_tokens": settings.memory_tokens,
                            "mix_feedback": DataConfig.model_fields["mix_feedback"].default}
                numbers = []
                for i in range(0, len(FORM), 3):
                    with gr.Row():
                        for key in FORM[i:i + 3]:
                            numbers.append(gr.Number(defaults[key], label=LABELS[key], info=help_text.get(key),
                                                     precision=None if key in FLOATS else 0,
                                                     elem_id=f"param-{key.replace('_', '-')}"))
                estimate = gr.Markdown(elem_id="estimate", latex_delimiters=[])
                start = gr.Button("Start", variant="primary", elem_id="start-run")
                start_msg = gr.Markdown(elem_id="start-msg", latex_delimiters=[])
            with gr.Tab("Runs", id="runs", elem_id="training-runs"):
                runs_note = gr.Markdown(NO_RUNS, elem_id="runs-note", latex_delimiters=[])
                runs_table = gr.Dataframe(value=[], headers=RUN_COLUMNS, type="array", interactive=False, wrap=True,
                                          max_height=300, elem_id="runs-table",
                                          column_widths=["6%", "34%", "11%", "9%", "8%", "17%", "15%"])
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
                            for title, elem_id, _, _ in PLOTS[i:i + 2]:
                                # d3 formats: whole steps, values in up to 4 significant digits (Gradio's
                                # default shows 6 decimals, cut off when a curve has one point)
                                plots.append(gr.LinePlot(curve_frame([]), x="step", y="value", label=title,
                                                         x_axis_format="~g", y_axis_format=".4~g", elem_id=elem_id))
                    with gr.Accordion("Latest sample rollouts: question, each step's memory, answer, reward", open=True):
                        samples = gr.Markdown(elem_id="run-samples", latex_delimiters=[])
                    log = gr.Textbox(label="Log (last lines)", lines=10, max_lines=20, interactive=False, autoscroll=True,
                                     elem_id="run-log")
                    with gr.Column(elem_id="evaluation"):
                        gr.Markdown("### Evaluation: the active model and this run on the same held-out sets")
                        eval_note = gr.Markdown(elem_id="eval-note", latex_delimiters=[])
                        eval_table = gr.Dataframe(value=[], headers=EVAL_COLUMNS, type="array", interactive=False,
                                                  wrap=True, visible=False, elem_id="eval-table")
                        eval_plot = gr.BarPlot(bars_frame([]), x="set", y="sub_em", color="model", y_lim=[0, 1],
                                               color_map=COLORS, sort=[],  # Vega-Lite: values not listed keep their order
                                               label="Sub-EM per held-out set: baseline and this run",
                                               elem_id="eval-plot")
                run_id = gr.State(None)
                shown = gr.State("")
                timer = gr.Timer(2.0, active=False)
    with gr.Tab("Models", id="models", visible=False, elem_id="models-tab") as models_tab:
        gr.Markdown("### Model versions\nThe active version reads new questions; readings in flight finish on the "
                    "version they began with. Lineage: the base, then each run and the version it was promoted to.")
        models_table = gr.Dataframe(value=[], headers=MODEL_COLUMNS, type="array", interactive=False, wrap=True,
                                    elem_id="models-table",
                                    column_widths=["5%", "17%", "8%", "30%", "15%", "15%", "10%"])
        with gr.Row():
            pick_version = gr.Dropdown(label="Version", choices=[], value=None, elem_id="pick-version")
            activate = gr.Button("Activate", variant="primary", scale=0, min_width=160, elem_id="activate-version")
        models_msg = gr.Markdown(elem_id="models-msg", latex_delimiters=[])

    selection = [include, since, picked, contracts, qa_files, kinds, lengths]
    data_view = [feedback_note, feedback_table, picked, contracts, qa_files, kinds, start_version]
    run_view = [run_page, run_head, run_msg, *plots, samples, log, eval_note, eval_table, eval_plot, runs_note,
                runs_table, shown, timer]
    models_out = [models_table, pick_version, models_msg]

    training_tab.select(load_data, None, data_view, show_progress="hidden")
    training_tab.select(show_run, run_id, run_view, show_progress="hidden")
    preview.click(on_preview, selection, [preview_note, samples_table], show_progress="hidden")
    gr.on([c.change for c in (*selection, *numbers)] + [training_tab.select], on_estimate, [*selection, *numbers],
          estimate, show_progress="hidden")
    start.click(on_start, [run_id, name, start_version, *selection, *numbers], [start_msg, pages, run_id, *run_view],
                show_progress="hidden")
    runs_table.select(on_open, None, [run_id, *run_view], show_progress="hidden")
    timer.tick(on_tick, [run_id, shown], run_view, show_progress="hidden")
    for button, action, verb, done in (
        (cancel, training_runs.cancel_run, "cancel", lambda r: f"Run #{r.id} is {text_md(r.status)}."),
        (resume, training_runs.resume_run, "resume", lambda r: f"Run #{r.id} is queued again: it continues from its "
         "last checkpoint."),
        (evaluate, training_runs.evaluate_run, "evaluate", lambda r: f"Evaluation of run #{r.id} queued: the active "
         "model and this run read the same held-out sets."),
        (promote, training_runs.promote_run, "promote", lambda v: f"Promoted: model version #{v} is now active; "
         "new readings use it (readings in flight finish on the version they began with)."),
    ):  # fmt: skip
        button.click(act(action, verb, done), run_id, [*run_view, models_table], show_progress="hidden")
    models_tab.select(models_view, None, models_out, show_progress="hidden")
    activate.click(on_activate, pick_version, models_out, show_progress="hidden")
    return AdminTabs(training_tab, models_tab)
