"""The panels under the open reading on the Read tab, laid out: its timeline, where each sentence came from, its
branches, the comparison with another reading and the feedback on its answer. Each builder names its components;
reading_details.py's handlers update them by name."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from app.ui.passages import build_passage_view
from app.ui.read_views import BRANCH_COLUMNS, DIFF_COLORS, SOURCE_COLUMNS
from app.ui.tables import table


@dataclass(frozen=True)
class Timeline:
    box: gr.Accordion
    slider: gr.Slider  #: the step shown
    followed: gr.State  #: [reading id, steps, following] (reading_details.follow_timeline)
    info: gr.Markdown  #: the step's line: where it read, who wrote the memory
    chunk: gr.Textbox
    memory: gr.Textbox  #: editable: resuming from it makes a branch (read_events.on_resume)
    diff: gr.HighlightedText  #: the change from the step before
    resume: gr.Button
    edit_msg: gr.Markdown  #: what resuming did

    @property
    def step(self) -> list:
        """What showing a step updates."""
        return [self.info, self.chunk, self.memory, self.diff, self.resume]


def build_timeline() -> Timeline:
    label = "Timeline: the memory after each chunk (edit one and resume from it)"
    with gr.Accordion(label, open=False, elem_id="timeline") as box:
        slider = gr.Slider(
            0, 1, value=0, step=1, label="Step (arrow keys move through the steps)", interactive=False, elem_id="step"
        )
        info = gr.Markdown(elem_id="step-info", latex_delimiters=[])
        with gr.Row():
            chunk = gr.Textbox(
                label="The chunk the agent read", lines=8, max_lines=16, interactive=False, elem_id="step-chunk"
            )
            memory = gr.Textbox(
                label="The memory it wrote (edit, then resume: your lines stay)",
                lines=8,
                max_lines=16,
                interactive=True,
                elem_id="step-memory",
            )
        diff = gr.HighlightedText(
            label="Change from the step before",
            combine_adjacent=False,
            show_legend=True,
            show_inline_category=False,
            color_map=DIFF_COLORS,
            elem_id="step-diff",
        )
        resume = gr.Button(
            "Resume from this memory (a new branch)", size="sm", interactive=False, elem_id="resume-edit"
        )
        edit_msg = gr.Markdown(elem_id="edit-msg", latex_delimiters=[])
    return Timeline(box, slider, gr.State(None), info, chunk, memory, diff, resume, edit_msg)


@dataclass(frozen=True)
class Provenance:
    box: gr.Accordion
    sources: gr.Dataframe  #: each sentence of the memory and the answer, and where it came from
    spans: gr.State  #: each row's passage and page (reading_details.on_source)
    passage: gr.HighlightedText
    note: gr.Markdown
    page: gr.HTML  #: a PDF's page, the passage marked on it

    @property
    def passage_view(self) -> list:
        """The passage view, in the order of passages.py's (passage, note, page image)."""
        return [self.passage, self.note, self.page]


def build_provenance() -> Provenance:
    label = "Where it came from: each sentence of the memory and the answer, and its passage"
    with gr.Accordion(label, open=False, elem_id="provenance") as box:
        sources = table(SOURCE_COLUMNS, "sources", max_height=300, column_widths=["10%", "55%", "12%", "23%"])
        note = gr.Markdown(elem_id="source-note", latex_delimiters=[])
        passage, page = build_passage_view("source", "source")
        spans = gr.State([])
    return Provenance(box, sources, spans, passage, note, page)


@dataclass(frozen=True)
class Branches:
    note: gr.Markdown
    table: gr.Dataframe  #: the open reading's family as a tree; choosing a row opens it (read_tab.py)


def build_branches() -> Branches:
    with gr.Group(elem_id="branches-box"):
        note = gr.Markdown(elem_id="branches-note", latex_delimiters=[])
        branches = table(
            BRANCH_COLUMNS,
            "branches",
            max_height=260,
            column_widths=["8%", "52%", "12%", "28%"],
            label="Branches: this reading's family as a tree (choose one to open it)",
        )
    return Branches(note, branches)


@dataclass(frozen=True)
class Compare:
    box: gr.Accordion
    other: gr.Dropdown  #: the reading to compare with
    left: gr.Textbox  #: the open reading
    right: gr.Textbox  #: the other one


def build_compare() -> Compare:
    label = "Compare answers: this reading beside another of the document (a branch, say)"
    with gr.Accordion(label, open=False, elem_id="compare") as box:
        other = gr.Dropdown(label="Compare with", choices=[], value=None, elem_id="compare-with")
        with gr.Row():
            left = gr.Textbox(label="This reading", lines=6, max_lines=20, interactive=False, elem_id="compare-left")
            right = gr.Textbox(
                label="The other reading", lines=6, max_lines=20, interactive=False, elem_id="compare-right"
            )
    return Compare(box, other, left, right)


@dataclass(frozen=True)
class Feedback:
    verdict: gr.Radio
    corrected: gr.Textbox
    comment: gr.Textbox
    save: gr.Button
    given: gr.Markdown  #: the verdicts given on the answer, newest first

    @property
    def form(self) -> list:
        return [self.verdict, self.corrected, self.comment]


def build_feedback() -> Feedback:
    with gr.Group(elem_id="feedback"):
        verdict = gr.Radio(["correct", "incorrect"], label="Your verdict on this answer", elem_id="verdict")
        corrected = gr.Textbox(label="The right answer (if it is wrong)", elem_id="corrected-answer")
        comment = gr.Textbox(label="Comment", elem_id="feedback-comment")
        save = gr.Button("Save feedback", size="sm", elem_id="save-feedback")
    given = gr.Markdown(elem_id="feedback-list", latex_delimiters=[])
    return Feedback(verdict, corrected, comment, save, given)


@dataclass(frozen=True)
class DetailsPanels:
    timeline: Timeline
    provenance: Provenance
    branches: Branches
    compare: Compare
    feedback: Feedback


def build_details_panels() -> DetailsPanels:
    """The panels' components, in the current layout context, in the order they show."""
    return DetailsPanels(build_timeline(), build_provenance(), build_branches(), build_compare(), build_feedback())
