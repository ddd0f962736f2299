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


def card_html(r: ReadingView) -> str:
    """One reading's card. Every value from the document, the user or the model is escaped: only the markup
    here is HTML."""
    memory = r.checkpoints[-1].memory if r.checkpoints else ""
    step = f"after chunk {r.checkpoints[-1].step}" if r.checkpoints else "none yet"
    answer = html.escape(r.answer) if r.answer is not None else f"<i>{html.escape(_status(r))}…</i>"
    return (
        f'<article class="lr-pass-card" data-reading="{int(r.id)}">'
        f"<header><b>#{int(r.id)}</b> {html.escape(' '.join(r.question.split()))}</header>"
        f'<div class="lr-pass-status">{html.escape(_status(r))}</div>'
        f'<div class="lr-pass-answer"><span>Answer</span>{answer}</div>'
        f"<details open><summary>Memory ({html.escape(step)})</summary>"
        f'<div class="lr-pass-memory">{html.escape(memory) or "<i>empty</i>"}</div></details></article>'
    )


def pass_html(cards: list[str]) -> str:
    """The pass's cards in a grid, side by side (stacked on a narrow screen)."""
    head = (
        f'<div class="lr-pass-head">One pass, {len(cards)} questions: read together, chunk by chunk; '
        "each answer beside the memory it was written from.</div>"
    )
    return f'<section class="lr-pass">{head}<div class="lr-pass-grid">{"".join(cards)}</div></section>'


def pass_cards_html(views: list[ReadingView]) -> str:
    """The pass's readings as cards, side by side."""
    return pass_html([card_html(r) for r in views])


#: a reading's (status, cursor) and its card, by id: what the pass view shows
Cards = dict[int, tuple[tuple[str, int], str]]


def _reading(cards: Cards) -> bool:
    """Whether a reading of the pass is still queued or running (the pass view follows it while one is)."""
    return any(status in ("queued", "running") for (status, _), _ in cards.values())


class PassView:
    """The pass's cards (`box`), the timer that follows it while it reads and the cards shown (`cards`, a State).
    `show(ids)` fills it, `follow(ids, cards)` keeps it current, `hide()` empties it: each returns the updates
    of `outputs` by component."""

    def __init__(self, settings: Settings, me: Callable[[], UserView | None]) -> None:
        self.settings, self.me = settings, me
        self.box = gr.HTML(visible=False, elem_id="pass-view")
        self.timer = gr.Timer(1.0, active=False)
        self.cards = gr.State({})
        self.outputs = [self.box, self.timer, self.cards]

    def hide(self) -> dict:
        return {self.box: gr.update(value="", visible=False), self.timer: gr.Timer(active=False), self.cards: {}}

    def show(self, ids: list[int] | None) -> dict:
        return self._update(self._load(ids or [], {}))

    def follow(self, ids: list[int] | None, shown: Cards | None) -> dict:
        """No update when nothing changed, so the cards do not flicker (or close a memory someone opened);
        the timer stops once no reading of the pass is queued or running."""
        shown = shown or {}
        cards = self._load(ids or [], shown)
        if cards == shown and len(cards) > 1:
            return {self.timer: gr.update() if _reading(cards) else gr.Timer(active=False)}
        return self._update(cards)

    def _load(self, ids: list[int], shown: Cards) -> Cards:
        """The pass's cards: a reading whose status or chunk moved since `shown` is loaded again, the others are
        kept as they were (one light query when none moved); a reading deleted meanwhile drops out. One question
        is no pass (the open reading's view shows it): nothing to load."""
        if len(ids) < 2:
            return {}
        who = self.me()
        where = readings.positions(self.settings, [int(i) for i in ids], user=who)
        cards: Cards = {}
        for reading_id in (int(i) for i in ids):
            if reading_id not in where:
                continue
            old = shown.get(reading_id)
            if old is not None and old[0] == where[reading_id]:
                cards[reading_id] = old
                continue
            try:
                cards[reading_id] = (where[reading_id], card_html(readings.show(self.settings, reading_id, user=who)))
            except NotFound:  # deleted meanwhile
                continue
        return cards

    def _update(self, cards: Cards) -> dict:
        """The box for `cards` (several: one reading is the open one's view), followed while any of them reads."""
        if len(cards) < 2:
            return self.hide()
        box = gr.update(value=pass_html([card for _, card in cards.values()]), visible=True)
        return {self.box: box, self.timer: gr.Timer(active=_reading(cards)), self.cards: cards}


def build_pass_view(settings: Settings, me: Callable[[], UserView | None]) -> PassView:
    """The pass's box, hidden until several questions are asked at once; call in the layout."""
    return PassView(settings, me)
