"""What the Training and Models tabs show, as rows, Markdown and plot frames, and how they read their forms:
pure functions of the services' views, tested without a browser (app/ui/training_ui.py and its pages build the tabs)."""

from __future__ import annotations

import math
import re
from datetime import date
from typing import Any

import gradio as gr
import pandas as pd

from app.services.models import version_label
from app.services.training_runs import DataOverview, DataSelection, EvalProgress, RunParams, RunView
from app.settings import Settings
from app.ui.text import fmt_seconds, text_md

FEEDBACK_COLUMNS = [
    "#",
    "Verdict",
    "Question",
    "Model answer",
    "Corrected answer",
    "Document",
    "User",
    "Date (UTC)",
    "Held out",
]
SAMPLE_COLUMNS = ["Source", "Question", "Answers", "Document tokens", "Document begins"]
RUN_COLUMNS = ["#", "Name", "Status", "Step", "Queue", "Started (UTC)", "ETA"]
EVAL_COLUMNS = [
    "Set",
    "Length / category",
    "Kind",
    "n",
    "Baseline: answers right",
    "This run: answers right",
    "Change",
    "Baseline: exact answers",
    "This run: exact answers",
]
#: the metrics in words, as the Models and Runs pages explain them
ANSWERS_RIGHT = (
    "Answers right: the gold (expected) answer is in the model's answer, or the answer in the gold; "
    "exact answers: the answer is the gold one."
)
#: the run page's curves, one metric each: (title, elem_id, phase or None for both, metrics.jsonl key)
PLOTS = [
    ("Reward (mean over the rollouts)", "plot-reward", "rl", "reward"),
    ("Accuracy (exact match)", "plot-accuracy", "rl", "accuracy"),
    ("Loss (SFT warm start)", "plot-sft-loss", "sft", "loss"),
    ("Loss (RL)", "plot-rl-loss", "rl", "loss"),
    ("KL to the reference", "plot-kl", "rl", "kl"),
    ("Clip fraction", "plot-clip", "rl", "clip_fraction"),
    ("Groups filtered (all rewards equal)", "plot-filtered", "rl", "groups_filtered"),
    ("Tokens per second", "plot-tokens", None, "tokens_per_s"),
]
#: the New run form, three a row: RunParams fields, and TrainConfig fields it sets through `extra`
#: (DataConfig's under "data"). No reading sizes: a run trains at its start version's (reading_config).
FORM = (
    "sft_steps",
    "sft_samples_per_step",
    "sft_learning_rate",
    "sft_carry",
    "rl_steps",
    "samples_per_step",
    "group_size",
    "learning_rate",
    "temperature",
    "kl_coef",
    "mix_feedback",
    "save_every",
)
EXTRA = {"sft_samples_per_step", "sft_carry"}
DATA = {"mix_feedback"}
FLOATS = {"learning_rate", "sft_learning_rate", "temperature", "kl_coef", "mix_feedback"}
LABELS = {
    "sft_steps": "SFT warm-start steps (0: off)",
    "sft_samples_per_step": "Samples per SFT step",
    "sft_learning_rate": "Learning rate (SFT)",
    "sft_carry": "SFT conversations carrying evidence",
    "rl_steps": "RL (GRPO) steps",
    "samples_per_step": "Samples per RL step",
    "group_size": "Group size (rollouts per sample)",
    "learning_rate": "Learning rate (RL)",
    "temperature": "Sampling temperature",
    "kl_coef": "KL coefficient β",
    "mix_feedback": "Share of samples from feedback (when included)",
    "save_every": "Save a checkpoint every (steps)",
}
NO_RUNS = "No runs yet: choose data and start one (**New run**)."


def _when(value: object) -> str:
    return f"{value:%Y-%m-%d %H:%M}" if value else ""


def one_line(value: str | None, limit: int = 200) -> str:
    text = " ".join((value or "").split())
    return text[:limit] + ("…" if len(text) > limit else "")


def feedback_rows(overview: DataOverview) -> list[list[object]]:
    return [
        [
            f.id,
            f.verdict,
            one_line(f.question),
            one_line(f.answer),
            one_line(f.corrected_answer),
            one_line(f.document_title, 80),
            f.username,
            _when(f.created_at),
            "yes" if f.held_out else "no",
        ]
        for f in overview.feedback
    ]


def describe_feedback(overview: DataOverview) -> str:
    rows = overview.feedback
    if not rows:
        return (
            "No feedback yet: readers judge answers under each reading in **Read** (correct or incorrect, "
            "and the right answer); their verdicts show here."
        )
    held = sum(f.held_out for f in rows)
    people = len({f.username for f in rows})
    documents = len({f.document_id for f in rows})
    return (
        f"{len(rows)} verdict{'s' if len(rows) != 1 else ''} from {people} user{'s' if people != 1 else ''} on "
        f"{documents} document{'s' if documents != 1 else ''}; {held} on held-out documents (kept for "
        "evaluation, never trained on). A run uses them only when you include them below."
    )


