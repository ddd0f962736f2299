"""The Training tab's Data page: the feedback readers gave, and what a run trains on (readers' feedback only
when included, the contracts' expert QA, QA files on the server, synthetic tasks), with a preview of the
samples a selection makes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.services import training_runs
from app.services.training_runs import DataSelection
from app.ui.admin_context import REFUSED, Admin
from app.ui.tables import table
from app.ui.text import text_md
from app.ui.training_views import (
    FEEDBACK_COLUMNS,
    SAMPLE_COLUMNS,
    describe_feedback,
    feedback_rows,
    one_line,
    parse_selection,
)


@dataclass(eq=False)  # eq=False: hashable, as Gradio needs its handlers (these bound methods) to be
class DataPage:
    admin: Admin
    feedback_note: gr.Markdown
    feedback_table: gr.Dataframe
    include: gr.Checkbox
    since: gr.Textbox
    picked: gr.Dropdown
    contracts: gr.Checkbox
    qa_files: gr.CheckboxGroup
    kinds: gr.CheckboxGroup
    lengths: gr.Textbox
    preview: gr.Button
    preview_note: gr.Markdown
    samples_table: gr.Dataframe

    @property
    def choices(self) -> list[gr.components.Component]:
        """The inputs that choose a run's data."""
        return [self.include, self.since, self.picked, self.contracts, self.qa_files, self.kinds, self.lengths]

    @property
    def loaded(self) -> list[gr.components.Component]:
        """What `load` fills."""
        return [self.feedback_note, self.feedback_table, self.picked, self.contracts, self.qa_files, self.kinds]

    def selection(self, values: dict[gr.components.Component, Any]) -> DataSelection:
        """The data chosen, from an event's inputs by component (inputs given as a set); ValueError says which
        choice to fix."""
        return parse_selection(
            include=values[self.include],
            since=values[self.since],
            feedback_ids=values[self.picked],
            contracts=values[self.contracts],
            qa_files=values[self.qa_files],
            kinds=values[self.kinds],
            lengths=values[self.lengths],
        )

    def load(self, also: Callable[[], dict]) -> dict:
        """The feedback collected and the sets on offer, and `also` (more to show once they load)."""
        if not self.admin.is_admin():
            return gr.skip()
        try:
            d = training_runs.data_overview(self.admin.settings, user=self.admin.me())
        except REFUSED as exc:
            return {self.feedback_note: f"**Cannot list the training data:** {text_md(exc)}"}
        docs, questions, held = d.contracts
        return {
            self.feedback_note: describe_feedback(d),
            self.feedback_table: feedback_rows(d),
            self.picked: gr.update(
                choices=[(f"#{f.id} {f.verdict}: {one_line(f.question, 60)}", f.id) for f in d.feedback]
            ),
            self.contracts: gr.update(
                label=f"Contracts' expert QA: {docs} training documents, {questions} "
                f"questions ({held} documents held out for evaluation)"
            ),
            self.qa_files: gr.update(
                choices=[(f"{p} ({n} questions)", p) for p, n in d.qa_files],
                info=None if d.qa_files else "No QA files on the server.",
            ),
            self.kinds: gr.update(choices=[(f"{k}: {text}", k) for k, text in d.synthetic_kinds]),
            **also(),
        }

    def on_preview(self, values: dict[gr.components.Component, Any]) -> dict:
        try:
            samples = training_runs.preview_samples(self.admin.settings, self.selection(values), user=self.admin.me())
        except REFUSED as exc:
            return {self.preview_note: f"**Cannot preview:** {text_md(exc)}", self.samples_table: []}
        rows = [
            [x.source, one_line(x.question), " | ".join(x.answers), x.doc_tokens, one_line(x.excerpt, 160)]
            for x in samples
        ]
        note = (
            f"{len(rows)} of the samples this selection makes:"
            if rows
            else "This selection makes no samples: include feedback, contracts, QA files or synthetic kinds."
        )
        return {self.preview_note: note, self.samples_table: rows}

    def connect(self) -> None:
        self.preview.click(
            self.on_preview, set(self.choices), [self.preview_note, self.samples_table], show_progress="hidden"
        )


def build_data_page(admin: Admin) -> DataPage:
    """The page's components, in the current layout context (the Data tab)."""
    gr.Markdown(
        "### The feedback collected\nWhat readers said about answers. A reader's feedback "
        "trains a run only when you include it."
    )
    feedback_note = gr.Markdown(elem_id="feedback-note", latex_delimiters=[])
    feedback_table = table(
        FEEDBACK_COLUMNS,
        "feedback-table",
        max_height=320,
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
    samples_table = table(
        SAMPLE_COLUMNS, "preview-table", max_height=360, column_widths=["10%", "30%", "15%", "10%", "35%"]
    )
    return DataPage(
        admin,
        feedback_note,
        feedback_table,
        include,
        since,
        picked,
        contracts,
        qa_files,
        kinds,
        lengths,
        preview,
        preview_note,
        samples_table,
    )
