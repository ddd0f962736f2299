"""The open reading's details on the Read tab: its timeline (the memory after each chunk, edited and resumed
from in read_tab.py), where each sentence came from, its branches, the comparison with another reading, and
the feedback on its answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from app.services import documents, feedback, provenance, readings
from app.services.errors import NotFound
from app.services.users import UserView
from app.settings import Settings
from app.ui.passages import chosen_row, no_passage, open_passage
from app.ui.read_views import (
    branch_tree,
    compare_text,
    describe_feedback,
    describe_step,
    diff_spans,
    pages_label,
)
from app.ui.text import text_md

#: The timeline before the first checkpoint: step line, chunk, memory, change, resume button.
NO_STEP = ("No checkpoint yet: the timeline fills as the agent reads.", "", "", [], gr.update(interactive=False))


@dataclass(frozen=True)
class ReadingDetails:
    """The handlers of the details' events, each named as the event's function (Gradio's API names)."""

    show_feedback: Callable
    on_feedback: Callable
    show_step: Callable
    load_timeline: Callable
    follow_timeline: Callable
    stop_following: Callable
    compare_choices: Callable
    on_compare: Callable
    load_provenance: Callable
    on_source: Callable
    load_branches: Callable
    on_branches_refresh: Callable


def build_reading_details(settings: Settings, me: Callable[[], UserView | None]) -> ReadingDetails:
    """The details' handlers; details_panels.py lays out their components and wires them."""

    def show_feedback(reading_id: int | None, note: str = ""):
        if reading_id is None:
            return ""
        try:
            return describe_feedback(feedback.reading_feedback(settings, reading_id, user=me()), note)
        except NotFound:
            return ""

    def on_feedback(reading_id: int | None, verdict: str | None, corrected: str, comment: str):
        """Save the verdict on the open reading's answer; the form is emptied once it is saved."""
        keep = (gr.update(),) * 3
        if reading_id is None:
            return "**Cannot save feedback:** open a reading first.", *keep
        if not verdict:
            return show_feedback(reading_id, "**Cannot save feedback:** choose correct or incorrect.  \n"), *keep
        try:
            saved = feedback.add_feedback(settings, reading_id, verdict, corrected, comment, user=me())
        except (NotFound, ValueError) as exc:  # FeedbackError is a ValueError
            return show_feedback(reading_id, f"**Cannot save feedback:** {text_md(exc)}  \n"), *keep
        return show_feedback(reading_id, f"Saved: {text_md(saved.verdict)}.  \n"), None, "", ""

    def show_step(reading_id: int | None, k: float | None):
        """Step k of the open reading: where it read, the chunk's text (loaded now, one step at a time),
        the memory it wrote (editable) and the change from step k-1, word by word."""
        if reading_id is None or k is None:
            return NO_STEP
        try:
            v = readings.step(settings, reading_id, int(k), user=me())
        except (NotFound, ValueError):
            return NO_STEP
        return (
            describe_step(v),
            v.checkpoint.chunk or "",
            v.checkpoint.memory,
            diff_spans(v.previous_memory, v.checkpoint.memory),
            gr.update(interactive=True),
        )

    def steps(reading_id: int | None) -> int:
        """How many steps the open reading's timeline has (0: none open, or gone)."""
        try:
            return readings.step_count(settings, reading_id, user=me()) if reading_id is not None else 0
        except NotFound:
            return 0

    def timeline_at(reading_id: int | None, n: int):
        """The timeline of a reading of `n` steps, at its last step; the slider spans every step."""
        if n == 0:
            return gr.update(minimum=0, maximum=1, value=0, interactive=False), *NO_STEP
        return gr.update(minimum=1, maximum=max(n, 2), value=n, interactive=n > 1), *show_step(reading_id, n)

    def load_timeline(reading_id: int | None):
        """The open reading's timeline, at its last step."""
        return timeline_at(reading_id, steps(reading_id))

    def follow_timeline(reading_id: int | None, followed: list | None):
        """The timeline follows the open reading as it reads and once it finishes (a branch included): new steps
        extend the slider and, unless the person moved the slider themselves (stop_following), the timeline moves
        on to the new last step. `followed` is [reading id, steps shown, following]; nothing changes while the
        number of steps does not, and only a new step is loaded (one light query for the count otherwise).
        (The slider is no input here: its value lags its bounds while they change.)"""
        keep = (gr.update(),) * (1 + len(NO_STEP))
        n = steps(reading_id)
        if not followed or followed[0] != reading_id:  # just opened: load_timeline shows it
            return [reading_id, n, True], *keep
        if followed[1] == n:
            return gr.update(), *keep
        if not followed[2]:  # looking at a step of their choice: leave it there
            return [reading_id, n, False], gr.update(maximum=max(n, 2), interactive=n > 1), *keep[1:]
        return [reading_id, n, True], *timeline_at(reading_id, n)

    def stop_following(followed: list | None):
        """The person moved the slider: the timeline stays where they put it while the reading goes on."""
        return [*followed[:2], False] if followed else followed

    def compare_choices(reading_id: int | None):
        """The other readings of the open reading's document, to compare answers with; this one on the left."""
        try:
            r = readings.show(settings, reading_id, user=me()) if reading_id is not None else None
        except NotFound:
            r = None
        if r is None:
            return gr.update(choices=[], value=None), gr.update(value="", label="This reading"), ""
        others = [(f"#{o.id} " + (f"(branch of #{o.parent_reading_id} at step {o.branched_at_step}) " if
                                  o.parent_reading_id else "")
                   + f"{' '.join(o.question.split())[:80]} · {o.status}", o.id)
                  for o in readings.document_readings(settings, r.document_id, user=me()) if o.id != r.id]  # fmt: skip
        return (gr.update(choices=others, value=None),
                gr.update(value=compare_text(r), label=f"This reading (#{r.id})"),
                gr.update(value="", label="The other reading"))  # fmt: skip

    def on_compare(reading_id: int | None, other_id: int | None):
        if reading_id is None or other_id is None:
            return gr.update(), gr.update(value="", label="The other reading")
        try:
            this, other = (
                readings.show(settings, reading_id, user=me()),
                readings.show(settings, int(other_id), user=me()),
            )
        except NotFound:
            return gr.update(), gr.update(value="", label="The other reading")
        return (gr.update(value=compare_text(this), label=f"This reading (#{this.id})"),
                gr.update(value=compare_text(other), label=f"The other reading (#{other.id})"))  # fmt: skip

    def load_provenance(reading_id: int | None):
        """Each sentence of the final memory and the answer, with the step it entered the memory at."""
        empty = (
            [],
            [],
            *no_passage("Open a reading: where each sentence of its memory and answer came from shows here."),
        )
        if reading_id is None:
            return empty
        try:
            who = me()
            sources = provenance.provenance(settings, reading_id, user=who)
            doc = documents.show_document(settings, readings.show(settings, reading_id, user=who).document_id, user=who)
        except NotFound:
            return empty
        labels = [p.label for p in doc.page_map or []]
        rows = [[x.part, " ".join(x.sentence.split()), x.step if x.step else "–",
                 (pages_label(x.first_page, x.last_page, doc.page_unit, labels)
                  + (" (memory edited there)" if x.origin == "edited" else "")) if x.step else "not in the memory"]
                for x in sources]  # fmt: skip
        keep = [[x.passage_start, x.passage_end, x.step, doc.id, x.page if doc.format == "pdf" else None, x.via]
                for x in sources]  # fmt: skip
        note = "Choose a sentence to see the passage it came from." if rows else "No memory yet."
        return rows, keep, *no_passage(note)

    def on_source(evt: gr.SelectData, reading_id: int | None, kept: list | None):
        """The chosen sentence's passage, highlighted in its place in the document; for a PDF, beside it
        the page it is printed on, as an image with the passage marked (GET /api/documents/{id}/pages/{n}.png)."""
        row = chosen_row(evt)
        if reading_id is None or not kept or row >= len(kept) or kept[row][0] is None:
            return no_passage("That sentence is in no memory the agent wrote, so it has no passage.")
        start, end, k, document_id, page, via = (kept[row] + [None] * 6)[:6]
        note = (f"Answered from the memory's sentence “{text_md(' '.join(via.split()))}”, which entered the memory "
                f"at step {k}: the passage of that step's chunk it came from" if via else
                f"The passage of step {k}'s chunk that matches it best")  # fmt: skip
        note += f" (characters {start:,}–{end:,})"
        return open_passage(
            settings, me(), reading_id, start, end, "source", note, (document_id, page) if page else None
        )

    def load_branches(reading_id: int | None):
        """The open reading's family as a tree (the original, its branches, theirs): choose one to open it."""
        if reading_id is None:
            return [], ""
        try:
            who = me()
            family = branch_tree(readings.document_readings(settings, readings.show(settings, reading_id,
                                                                                    user=who).document_id, user=who),
                                 reading_id)  # fmt: skip
        except NotFound:
            return [], ""
        note = (
            "No branches yet: edit a memory in the timeline and resume from it to make one."
            if len(family) <= 1
            else f"{len(family) - 1} branch{'es' if len(family) > 2 else ''}: choose one to open it."
        )
        return family, note

    def on_branches_refresh(reading_id: int | None, shown: list[list[object]] | None):
        """Branches made elsewhere and their progress; no update when nothing changed (no flicker)."""
        rows, note = load_branches(reading_id)
        same = [[str(c) for c in row] for row in rows] == [[str(c) for c in row] for row in (shown or [])]
        return (gr.update(), gr.update()) if same else (rows, note)

    return ReadingDetails(
        show_feedback,
        on_feedback,
        show_step,
        load_timeline,
        follow_timeline,
        stop_following,
        compare_choices,
        on_compare,
        load_provenance,
        on_source,
        load_branches,
        on_branches_refresh,
    )