def parse_selection(
    include: bool,
    since: str | None,
    feedback_ids: list[int] | None,
    contracts: bool,
    qa_files: list[str] | None,
    kinds: list[str] | None,
    lengths: str | None,
) -> DataSelection:
    """The Data page's choices; ValueError says which one to fix."""
    try:
        day = date.fromisoformat(since.strip()) if since and since.strip() else None
    except ValueError:
        raise ValueError(f"feedback since: {since.strip()!r} is not a day; write it as YYYY-MM-DD") from None
    try:
        sizes = tuple(int(x) for x in (lengths or "").replace(",", " ").split())
    except ValueError:
        raise ValueError(f"lengths: {lengths!r} is not a list of whole numbers, e.g. 1024, 2048") from None
    return DataSelection(
        include_feedback=bool(include),
        feedback_since=day,
        feedback_ids=tuple(int(i) for i in feedback_ids) if feedback_ids else None,
        contracts=bool(contracts),
        qa_files=tuple(qa_files or ()),
        synthetic_kinds=tuple(kinds or ()),
        lengths=sizes,
    )


def parse_params(values: dict[str, float | None]) -> RunParams:
    """The New run form's numbers; an empty box keeps the default (RunParams', or the trainer's for `extra`)."""
    typed = {k: float(v) if k in FLOATS else int(v) for k, v in values.items() if v is not None}
    extra: dict[str, object] = {k: v for k, v in typed.items() if k in EXTRA}
    if data := {k: v for k, v in typed.items() if k in DATA}:
        extra["data"] = data
    return RunParams(**{k: v for k, v in typed.items() if k not in EXTRA | DATA}, extra=extra)


def run_rows(runs: list[RunView]) -> list[list[object]]:
    return [
        [
            r.id,
            r.name,
            r.status,
            f"{r.step}/{r.total_steps}",
            r.queue_position or "",
            _when(r.started_at),
            fmt_seconds(r.eta_s) if r.status == "running" and r.eta_s is not None else "",
        ]
        for r in runs
    ]


def describe_run(r: RunView) -> str:
    """The open run's headline: what, where it is, and what to do next."""
    line = (
        f"**#{r.id} {text_md(r.name)}** · {text_md(r.status)} · step {r.step} of {r.total_steps} · "
        f"from {text_md(version_label(r.start_version))}" + (f" · by {text_md(r.created_by)}" if r.created_by else "")
    )
    if r.status == "queued":
        line += f"  \nQueued, position {r.queue_position}: it starts when the training worker is free."
    elif r.status == "running":
        line += f" · ETA {fmt_seconds(r.eta_s)}" if r.eta_s is not None else " · ETA after the first step"
    elif r.status == "cancelling":
        line += "  \nStopping: the trainer saves a checkpoint after the step under way."
    elif r.status in ("cancelled", "failed"):
        if r.error:
            line += f"  \nError: {error_line(r.error)}" + (" (the log below has the rest)" if "\n" in r.error else "")
        line += (
            "  \n**Resume** continues from its last checkpoint."
            if r.resumable
            else "  \n**Resume** starts it again (no checkpoint was saved)."
        )
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
    """One long frame (step, value, metric) per PLOTS entry. Only the frames change: see curve_plot."""
    return [
        curve_frame(
            [
                {"step": m["step"], "value": float(m[key]), "metric": key}
                for m in rows
                if phase in (None, m.get("phase")) and isinstance(m.get(key), int | float)
            ]
        )
        for _, _, phase, key in PLOTS
    ]


def curve_frame(points: list[dict[str, Any]]) -> pd.DataFrame:
    """Typed even when empty: the plot takes its axes' kinds (numbers, not categories) from the frame."""
    return pd.DataFrame(points, columns=["step", "value", "metric"]).astype(
        {"step": int, "value": float, "metric": str}
    )


#: metrics that are fractions: their y axis is 0 to 1 whatever the values, with room for a point at either end
FRACTIONS = {"reward", "accuracy", "clip_fraction"}
FRACTION_LIM = [-0.05, 1.05]
#: the least x span: with ~12 ticks on a plot's width, a span of 20 steps puts them at whole steps (a span of 2
#: ticked every half step, labelled "3, 4, 4" in whole steps)
MIN_STEPS_SHOWN = 20


