"""One pass, one view: the questions asked together (read in one pass over the document) shown side by side,
each card with its status, its answer and the memory it answered from, following the pass as it reads."""

from __future__ import annotations

import html
from collections.abc import Callable

import gradio as gr

from app.services import readings
from app.services.errors import NotFound
from app.services.users import UserView
from app.services.views import ReadingView
from app.settings import Settings


def _status(r: ReadingView) -> str:
    total = r.total_chunks or 0
    if r.status == "running" and total:
        return f"reading chunk {min(r.cursor + 1, total)} of {total}" if r.cursor < total else "writing the answer"
    if r.status == "done":
        return f"done · {total} chunk{'s' if total != 1 else ''}"
    return r.status


def pass_cards_html(views: list[ReadingView]) -> str:
    """The pass's readings as cards in a grid, side by side (stacked on a narrow screen). Every value from the
    document, the user or the model is escaped: only the markup here is HTML."""
    cards = []
    for r in views:
        memory = r.checkpoints[-1].memory if r.checkpoints else ""
        step = f"after chunk {r.checkpoints[-1].step}" if r.checkpoints else "none yet"
        answer = html.escape(r.answer) if r.answer is not None else f"<i>{html.escape(_status(r))}…</i>"
        cards.append(
            f'<article class="lr-pass-card" data-reading="{int(r.id)}">'
            f'<header><b>#{int(r.id)}</b> {html.escape(" ".join(r.question.split()))}</header>'
            f'<div class="lr-pass-status">{html.escape(_status(r))}</div>'
            f'<div class="lr-pass-answer"><span>Answer</span>{answer}</div>'
            f'<details open><summary>Memory ({html.escape(step)})</summary>'
            f'<div class="lr-pass-memory">{html.escape(memory) or "<i>empty</i>"}</div></details></article>'
        )
    head = (f'<div class="lr-pass-head">One pass, {len(views)} questions: read together, chunk by chunk; '
            "each answer beside the memory it was written from.</div>")
    return f'<section class="lr-pass">{head}<div class="lr-pass-grid">{"".join(cards)}</div></section>'


class PassView:
    """The pass's cards (`box`) and its handlers: `show(ids)` fills it, `follow(ids, shown)` keeps it current."""

    def __init__(self, box: gr.HTML, show: Callable, follow: Callable) -> None:
        self.box, self.show, self.follow = box, show, follow


def build_pass_view(settings: Settings, me: Callable[[], UserView | None]) -> PassView:
    """The pass's box, hidden until several questions are asked at once; call in the layout."""

    def render(ids: list[int] | None) -> str:
        views = []
        for reading_id in ids or []:
            try:
                views.append(readings.show(settings, int(reading_id), user=me()))
            except NotFound:  # deleted meanwhile
                continue
        return pass_cards_html(views) if len(views) > 1 else ""

    def show(ids: list[int] | None):
        text = render(ids)
        return gr.update(value=text, visible=bool(text))

    def follow(ids: list[int] | None, shown: str | None):
        """No update when nothing changed, so the cards do not flicker (or close a memory someone opened)."""
        if not ids or len(ids) < 2:
            return gr.update()
        text = render(ids)
        return gr.update() if text == (shown or "") else gr.update(value=text, visible=bool(text))

    box = gr.HTML(visible=False, elem_id="pass-view")
    return PassView(box, show, follow)
