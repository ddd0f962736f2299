"""What the Read tab shows, as text, rows and HTML: a document's info line, a reading's status line and
progress bar, its timeline step, branch tree, answer comparison and feedback. Pure functions of the
services' views, so they are tested without a browser."""

from __future__ import annotations

import html
from dataclasses import dataclass

from app.documents.base import pages_label
from app.services.documents import page_url
from app.services.feedback import FeedbackView
from app.services.health import Health
from app.services.views import DocumentView, EstimateView, ProgressView, ReadingView, StepView, word_diff
from app.ui.text import fmt_seconds, text_md


def describe_document(d: DocumentView) -> str:
    """What a person sees before asking: title, format, pages or sections, size, tokens, and how
    long one question will take on the active engine (the questions box adds more: `describe_pass`)."""
    if d.status == "failed":
        return f"**{text_md(d.title)}** could not be read: {text_md(d.error)}"
    unit = d.page_unit if d.pages == 1 else f"{d.page_unit}s"
    line = (
        f"**{text_md(d.title)}** · {FORMAT_NAMES.get(d.format, text_md(d.format.upper()))} · {d.pages:,} {unit} · "
        f"{d.char_count:,} characters · {d.token_count or 0:,} tokens"
    )
    e = d.estimate
    if e is not None and e.chunks:
        n = f"{e.chunks:,} chunk{'s' if e.chunks != 1 else ''}"
        # chunks that end between sentences are a few more than the tokens' count, each at most that size
        chunks = (
            f"about {n} of up to {e.chunk_tokens} tokens, each ending between sentences,"
            if e.whole_sentences
            else f"{n} of {e.chunk_tokens} tokens"
        )
        how_long = "no speed figure for it yet" if e.seconds is None else "beside the questions: how long they take"
        line += f"  \nA question reads {chunks} on {text_md(e.engine)} ({how_long})."
    return line


@dataclass(frozen=True)
class PageParts:
    """Which parts of the Read tab apply to the chosen document."""

    delete: bool  #: the Delete button
    dismiss: bool  #: the Dismiss button
    asking: bool  #: the question box and Ask (a question typed before the first document is kept for it)
    reading: bool  #: the open reading (memory, answer, timeline, feedback), the readings, the review
    first_step: bool  #: what to do first: upload a document or choose one (first_step_text)


def page_parts(status: str | None) -> PageParts:
    """The parts for a document of this status (None: no document, or one that is gone). None has nothing to read
    yet: what to do first, and the question box (its Ask says to choose a document). A failed upload has nothing
    to read either: only its title, its error (the info line) and Dismiss."""
    failed, none = status == "failed", status is None
    return PageParts(
        delete=not none and not failed,
        dismiss=failed,
        asking=not failed,
        reading=not none and not failed,
        first_step=none,
    )


def first_step_text(max_upload_mb: int) -> str:
    """The Read tab's first step, shown while no document is chosen."""
    return (
        f"**Start here:** upload a document below ({', '.join(FORMAT_NAMES.values())}; at most {max_upload_mb} "
        "MiB), or choose one you uploaded from **Document**. Then ask it a question: the agent reads the whole "
        "document, chunk by chunk, and answers from its notes; the answer, its memory and the passages it came "
        "from show beside."
    )


def started(e: EstimateView) -> str:
    """What the model's start adds, when no worker has it up yet."""
    return f" + about {fmt_seconds(e.start_s)} to start the model" if e.start_s else ""


def asked_questions(question: str | None, more: str | None) -> list[str]:
    """The questions an Ask sends: the question box, then one a line from the "more questions" box."""
    return [question or ""] + [line for line in (more or "").splitlines() if line.strip()]


def describe_pass(e: EstimateView | None, questions: int) -> str:
    """Beside the questions: how long the `questions` typed would take read together in one pass, after the work
    queued before them; nothing before a question is typed."""
    seconds = e.pass_seconds(questions) if e is not None and e.chunks and questions else None
    if seconds is None:
        return ""
    if questions == 1:
        line = f"One question: about {fmt_seconds(seconds)}{started(e)}."
    elif e.shared_s:  # measured passes came in under this figure (app/services/documents.py ENGINE_SPEEDS)
        line = (
            f"{questions} questions: at most about {fmt_seconds(seconds)}{started(e)} (read together: each adds the "
            "reading of its prompts, the writing is shared)."
        )
    else:
        line = (
            f"{questions} questions: about {fmt_seconds(seconds)}{started(e)} "
            "(read together: each adds one question's time)."
        )
    return line + queued_first(e)