def curve_plot(title: str, elem_id: str) -> gr.ScatterPlot:
    """A curve's plot: points, which show however few steps there are (a LinePlot draws its points only under
    the pointer, so a one-step curve is empty); y in up to 4 significant digits (Gradio's default shows 6
    decimals). Its axes come from `curve_axes`, sent after the data (see there)."""
    return gr.ScatterPlot(
        curve_frame([]), x="step", y="value", label=title, x_axis_format="d", y_axis_format=".4~g", elem_id=elem_id
    )


def curve_axes(frames: list[pd.DataFrame], total_steps: int) -> list[dict[str, Any]]:
    """Each curve's axis limits, to send in an event of their own after its data (`.then`). Gradio lays a plot
    out again only when such a property changes, with the data it holds then: sent with the data, it drew the
    previous data (the curves lagged a step); never sent, the layout stayed the one made for the first, often
    empty or hidden, data (labels clipped, a title squashed to nothing). Limits that change only when the
    data leave them keep the redrawing rare. x: 0 to past the last step, at least MIN_STEPS_SHOWN wide (whole-
    step ticks, no point on the edge); y: 0 to 1 for FRACTIONS, else the data's range widened to round values."""
    x_lim = [0, max(MIN_STEPS_SHOWN, total_steps + 1)]
    return [
        gr.update(x_lim=x_lim, y_lim=FRACTION_LIM if key in FRACTIONS else round_range(frame["value"].tolist()))
        for frame, (_, _, _, key) in zip(frames, PLOTS, strict=True)
    ]


def round_range(values: list[float]) -> list[float]:
    """[lo, hi] around `values` at a round step (a tenth of the range's order of magnitude), a step beyond
    either end (a point on an edge is cut in half); 0 to twice a constant value; FRACTION_LIM for none or zeros."""
    lo, hi = min(values, default=0.0), max(values, default=0.0)
    if lo == hi:
        return sorted([0.0, 2 * hi]) if hi else list(FRACTION_LIM)
    step = 10 ** math.floor(math.log10(hi - lo)) / 10
    return [round(math.floor(lo / step) * step - step, 12), round(math.ceil(hi / step) * step + step, 12)]


def describe_samples(samples: list[dict[str, Any]]) -> str:
    """The latest rollouts, newest first: question, the gold answers, each step's memory, answer, reward."""
    if not samples:
        return "No sample rollouts yet: RL steps write one each (the best of its groups)."
    parts = []
    for s in reversed(samples):
        gold = " | ".join(str(a) for a in s.get("gold") or [])
        lines = [
            f"**Step {text_md(s.get('step', '?'))}** · reward {text_md(s.get('reward', '–'))} · question: "
            f"{text_md(s.get('question', ''))} · gold: {text_md(gold)}"
        ]
        lines += [f"{k}. memory after chunk {k}: {text_md(m)}" for k, m in enumerate(s.get("memories") or [], 1)]
        lines.append(f"\n**Answer:** {text_md(s.get('answer', ''))}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def eval_view(
    evaluation: dict[str, Any] | None,
    done: bool = True,
    progress: EvalProgress | None = None,
    selection: dict[str, Any] | None = None,
) -> tuple[str, dict, pd.DataFrame]:
    """The evaluation's status line, the side-by-side table and the plot's bars: sub-EM per held-out set,
    a baseline bar beside a this-run bar (one x category each: Gradio stacks bars of one category), in
    the table's order. `done`: the run is; `progress`: how far a running evaluation is; `selection`: the
    run's data (whether it had held-out feedback)."""
    if not evaluation:
        note = (
            "Not evaluated yet: **Evaluate** reads the held-out sets with the active model and with this run."
            if done
            else "A run is evaluated once it is done."
        )
        return note, gr.update(value=[], visible=False), bars_frame([])
    state = evaluation.get("status")
    if state == "running":
        note = f"Evaluation running: {eval_progress_text(progress)}"
    elif state == "queued":
        note = "Evaluation queued: the active model and this run read the same held-out sets…"
    elif state == "failed":
        note = (
            f"The evaluation failed: {error_line(evaluation.get('error') or 'no reason given')}  \n"
            "**Evaluate** tries again."
        )
    else:
        labels = [
            version_label((evaluation.get(side) or {}).get("label") or name)
            for side, name in (("baseline", "the active model"), ("candidate", "this run"))
        ]
        note = (
            f"Baseline: {text_md(labels[0])}; this run: {text_md(labels[1])}. {ANSWERS_RIGHT}  \n"
            f"{held_out_text(evaluation, selection)}{misses_text(evaluation)}"
        )
    base, candidate = _sets(evaluation.get("baseline")), _sets(evaluation.get("candidate"))
    mixed = {r.get("group") for r in candidate if r.get("kind") == "all"}  # several kinds: plot their `all` row
    rows, points = [], []
    for c in candidate:
        key = (c.get("suite"), c.get("group"), c.get("kind"))
        b = next((r for r in base if (r.get("suite"), r.get("group"), r.get("kind")) == key), {})
        change = f"{c['sub_em'] - b['sub_em']:+.1%}" if "sub_em" in b and "sub_em" in c else ""
        rows.append(
            [
                key[0],
                set_label(key[1]),
                key[2],
                c.get("n", ""),
                _pct(b.get("sub_em")),
                _pct(c.get("sub_em")),
                change,
                _pct(b.get("exact_match")),
                _pct(c.get("exact_match")),
            ]
        )
        if key[1] not in mixed or key[2] == "all":
            points += [
                {"set": f"{set_label(key[1])} · {name}", "sub_em": float(side["sub_em"]), "model": name}
                for side, name in ((b, "baseline"), (c, "this run"))
                if "sub_em" in side
            ]
    return note, gr.update(value=rows, visible=bool(rows)), bars_frame(points)


