"""The panels under the open reading on the Read tab: its timeline, where each sentence came from, its branches,
the comparison with another reading and the feedback on its answer. Their handlers are reading_details.py's;
resuming from an edited memory and opening a branch open another reading, so read_tab.py wires those two."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from app.services.users import UserView
from app.settings import Settings
from app.ui.read_views import BRANCH_COLUMNS, DIFF_COLORS, SOURCE_COLUMNS
from app.ui.reading_details import build_reading_details


class ReadingDetailsPanels:
    """The panels' components, in the current layout context; `connect(...)` wires them once the tab's parts
    exist."""

    def __init__(self, settings: Settings, me: Callable[[], UserView | None]) -> None:
        self.details = build_reading_details(settings, me)
        self.followed = gr.State(None)  # [reading id, steps, following] (reading_details.follow_timeline)
        with gr.Accordion(
            "Timeline: the memory after each chunk (edit one and resume from it)", open=False, elem_id="timeline"
        ) as self.timeline:
            self.step_slider = gr.Slider(
                0,
                1,
                value=0,
                step=1,
                label="Step (arrow keys move through the steps)",
                interactive=False,
                elem_id="step",
            )
            self.step_info = gr.Markdown(elem_id="step-info", latex_delimiters=[])
            with gr.Row():
                self.step_chunk = gr.Textbox(
                    label="The chunk the agent read", lines=8, max_lines=16, interactive=False, elem_id="step-chunk"
                )
                self.step_memory = gr.Textbox(
                    label="The memory it wrote (edit, then resume: your lines stay)",
                    lines=8,
                    max_lines=16,
                    interactive=True,
                    elem_id="step-memory",
                )
            self.step_diff = gr.HighlightedText(
                label="Change from the step before",
                combine_adjacent=False,
                show_legend=True,
                show_inline_category=False,
                color_map=DIFF_COLORS,
                elem_id="step-diff",
            )
            self.resume = gr.Button(
                "Resume from this memory (a new branch)", size="sm", interactive=False, elem_id="resume-edit"
            )
            self.edit_msg = gr.Markdown(elem_id="edit-msg", latex_delimiters=[])
        with gr.Accordion(
            "Where it came from: each sentence of the memory and the answer, and its passage",
            open=False,
            elem_id="provenance",
        ) as self.provenance_box:
            self.sources = gr.Dataframe(
                value=[],
                headers=SOURCE_COLUMNS,
                type="array",
                interactive=False,
                wrap=True,
                max_height=300,
                elem_id="sources",
                column_widths=["10%", "55%", "12%", "23%"],
            )
            self.source_note = gr.Markdown(elem_id="source-note", latex_delimiters=[])
            with gr.Row():
                self.source_passage = gr.HighlightedText(
                    label="The passage, in its place in the document",
                    combine_adjacent=False,
                    show_legend=False,
                    show_inline_category=False,
                    color_map={"source": "yellow"},
                    visible=False,  # until a sentence is chosen (open_passage)
                    elem_id="source-passage",
                )
                self.source_page = gr.HTML(visible=False, elem_id="source-page")
            self.source_spans = gr.State([])
        with gr.Group(elem_id="branches-box"):
            self.branches_note = gr.Markdown(elem_id="branches-note", latex_delimiters=[])
            self.branches_table = gr.Dataframe(
                value=[],
                headers=BRANCH_COLUMNS,
                type="array",
                interactive=False,
                wrap=True,
                max_height=260,
                elem_id="branches",
                label="Branches: this reading's family as a tree (choose one to open it)",
                column_widths=["8%", "52%", "12%", "28%"],
            )
        with gr.Accordion(
            "Compare answers: this reading beside another of the document (a branch, say)",
            open=False,
            elem_id="compare",
        ) as self.compare_box:
            self.compare_with = gr.Dropdown(label="Compare with", choices=[], value=None, elem_id="compare-with")
            with gr.Row():
                self.compare_left = gr.Textbox(
                    label="This reading", lines=6, max_lines=20, interactive=False, elem_id="compare-left"
                )
                self.compare_right = gr.Textbox(
                    label="The other reading", lines=6, max_lines=20, interactive=False, elem_id="compare-right"
                )
        with gr.Group(elem_id="feedback"):
            self.verdict = gr.Radio(["correct", "incorrect"], label="Your verdict on this answer", elem_id="verdict")
            self.corrected = gr.Textbox(label="The right answer (if it is wrong)", elem_id="corrected-answer")
            self.comment = gr.Textbox(label="Comment", elem_id="feedback-comment")
            self.save_feedback = gr.Button("Save feedback", size="sm", elem_id="save-feedback")
        self.feedback_list = gr.Markdown(elem_id="feedback-list", latex_delimiters=[])

    def connect(self, reading_id: gr.State, status: gr.Markdown, timer: gr.Timer, list_timer: gr.Timer) -> None:
        """Each panel follows the open reading (`reading_id`); the timeline also follows its `status` line,
        the branches the tab's timers."""
        d = self.details
        reading_id.change(d.show_feedback, reading_id, self.feedback_list, show_progress="hidden")
        step_view = [self.step_info, self.step_chunk, self.step_memory, self.step_diff, self.resume]
        reading_id.change(d.load_timeline, reading_id, [self.step_slider, *step_view], show_progress="hidden")
        self.timeline.expand(d.load_timeline, reading_id, [self.step_slider, *step_view], show_progress="hidden")
        # The status line changes as the reading reads and when it finishes: the timeline follows it.
        status.change(
            d.follow_timeline,
            [reading_id, self.followed],
            [self.followed, self.step_slider, *step_view],
            show_progress="hidden",
        )
        self.step_slider.input(d.stop_following, self.followed, self.followed, show_progress="hidden")
        self.step_slider.change(d.show_step, [reading_id, self.step_slider], step_view, show_progress="hidden")
        provenance_view = [self.sources, self.source_spans, self.source_passage, self.source_note, self.source_page]
        reading_id.change(d.load_provenance, reading_id, provenance_view, show_progress="hidden")
        self.provenance_box.expand(d.load_provenance, reading_id, provenance_view, show_progress="hidden")
        self.sources.select(
            d.on_source,
            [reading_id, self.source_spans],
            [self.source_passage, self.source_note, self.source_page],
            show_progress="hidden",
        )
        branch_view = [self.branches_table, self.branches_note]
        reading_id.change(d.load_branches, reading_id, branch_view, show_progress="hidden")
        list_timer.tick(d.on_branches_refresh, [reading_id, self.branches_table], branch_view, show_progress="hidden")
        # While a reading runs, its rows follow it every second, not every three (as the readings table's do).
        timer.tick(d.on_branches_refresh, [reading_id, self.branches_table], branch_view, show_progress="hidden")
        compare_view = [self.compare_with, self.compare_left, self.compare_right]
        reading_id.change(d.compare_choices, reading_id, compare_view, show_progress="hidden")
        self.compare_box.expand(d.compare_choices, reading_id, compare_view, show_progress="hidden")
        self.compare_with.input(
            d.on_compare,
            [reading_id, self.compare_with],
            [self.compare_left, self.compare_right],
            show_progress="hidden",
        )
        feedback_form = [self.verdict, self.corrected, self.comment]
        self.save_feedback.click(
            d.on_feedback, [reading_id, *feedback_form], [self.feedback_list, *feedback_form], show_progress="hidden"
        )