def queued_first(e: EstimateView) -> str:
    """The work the workers have before a new question, when they have any ("" when idle)."""
    if not e.ahead_readings:
        return ""
    n = e.ahead_readings
    work = f"{n:,} reading{'s' if n != 1 else ''} queued or under way"
    took = f", about {fmt_seconds(e.ahead_s)} of work" if e.ahead_s else ""
    return f" The workers are busy: {work}{took} before it (it starts after them)."


#: Gradio refuses larger files itself, with a message that disappears and a bare "Error" left in
#: the upload box; up to this many times our limit, on_upload refuses them with a message that stays.
UPLOAD_HEADROOM = 4

FORMAT_NAMES = {"pdf": "PDF", "docx": "DOCX", "epub": "EPUB", "html": "HTML", "md": "Markdown", "txt": "TXT"}
UPLOAD_TYPES = [".pdf", ".docx", ".epub", ".html", ".htm", ".xhtml", ".md", ".markdown", ".txt"]


def describe_progress(status: str, p: ProgressView, error: str | None, h: Health | None = None) -> str:
    """The reading's status line. Reading time and waiting time are apart: time spent waiting for a
    worker is not reading, and while nothing reads the reading there is no ETA (`h`: the workers' state)."""
    waited = f" (waited {fmt_seconds(p.waiting_s)})" if p.waiting_s and p.waiting_s >= 1 else ""
    if status == "queued":
        if error:  # put back in the queue by its worker: the model server is unreachable (app/services/runner.py)
            return f"Queued, {text_md(error)}; it reads on from its last checkpoint by itself when it answers{waited}."
        if h is not None and h.engine_state == "none":
            return f"Queued: no worker is running; it starts when one does{waited}."
        if h is not None and h.engine_state == "starting":
            return f"Queued: waiting for the model to start{waited}…"
        if h is not None and h.engine_state == "failed":
            return f"Queued: the model failed to start (see above){waited}."
        return "Queued: waiting for a worker…"
    if status == "failed":
        return f"Failed after chunk {p.step} of {p.total}: {text_md(error)}"
    if status == "cancelled":
        where = f"after chunk {p.step} of {p.total}" if p.total else "before its first chunk"
        return f"Cancelled {where}: **Resume reading** carries on from there."
    total = p.total or 0
    if status == "done":
        read = max(0, total - p.read_from)  # a branch reads only the chunks after its edited step
        if p.read_from and not read:
            return f"Done: answered from the edited memory in {fmt_seconds(p.reading_s)}{waited}."
        which = f" ({p.read_from + 1}–{total} of {total}, after the edited step {p.read_from})" if p.read_from else ""
        return f"Done: read {read} chunk{'s' if read != 1 else ''}{which} in {fmt_seconds(p.reading_s)}{waited}."
    if p.stalled or (h is not None and h.engine_state == "none"):
        return (
            f"Paused after chunk {p.step} of {total}: no worker is reading it; it resumes where it "
            f"stopped when a worker takes it up · read {fmt_seconds(p.reading_s)}{waited}"
        )
    step = min(p.step + 1, total)
    phase = f"Reading chunk {step} of {total}" if p.step < total else "Writing the answer"
    return f"{phase} · read {fmt_seconds(p.reading_s)} · ETA {fmt_seconds(p.eta_s)}{waited}"


def describe_health(h: Health, model: str | None = None) -> str:
    """The page's status line: is a worker alive, is the model starting, ready or failed; and which model
    version new questions are read with (`model`)."""
    line = f"**Status:** {text_md(h.summary())}"
    return f"{line} · **Model version:** {text_md(model)}" if model else line