def eval_progress_text(p: EvalProgress | None) -> str:
    """How far a running evaluation is: questions read of all both models read, whose turn, and the ETA."""
    if p is None:
        return "starting the active model's reading of the held-out sets…"
    turn = "the active model reading" if p.side == "baseline" else "this run reading"
    of = f" of {p.total:,}" if p.total is not None else ""
    eta = f" · ETA {fmt_seconds(p.eta_s)}" if p.eta_s is not None else " · ETA after the first document"
    return f"{p.done:,}{of} questions read ({turn}){eta}"


#: where a miss happened (training/misses.py), as `longread eval` reports it per suite
MISS_LABELS = (
    ("never-entered", "never entered the memory"),
    ("overwritten", "entered, then overwritten"),
    ("answer-missed", "in the final memory, answer missed"),
)


def misses_text(evaluation: dict[str, Any]) -> str:
    """Per suite, where the misses happened, baseline → this run: shares of the questions the documents answer."""
    sides = [(evaluation.get(side) or {}).get("suites") or {} for side in ("baseline", "candidate")]
    lines = []
    for suite in dict.fromkeys([*sides[0], *sides[1]]):
        base, run = (s.get(suite) or {} for s in sides)
        parts = [f"{label} {_pct(base.get(key)) or '–'} → {_pct(run.get(key)) or '–'}" for key, label in MISS_LABELS]
        n = run.get("answerable", base.get("answerable"))
        lines.append(f"- {text_md(suite)} ({n} answerable): " + "; ".join(parts))
    return "\n\nWhere the misses happened (baseline → this run):\n\n" + "\n".join(lines) if lines else ""


def held_out_text(evaluation: dict[str, Any], selection: dict[str, Any] | None) -> str:
    """Whether the readers' held-out feedback (every fifth document's) was scored, or why there was none."""
    cases = (evaluation.get("candidate") or {}).get("cases")
    if isinstance(cases, dict) and cases.get("n"):
        n = cases["n"]
        return f"Held-out feedback: {n} reading{'s' if n != 1 else ''} scored (the table's last row)."
    selection = selection or {}
    counts = selection.get("feedback_readings") or {}
    if selection.get("config_file"):
        why = "the run's data came from a config file, whose feedback (if any) is all trained on"
    elif not selection.get("include_feedback"):
        why = "no feedback was selected for this run"
    elif not counts.get("held_out"):
        why = (
            f"none of the {counts.get('train', 0)} selected feedback readings was on a held-out document "
            "(every fifth document)"
        )
    else:
        why = (
            f"none of the {counts['held_out']} held-out feedback readings has an answer to score (an answer "
            "judged incorrect needs a corrected one)"
        )
    return f"No held-out feedback: {why}."


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


_LENGTH = re.compile(r"\d+K?")


def set_label(group: object) -> str:
    """A held-out set in words: a length of planted-fact documents ("2K" → "2K tokens"), the clause questions
    whose answer is Yes or No ("gold No" → "answer is No"), else its name (a contract category, a kind of
    book question)."""
    name = str(group)
    if name == "sub_em":  # a version measured on questions of its own (`longread eval --cases`): one figure
        return "all questions"
    if _LENGTH.fullmatch(name):
        return f"{name} tokens"
    if name in ("gold Yes", "gold No"):
        return f"answer is {name.removeprefix('gold ')}"
    return name


def base_label(settings: Settings) -> str:
    """The Models tab's row 0 and its menu entry: the settings' model, read when no version is active."""
    return f"no version: {version_label(settings.model)}"
