"""The open reading's details on the Read tab (laid out by details_panels.py): its timeline (the memory after each
chunk, edited and resumed from in read_events.py), where each sentence came from, its branches, the comparison with
another reading, and the feedback on its answer. Handlers return their updates by component."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from app.documents.base import pages_label
from app.services import documents, feedback, provenance, readings
from app.services.errors import NotFound
from app.services.users import UserView
from app.services.views import ReadingView
from app.settings import Settings
from app.ui.details_panels import DetailsPanels, build_details_panels
from app.ui.passages import chosen_row, no_passage, open_passage
from app.ui.read_lookups import Lookups
from app.ui.read_views import branch_tree, compare_text, describe_feedback, describe_step, diff_spans
from app.ui.text import text_md
from app.ui.ticks import Ticks

HIDDEN = {"show_progress": "hidden"}  # no Gradio spinner over the panels


class ReadingDetails:
    """The panels (`panels`) and their handlers, each named as the event's function (Gradio's API names)."""

    def __init__(self, settings: Settings, me: Callable[[], UserView | None], panels: DetailsPanels) -> None:
        self.settings, self.me, self.panels = settings, me, panels
        self.look = Lookups(settings, me)

    # Feedback.

    def show_feedback(self, reading_id: int | None, note: str = "") -> str:
        if reading_id is None:
            return ""
        try:
            return describe_feedback(feedback.reading_feedback(self.settings, reading_id, user=self.me()), note)
        except NotFound:
            return ""

    def on_feedback(self, reading_id: int | None, verdict: str | None, corrected: str, comment: str) -> dict:
        """Save the verdict on the open reading's answer; the form is emptied once it is saved."""
        f = self.panels.feedback
        if reading_id is None:
            return {f.given: "**Cannot save feedback:** open a reading first."}
        if not verdict:
            return {
                f.given: self.show_feedback(reading_id, "**Cannot save feedback:** choose correct or incorrect.  \n")
            }
        try:
            saved = feedback.add_feedback(self.settings, reading_id, verdict, corrected, comment, user=self.me())
        except (NotFound, ValueError) as exc:  # FeedbackError is a ValueError
            return {f.given: self.show_feedback(reading_id, f"**Cannot save feedback:** {text_md(exc)}  \n")}
        saved_note = self.show_feedback(reading_id, f"Saved: {text_md(saved.verdict)}.  \n")
        return {f.given: saved_note, f.verdict: None, f.corrected: "", f.comment: ""}

    # The timeline.

    def _no_step(self) -> dict:
        """The timeline before the first checkpoint."""
        t = self.panels.timeline
        note = "No checkpoint yet: the timeline fills as the agent reads."
        return {t.info: note, t.chunk: "", t.memory: "", t.diff: [], t.resume: gr.update(interactive=False)}

    def show_step(self, reading_id: int | None, k: float | None) -> dict:
        """Step k of the open reading: where it read, the chunk's text (loaded now, one step at a time),
        the memory it wrote (editable) and the change from step k-1, word by word."""
        if reading_id is None or k is None:
            return self._no_step()
        try:
            v = readings.step(self.settings, reading_id, int(k), user=self.me())
        except (NotFound, ValueError):
            return self._no_step()
        t = self.panels.timeline
        return {
            t.info: describe_step(v),
            t.chunk: v.checkpoint.chunk or "",
            t.memory: v.checkpoint.memory,
            t.diff: diff_spans(v.previous_memory, v.checkpoint.memory),
            t.resume: gr.update(interactive=True),
        }

    def _steps(self, reading_id: int | None) -> int:
        """How many steps the open reading's timeline has (0: none open, or gone)."""
        try:
            return readings.step_count(self.settings, reading_id, user=self.me()) if reading_id is not None else 0
        except NotFound:
            return 0

    def _timeline_at(self, reading_id: int | None, n: int) -> dict:
        """The timeline of a reading of `n` steps, at its last step and followed from there (follow_timeline); the
        slider spans every step."""
        t = self.panels.timeline
        followed = {t.followed: [reading_id, n, True]}
        if n == 0:
            return followed | {t.slider: gr.update(minimum=0, maximum=1, value=0, interactive=False)} | self._no_step()
        shown = {t.slider: gr.update(minimum=1, maximum=max(n, 2), value=n, interactive=n > 1)}
        return followed | shown | self.show_step(reading_id, n)

    def load_timeline(self, reading_id: int | None) -> dict:
        """The open reading's timeline, at its last step."""
        return self._timeline_at(reading_id, self._steps(reading_id))

    def reopen_timeline(self, reading_id: int | None, followed: list | None) -> dict:
        """Opening the timeline again: loaded only if it does not show the open reading's steps yet. A reload
        here answered after the person's first arrow key and put the slider back on the last step."""
        n = self._steps(reading_id)
        if followed and list(followed[:2]) == [reading_id, n]:
            return gr.skip()
        return self._timeline_at(reading_id, n)

    def follow_timeline(self, reading_id: int | None, followed: list | None) -> dict:
        """The timeline follows the open reading as it reads and once it finishes (a branch included): new steps
        extend the slider and, unless the person moved the slider themselves (stop_following), the timeline moves
        on to the new last step. `followed` is [reading id, steps shown, following]; nothing changes while the
        number of steps does not, and only a new step is loaded (one light query for the count otherwise).
        (The slider is no input here: its value lags its bounds while they change.)"""
        t = self.panels.timeline
        n = self._steps(reading_id)
        if not followed or followed[0] != reading_id:  # just opened: load_timeline shows it
            return {t.followed: [reading_id, n, True]}
        if followed[1] == n:
            return gr.skip()
        if not followed[2]:  # looking at a step of their choice: leave it there
            return {t.followed: [reading_id, n, False], t.slider: gr.update(maximum=max(n, 2), interactive=n > 1)}
        return self._timeline_at(reading_id, n)

    def stop_following(self, followed: list | None) -> list | None:
        """The person moved the slider: the timeline stays where they put it while the reading goes on."""
        return [*followed[:2], False] if followed else followed

    # Comparing answers.

    def _others(self, r: ReadingView) -> list[tuple[str, int]]:
        """The other readings of r's document to compare with, as menu choices (a review's own: in its panel)."""
        return [
            (
                f"#{o.id} "
                + (f"(branch of #{o.parent_reading_id} at step {o.branched_at_step}) " if o.parent_reading_id else "")
                + f"{' '.join(o.question.split())[:80]} · {o.status}",
                o.id,
            )
            for o in readings.document_readings(self.settings, r.document_id, user=self.me())
            if o.id != r.id and (o.review_id is None or o.review_id == r.review_id)
        ]

    def compare_choices(self, reading_id: int | None) -> dict:
        """The other readings of the open reading's document, to compare answers with; this one on the left."""
        c = self.panels.compare
        r = self.look.reading(reading_id)
        if r is None:
            return {
                c.other: gr.update(choices=[], value=None),
                c.left: gr.update(value="", label="This reading"),
                c.right: "",
            }
        return {
            c.other: gr.update(choices=self._others(r), value=None),
            c.left: _this_side(r),
            c.right: gr.update(value="", label="The other reading"),
        }

    def refresh_compare_choices(self, reading_id: int | None) -> dict:
        """Opening the panel: the choices and this reading's side as they are now (it may have finished since), not
        the other side. A refresh that also reset the choice could answer after the person chose and undo it."""
        c = self.panels.compare
        r = self.look.reading(reading_id)
        if r is None:
            return gr.skip()
        return {
            c.other: gr.update(choices=self._others(r)),
            c.left: _this_side(r),
        }

    def on_compare(self, reading_id: int | None, other_id: int | None) -> dict:
        c = self.panels.compare
        this = self.look.reading(reading_id)
        other = self.look.reading(int(other_id)) if this is not None and other_id is not None else None
        if other is None:
            return {c.right: gr.update(value="", label="The other reading")}
        return {
            c.left: _this_side(this),
            c.right: gr.update(value=compare_text(other), label=f"The other reading (#{other.id})"),
        }

    # Where each sentence came from.

    def load_provenance(self, reading_id: int | None) -> dict:
        """Each sentence of the final memory and the answer, with the step it entered the memory at."""
        p = self.panels.provenance
        rows, spans = self._sources(reading_id)
        if rows is None:
            note = "Open a reading: where each sentence of its memory and answer came from shows here."
            rows, spans = [], []
        else:
            note = "Choose a sentence to see the passage it came from." if rows else "No memory yet."
        return {p.sources: rows, p.spans: spans} | dict(zip(p.passage_view, no_passage(note), strict=True))

    def refresh_provenance(self, reading_id: int | None) -> dict:
        """Opening the panel: the rows as they are now; the passage shown stays (a late refresh cleared the one the
        person had just chosen)."""
        p = self.panels.provenance
        rows, spans = self._sources(reading_id)
        return gr.skip() if rows is None else {p.sources: rows, p.spans: spans}

    def _sources(self, reading_id: int | None) -> tuple[list | None, list | None]:
        """The provenance table's rows and, for each, its passage and page (None, None: no reading, or gone)."""
        if reading_id is None:
            return None, None
        try:
            who = self.me()
            sources = provenance.provenance(self.settings, reading_id, user=who)
            doc_id = readings.show(self.settings, reading_id, user=who).document_id
            doc = documents.show_document(self.settings, doc_id, user=who)
        except NotFound:
            return None, None
        labels = [p.label for p in doc.page_map or []]
        rows = [
            [
                x.part,
                " ".join(x.sentence.split()),
                x.step if x.step else "–",
                (
                    pages_label(x.first_page, x.last_page, doc.page_unit, labels)
                    + (" (memory edited there)" if x.origin == "edited" else "")
                )
                if x.step
                else "not in the memory",
            ]
            for x in sources
        ]
        spans = [
            [x.passage_start, x.passage_end, x.step, doc.id, x.page if doc.format == "pdf" else None, x.via]
            for x in sources
        ]
        return rows, spans

    def on_source(self, evt: gr.SelectData, reading_id: int | None, kept: list | None) -> tuple:
        """The chosen sentence's passage, highlighted in its place in the document; for a PDF, beside it
        the page it is printed on, as an image with the passage marked (GET /api/documents/{id}/pages/{n}.png).
        Returns passages.py's (passage, note, page image), as the review panel's rows do."""
        row = chosen_row(evt)
        if reading_id is None or not kept or row >= len(kept) or kept[row][0] is None:
            return no_passage("That sentence is in no memory the agent wrote, so it has no passage.")
        start, end, k, document_id, page, via = (kept[row] + [None] * 6)[:6]
        note = (
            f"Answered from the memory's sentence “{text_md(' '.join(via.split()))}”, which entered the memory "
            f"at step {k}: the passage of that step's chunk it came from"
            if via
            else f"The passage of step {k}'s chunk that matches it best"
        )
        note += f" (characters {start:,}–{end:,})"
        pdf_page = (document_id, page) if page else None
        return open_passage(self.settings, self.me(), reading_id, start, end, "source", note, pdf_page)

    # Branches.

    def load_branches(self, reading_id: int | None) -> dict:
        """The open reading's family as a tree (the original, its branches, theirs): choose one to open it."""
        b = self.panels.branches
        r = self.look.reading(reading_id)
        if r is None:
            return {b.table: [], b.note: ""}
        try:
            family = branch_tree(readings.document_readings(self.settings, r.document_id, user=self.me()), reading_id)
        except NotFound:
            return {b.table: [], b.note: ""}
        note = (
            "No branches yet: edit a memory in the timeline and resume from it to make one."
            if len(family) <= 1
            else f"{len(family) - 1} branch{'es' if len(family) > 2 else ''}: choose one to open it."
        )
        return {b.table: family, b.note: note}

    def on_branches_refresh(self, reading_id: int | None, shown: list[list[object]] | None) -> dict:
        """Branches made elsewhere and their progress; no update when nothing changed (no flicker)."""
        branches = self.load_branches(reading_id)
        rows = branches[self.panels.branches.table]
        same = [[str(c) for c in row] for row in rows] == [[str(c) for c in row] for row in (shown or [])]
        return gr.skip() if same else branches

    def connect(self, reading_id: gr.State, status: gr.Markdown, timer: Ticks, list_timer: Ticks) -> None:
        """Each panel follows the open reading (`reading_id`); the timeline also follows its `status` line,
        the branches the tab's timers."""
        panels = self.panels
        t, p, b, c, f = panels.timeline, panels.provenance, panels.branches, panels.compare, panels.feedback
        reading_id.change(self.show_feedback, reading_id, f.given, **HIDDEN)
        timeline = [t.followed, t.slider, *t.step]
        reading_id.change(self.load_timeline, reading_id, timeline, **HIDDEN)
        t.box.expand(self.reopen_timeline, [reading_id, t.followed], timeline, **HIDDEN)
        # The status line changes as the reading reads and when it finishes: the timeline follows it.
        status.change(self.follow_timeline, [reading_id, t.followed], timeline, **HIDDEN)
        t.slider.input(self.stop_following, t.followed, t.followed, **HIDDEN)
        t.slider.change(self.show_step, [reading_id, t.slider], t.step, **HIDDEN)
        provenance_view = [p.sources, p.spans, *p.passage_view]
        reading_id.change(self.load_provenance, reading_id, provenance_view, **HIDDEN)
        p.box.expand(self.refresh_provenance, reading_id, [p.sources, p.spans], **HIDDEN)
        p.sources.select(self.on_source, [reading_id, p.spans], p.passage_view, **HIDDEN)
        branch_view = [b.table, b.note]
        reading_id.change(self.load_branches, reading_id, branch_view, **HIDDEN)
        list_timer.tick(self.on_branches_refresh, [reading_id, b.table], branch_view, **HIDDEN)
        # While a reading runs, its rows follow it every second, not every three (as the readings table's do).
        timer.tick(self.on_branches_refresh, [reading_id, b.table], branch_view, **HIDDEN)
        compare_view = [c.other, c.left, c.right]
        reading_id.change(self.compare_choices, reading_id, compare_view, **HIDDEN)
        c.box.expand(self.refresh_compare_choices, reading_id, [c.other, c.left], **HIDDEN)
        c.other.input(self.on_compare, [reading_id, c.other], [c.left, c.right], **HIDDEN)
        f.save.click(self.on_feedback, [reading_id, *f.form], [f.given, *f.form], **HIDDEN)


def build_reading_details(settings: Settings, me: Callable[[], UserView | None]) -> ReadingDetails:
    """The details' panels, in the current layout context, and their handlers."""
    return ReadingDetails(settings, me, build_details_panels())


def _this_side(r: ReadingView) -> dict:
    """The compare panel's left side: the open reading's answer and memory."""
    return gr.update(value=compare_text(r), label=f"This reading (#{r.id})")