def describe_feedback(views: list[FeedbackView], note: str = "") -> str:
    """The verdicts given on the open reading's answer, newest first, every value as text; `note`
    (already Markdown) goes first: what just happened."""
    lines = [note] if note else []
    if not views:
        lines.append("No feedback on this answer yet.")
    for v in views:
        line = f"- {v.created_at:%Y-%m-%d %H:%M} · **{text_md(v.verdict)}**"
        if v.corrected_answer:
            line += f" · right answer: {text_md(v.corrected_answer)}"
        if v.comment:
            line += f" · comment: {text_md(v.comment)}"
        lines.append(line)
    return "\n".join(lines)


SOURCE_COLUMNS = ["Part", "Sentence", "Entered at step", "Where"]


READING_COLUMNS = ["#", "Question", "Status", "Answer", "Branch of", "Asked (UTC)"]


def reading_row(r: ReadingView) -> list[object]:
    """A document's readings table: one line per reading. The table shows cells as text."""
    status = r.status
    if status == "running" and r.total_chunks:
        status = f"reading {min(r.cursor + 1, r.total_chunks)} of {r.total_chunks}"
    answer = " ".join((r.answer or "").split())
    branch = f"#{r.parent_reading_id} at step {r.branched_at_step}" if r.parent_reading_id else ""
    return [
        r.id,
        " ".join(r.question.split())[:200],
        status,
        answer[:200] + ("…" if len(answer) > 200 else ""),
        branch,
        f"{r.created_at:%Y-%m-%d %H:%M}" if r.created_at else "",
    ]


#: the "#" of a review's line in the readings table: the review's id after it (review_panel opens it)
REVIEW_MARK = "review #"


def history_rows(views: list[ReadingView]) -> list[list[object]]:
    """A document's readings table, newest first: one line a reading a person asked, and one line a contract
    review for its 41 readings ("review #N", which opens its checklist), so a review does not bury the rest."""
    lines: list[tuple[int, list[object]]] = []
    reviews: dict[int, list[ReadingView]] = {}
    for r in views:
        if r.review_id is None:
            lines.append((r.id, reading_row(r)))
        else:
            reviews.setdefault(r.review_id, []).append(r)
    lines += [(min(r.id for r in rs), review_line(review_id, rs)) for review_id, rs in reviews.items()]
    return [row for _, row in sorted(lines, key=lambda line: -line[0])]


def review_line(review_id: int, rs: list[ReadingView]) -> list[object]:
    """A review's one line in the readings table: how far its pass is and how many questions it answered."""
    answered = sum(r.status == "done" for r in rs)
    running = [r for r in rs if r.status == "running"]
    if running:
        step, total = max(r.cursor for r in running), max(r.total_chunks or 0 for r in running)
        status = f"reading {min(step + 1, total)} of {total}" if total else "running"
    elif any(r.status == "queued" for r in rs):
        status = "queued"
    else:
        status = "done" if answered == len(rs) else "finished"
    created = min((r.created_at for r in rs if r.created_at), default=None)
    return [
        f"{REVIEW_MARK}{review_id}",
        f"Contract review: {len(rs)} clause questions in one pass (choose this line to open its checklist)",
        status,
        f"{answered} of {len(rs)} answered",
        "",
        f"{created:%Y-%m-%d %H:%M}" if created else "",
    ]


def review_of_row(row: list[object] | None) -> int | None:
    """The review a readings-table line stands for, or None for a reading's line."""
    cell = str(row[0]) if row else ""
    return int(cell[len(REVIEW_MARK) :]) if cell.startswith(REVIEW_MARK) else None


BRANCH_COLUMNS = ["#", "Branch", "Status", "Answer"]
_NB = "\u00a0"  # a space the table keeps: the tree's indentation


def branch_tree(family: list[ReadingView], open_id: int | None) -> list[list[object]]:
    """The open reading's family as a tree, one row per reading: the reading it all started from, then
    each branch under the reading it was made from ("├─ ", "└─ " and "│" prefixes, deeper for a branch
    of a branch), by id. The open reading is marked. Cells are text (the table shows them as text)."""
    by_id = {r.id: r for r in family}
    root = by_id.get(open_id) if open_id is not None else None
    if root is None:
        return []
    seen = {root.id}
    while root.parent_reading_id in by_id and root.parent_reading_id not in seen:  # up to the original
        root = by_id[root.parent_reading_id]
        seen.add(root.id)
    children: dict[int, list[ReadingView]] = {}
    for r in sorted(family, key=lambda r: r.id):
        if r.parent_reading_id is not None:
            children.setdefault(r.parent_reading_id, []).append(r)
    rows: list[list[object]] = []

    def walk(r: ReadingView, lead: str, branch: str, done: set[int]) -> None:
        if r.id in done:  # a cycle cannot happen (a branch is newer than its parent); never loop if it did
            return
        done.add(r.id)
        what = (
            f"#{r.id} branch at step {r.branched_at_step}"
            if r.parent_reading_id
            else f"#{r.id} original: {' '.join(r.question.split())[:80]}"
        )
        mark = " ◀ open" if r.id == open_id else ""
        answer = " ".join((r.answer or "").split())
        rows.append([r.id, lead + branch + what + mark, r.status, answer[:120] + ("…" if len(answer) > 120 else "")])
        kids = children.get(r.id, [])
        below = lead + ("" if not branch else ("│" + _NB * 3 if branch.startswith("├") else _NB * 4))
        for i, kid in enumerate(kids):
            walk(kid, below, ("└─" if i == len(kids) - 1 else "├─") + _NB, done)

    walk(root, "", "", set())
    return rows


DIFF_COLORS = {"added": "green", "dropped": "red"}


def diff_spans(old: str | None, new: str) -> list[tuple[str, str | None]]:
    """The memory's change from the step before as (text, "added" | "dropped" | None) spans: the
    HighlightedText shows them as text, the categories as colours with a legend."""
    names = {"+": "added", "-": "dropped", None: None}
    return [(text, names[kind]) for text, kind in word_diff(old, new)]


def compare_text(r: ReadingView) -> str:
    """One side of "Compare answers": a reading's answer, its final memory and where it came from."""
    origin = (
        f"branch of #{r.parent_reading_id}, memory edited at step {r.branched_at_step}"
        if r.parent_reading_id
        else "read from the start"
    )
    final = r.checkpoints[-1].memory if r.checkpoints else "(none yet)"
    return (
        f"Answer: {r.answer if r.answer is not None else '(none yet: ' + r.status + ')'}\n\n"
        f"Final memory: {final}\n\n#{r.id} · {r.status} · {origin}"
    )


def describe_step(v: StepView) -> str:
    """The timeline's line for one step: which step, where its chunk came from, who wrote the memory."""
    c = v.checkpoint
    where = pages_label(c.first_page, c.last_page, v.page_unit, v.page_labels)
    line = f"**Step {c.step} of {v.steps}** · {text_md(where)} · characters {c.start_char:,}–{c.end_char:,}"
    if c.origin == "edited":
        by = f" by {text_md(c.edited_by)}" if c.edited_by else ""
        when = f" on {c.created_at:%Y-%m-%d %H:%M} UTC" if c.created_at else ""
        line += f" · memory edited{by}{when}"
    else:
        line += " · memory written by the agent"
    if v.parent_reading_id:
        line += f"  \nThis reading is a branch of #{v.parent_reading_id}, edited at step {v.branched_at_step}."
    return line


def page_image_html(document_id: int, page: int, start: int | None = None, end: int | None = None) -> str:
    """A PDF page as an image beside its passage (text[start:end], highlighted on it): served by the API
    (GET /api/documents/{id}/pages/{n}.png, rendered once and cached). Only numbers go into the HTML."""
    src = html.escape(page_url(document_id, page, start, end))
    return (
        f'<figure class="lr-page"><a href="{src}" target="_blank" rel="noopener">'
        f'<img src="{src}" alt="Page {int(page)} of the PDF" loading="lazy" '
        f'style="max-width:100%;border:1px solid #ccc"></a>'
        f"<figcaption>Page {int(page)} (click to open it full size)</figcaption></figure>"
    )


def progress_bar(p: ProgressView, status: str) -> str:
    total = p.total or 0
    pct = 100 if status == "done" else (int(100 * p.step / total) if total else 0)
    return (
        f'<div class="lr-bar" role="progressbar" aria-valuenow="{pct}" aria-valuemin="0" '
        f'aria-valuemax="100"><div class="lr-fill" style="width:{pct}%"></div></div>'
    )
