"""Upload a document, ask a question, watch the agent read (chunk k of K, its current memory),
get the answer. Each action calls the same service function the API and the CLI call (it validates,
commits and enqueues); the UI only shows the views they return.

Every service call passes the signed-in user (`me()`: Gradio's `gr.Request.username`, which the app's
auth_dependency sets, app/api/auth.py), so the services' ownership checks hold for the UI too. Admins
also get the Users panel (list, add, change role, disable) and the Training and Models tabs
(app/ui/training_ui.py), hidden for readers."""

from __future__ import annotations

import bisect
import html
import time
from collections.abc import Callable
from pathlib import Path

import gradio as gr
from gradio.context import LocalContext

from app.db import session_scope
from app.services import documents, feedback, health, provenance, readings, users
from app.services.documents import UploadError
from app.services.errors import NotFound
from app.services.feedback import FeedbackView
from app.services.health import Health
from app.services.users import UserView
from app.services.readings import MAX_CHUNK_TOKENS, MAX_MEMORY_TOKENS, MIN_CHUNK_TOKENS, MIN_MEMORY_TOKENS
from app.services.views import QUEUED, DocumentView, ProgressView, ReadingView, StepView, word_diff
from app.settings import Settings
from app.ui.text import fmt_seconds, text_md
from app.ui.training_ui import build_admin_tabs

ACTIVE = {"queued", "running"}
NOTICE_S = 10.0  # seconds a refused cancel/retry's message stays above the live status


def _pages(first: int, last: int, unit: str = "page", labels: list[str] | None = None) -> str:
    """Where a chunk came from: "page 3", "pages 3–4", or for sections their headings too:
    "section 2: Chapter 1", "sections 2–3: Chapter 1 – Chapter 2"."""
    span = f"{unit} {first}" if first == last else f"{unit}s {first}–{last}"
    if unit == "page" or not labels or last > len(labels) or {labels[first - 1], labels[last - 1]} == {"Start"}:
        return span
    names = labels[first - 1] if first == last else f"{labels[first - 1]} – {labels[last - 1]}"
    return f"{span}: {names}"


def describe_document(d: DocumentView) -> str:
    """What a person sees before asking: title, format, pages or sections, size, tokens, and how
    long one question will take on the active engine."""
    if d.status == "failed":
        return f"**{text_md(d.title)}** could not be read: {text_md(d.error)}"
    unit = d.page_unit if d.pages == 1 else f"{d.page_unit}s"
    line = (
        f"**{text_md(d.title)}** · {FORMAT_NAMES.get(d.format, text_md(d.format.upper()))} · {d.pages:,} {unit} · "
        f"{d.char_count:,} characters · {d.token_count or 0:,} tokens"
    )
    e = d.estimate
    if e is not None and e.chunks:
        chunks = f"{e.chunks:,} chunk{'s' if e.chunks != 1 else ''} of {e.chunk_tokens} tokens"
        if e.seconds is None:
            line += f"  \nOne question reads {chunks} on {text_md(e.engine)} (no speed figure for it yet)."
        else:
            line += (f"  \nOne question: about {fmt_seconds(e.seconds)} to read {chunks} "
                     f"on {text_md(e.engine)} ({text_md(e.basis)}).")
    return line


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
        return (f"Done: read {total} chunk{'s' if total != 1 else ''} in {fmt_seconds(p.reading_s)}"
                f"{waited}.")
    if p.stalled or (h is not None and h.engine_state == "none"):
        return (f"Paused after chunk {p.step} of {total}: no worker is reading it; it resumes where it "
                f"stopped when a worker takes it up · read {fmt_seconds(p.reading_s)}{waited}")
    step = min(p.step + 1, total)
    phase = f"Reading chunk {step} of {total}" if p.step < total else "Writing the answer"
    return f"{phase} · read {fmt_seconds(p.reading_s)} · ETA {fmt_seconds(p.eta_s)}{waited}"


def _tokens(value: float | None) -> int | None:
    """A size typed in a Number box: None (the default) when left empty."""
    return None if value is None else int(value)


def describe_health(h: Health) -> str:
    """The page's status line: is a worker alive, is the model starting, ready or failed."""
    return f"**Status:** {text_md(h.summary())}"


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
    return [r.id, " ".join(r.question.split())[:200], status, answer[:200] + ("…" if len(answer) > 200 else ""),
            branch, f"{r.created_at:%Y-%m-%d %H:%M}" if r.created_at else ""]


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
        what = (f"#{r.id} branch at step {r.branched_at_step}" if r.parent_reading_id
                else f"#{r.id} original: {' '.join(r.question.split())[:80]}")  # fmt: skip
        mark = " ◀ open" if r.id == open_id else ""
        answer = " ".join((r.answer or "").split())
        rows.append([r.id, lead + branch + what + mark, r.status,
                     answer[:120] + ("…" if len(answer) > 120 else "")])  # fmt: skip
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
    origin = (f"branch of #{r.parent_reading_id}, memory edited at step {r.branched_at_step}"
              if r.parent_reading_id else "read from the start")  # fmt: skip
    final = r.checkpoints[-1].memory if r.checkpoints else "(none yet)"
    return (f"Answer: {r.answer if r.answer is not None else '(none yet: ' + r.status + ')'}\n\n"
            f"Final memory: {final}\n\n#{r.id} · {r.status} · {origin}")  # fmt: skip


def describe_step(v: StepView) -> str:
    """The timeline's line for one step: which step, where its chunk came from, who wrote the memory."""
    c = v.checkpoint
    line = (f"**Step {c.step} of {v.steps}** · {text_md(_pages(c.first_page, c.last_page, v.page_unit, v.page_labels))}"
            f" · characters {c.start_char:,}–{c.end_char:,}")  # fmt: skip
    if c.origin == "edited":
        by = f" by {text_md(c.edited_by)}" if c.edited_by else ""
        when = f" on {c.created_at:%Y-%m-%d %H:%M} UTC" if c.created_at else ""
        line += f" · memory edited{by}{when}"
    else:
        line += " · memory written by the agent"
    if v.parent_reading_id:
        line += f"  \nThis reading is a branch of #{v.parent_reading_id}, edited at step {v.branched_at_step}."
    return line


def page_image_html(document_id: int, page: int) -> str:
    """A PDF page as an image beside its passage: served by the API (GET /api/documents/{id}/pages/{n}.png,
    rendered once and cached). Only the two numbers go into the HTML."""
    src = f"/api/documents/{int(document_id)}/pages/{int(page)}.png"
    return (f'<figure class="lr-page"><a href="{src}" target="_blank" rel="noopener">'
            f'<img src="{src}" alt="Page {int(page)} of the PDF" loading="lazy" '
            f'style="max-width:100%;border:1px solid #ccc"></a>'
            f"<figcaption>Page {int(page)} (click to open it full size)</figcaption></figure>")


def progress_bar(p: ProgressView, status: str) -> str:
    total = p.total or 0
    pct = 100 if status == "done" else (int(100 * p.step / total) if total else 0)
    return (
        f'<div class="lr-bar" role="progressbar" aria-valuenow="{pct}" aria-valuemin="0" '
        f'aria-valuemax="100"><div class="lr-fill" style="width:{pct}%"></div></div>'
    )


def build_ui(settings: Settings) -> gr.Blocks:
    url = settings.resolved_database_url
    # An empty reading view: reading id, status, progress bar, memory, answer, timer.
    CLOSED = (None, "", "", gr.update(value="", label="Agent memory"), "", gr.Timer(active=False))

    def me() -> UserView | None:
        """The user of the event being handled (gr.Request.username, set by the app's auth_dependency).
        None when there is none: the services then act as the local admin in embedded mode and refuse
        in production."""
        request = LocalContext.request.get(None)
        return users.active_user(settings, getattr(request, "username", None))

    def doc_choices() -> list[tuple[str, int]]:
        # Failed documents are listed too: choosing one shows why it could not be read.
        if LocalContext.request.get(None) is None:
            return []  # building the page: nobody's documents (on_restore fills the menu for the user)
        return [(f"#{d.id} {d.title}" + ("" if d.status == "ready" else
                 " (could not be read)" if d.status == "failed" else f" ({d.status})"), d.id)
                for d in documents.all_documents(settings, user=me())]

    def on_upload(path: str | None, reading_id: int | None, saved: dict | None):
        """Store and parse the file, then show its document (the earlier one for the same bytes).
        The upload box is emptied (and Gradio's copy deleted) after."""
        unchanged = (gr.update(),) * (3 + len(CLOSED))  # info line, table, saved, reading view
        if not path:
            return gr.update(), gr.update(), *unchanged
        file = Path(path)
        try:
            size = file.stat().st_size
            if size > settings.max_upload_mb * 1024 * 1024:
                return None, gr.update(), (f"**Upload refused:** {text_md(file.name)} is {size / 2**20:.1f} "
                                           f"MiB, over the {settings.max_upload_mb} MiB limit."), *unchanged[1:]
            doc, existing = documents.add_document(settings, file.name, file.read_bytes(), user=me())
            document_id = doc.id
        except UploadError as exc:
            return None, gr.update(), f"**Upload refused:** {text_md(exc)}", *unchanged[1:]
        finally:
            file.unlink(missing_ok=True)
        info, *rest = show_document(document_id, reading_id, saved)
        note = f"Already uploaded as #{document_id}; its readings are below.  \n" if existing else ""
        return None, gr.update(choices=doc_choices(), value=document_id), note + info, *rest

    def reading_rows(document_id: int | None) -> list[list[object]]:
        if document_id is None:
            return []
        try:
            return [reading_row(r) for r in readings.document_readings(settings, document_id, user=me())]
        except NotFound:
            return []

    def show_document(document_id: int | None, reading_id: int | None, saved: dict | None):
        """A document chosen (or uploaded): its info line and readings; a reading of another
        document is closed."""
        saved = {**(saved or {}), "document": document_id}
        if document_id is None:
            return "", [], saved, *CLOSED
        try:
            info = describe_document(documents.show_document(settings, document_id, with_page_map=False, user=me()))
        except NotFound:
            info = ""
        keep = reading_id is not None and _document_of(reading_id) == document_id
        if keep:
            return info, reading_rows(document_id), saved, *(gr.update(),) * len(CLOSED)
        return info, reading_rows(document_id), {**saved, "reading": None}, *CLOSED

    def on_refresh(document_id: int | None, shown: list[list[object]] | None):
        """Readings made elsewhere (the API, another tab) and their progress; no update when
        nothing changed, so the table does not flicker."""
        rows = reading_rows(document_id)
        same = [[str(c) for c in row] for row in rows] == [[str(c) for c in row] for row in (shown or [])]
        return gr.update() if same else rows

    def _document_of(reading_id: int) -> int | None:
        try:
            return readings.show(settings, reading_id, user=me()).document_id
        except NotFound:
            return None

    def open_reading(reading_id: int | None):
        """The reading's question and its live view (status, bar, memory, answer, timer)."""
        try:
            r = readings.show(settings, reading_id, user=me()) if reading_id is not None else None
        except NotFound:
            r = None
        if r is None:
            return None, gr.update(), *CLOSED[1:]
        return reading_id, r.question, *on_tick(reading_id)

    def on_open(evt: gr.SelectData, saved: dict | None):
        reading_id = int(evt.row_value[0])
        return *open_reading(reading_id), {**(saved or {}), "reading": reading_id}

    def on_restore(saved: dict | None):
        """After a reload: the document and the reading that were open, live if still running."""
        saved = saved or {}
        document_id = saved.get("document")
        choices = doc_choices()
        if document_id not in {value for _, value in choices}:  # nothing to restore: leave the page be
            return gr.update(choices=choices), *(gr.update(),) * (4 + len(CLOSED[1:]))
        info, rows, *_ = show_document(document_id, None, saved)
        return (gr.update(choices=choices, value=document_id), info, rows,
                *open_reading(saved.get("reading")))

    def on_ask(document_id: int | None, question: str, more: str, chunk_tokens: float, memory_tokens: float,
               saved: dict | None):
        reading_id, *view = _ask(document_id, question, more, chunk_tokens, memory_tokens)
        return reading_id, *view, reading_rows(document_id), {**(saved or {}), "reading": reading_id}

    def _ask(document_id: int | None, question: str, more: str, chunk_tokens: float, memory_tokens: float):
        """Ask the question, and any more (one a line): read together in one pass; the first one opens."""
        if document_id is None:
            return None, "Upload or choose a document first.", "", "", "", gr.Timer(active=False)
        questions = [question] + [line for line in (more or "").splitlines() if line.strip()]
        try:
            asked = readings.ask(settings, document_id, questions, _tokens(chunk_tokens), _tokens(memory_tokens),
                                 user=me())
        except (NotFound, ValueError) as exc:  # ReadingError is a ValueError
            return None, f"**Cannot ask:** {text_md(exc)}", "", "", "", gr.Timer(active=False)
        also = (f" ({len(asked) - 1} more question{'s' if len(asked) > 2 else ''} read in the same pass: "
                "open them from the list below)") if len(asked) > 1 else ""  # fmt: skip
        return (asked[0].id, f"Queued: waiting for a worker…{also}", progress_bar(QUEUED, "queued"), "", "",
                gr.Timer(active=True))

    def on_cancel(reading_id: int | None):
        return _act(readings.cancel, reading_id)

    def on_retry(reading_id: int | None):
        return _act(readings.retry, reading_id)

    def _act(action: Callable[..., object], reading_id: int | None):
        """Cancel or retry the open reading, then show it as it is now, under why it could not be done:
        that notice stays above the live status for NOTICE_S (a tick in flight would otherwise wipe it)."""
        if reading_id is None:
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.Timer(active=False), None
        try:
            action(settings, reading_id, user=me())
        except (NotFound, ValueError) as exc:
            notice = (reading_id, f"**Cannot {action.__name__}:** {text_md(exc)}", time.monotonic() + NOTICE_S)
            return *on_tick(reading_id, notice), notice
        return *on_tick(reading_id), None

    def on_tick(reading_id: int | None, notice: tuple[int, str, float] | None = None):
        """The open reading's status, bar, memory, answer and timer; an unexpired `notice` (reading id,
        message, until) of this reading heads the status."""
        note = notice[1] if notice and notice[0] == reading_id and time.monotonic() < notice[2] else None
        if reading_id is None:
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.Timer(active=False)
        try:
            r = readings.show(settings, reading_id, user=me())
        except NotFound:
            return note or gr.update(), gr.update(), gr.update(), gr.update(), gr.Timer(active=False)
        with session_scope(url) as s:
            h = health.health(s)
        last = r.checkpoints[-1] if r.checkpoints else None
        if last:
            doc = documents.show_document(settings, r.document_id, user=me())
            where = _pages(last.first_page, last.last_page, doc.page_unit, [p.label for p in doc.page_map or []])
        memory_label = f"Agent memory after chunk {last.step} ({where})" if last else "Agent memory"
        p, status, error, answer = r.progress, r.status, r.error, r.answer
        memory = last.memory if last else ""
        return (
            f"{note}  \n{describe_progress(status, p, error, h)}" if note else describe_progress(status, p, error, h),
            progress_bar(p, status),
            gr.update(value=memory, label=memory_label),
            answer or "",
            gr.Timer(active=status in ACTIVE),
        )

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

    NO_STEP = ("No checkpoint yet: the timeline fills as the agent reads.", "", "", [], gr.update(interactive=False))

    def show_step(reading_id: int | None, k: float | None):
        """Step k of the open reading: where it read, the chunk's text (loaded now, one step at a time),
        the memory it wrote (editable) and the change from step k-1, word by word."""
        if reading_id is None or k is None:
            return NO_STEP
        try:
            v = readings.step(settings, reading_id, int(k), user=me())
        except (NotFound, ValueError):
            return NO_STEP
        return (describe_step(v), v.checkpoint.chunk or "", v.checkpoint.memory,
                diff_spans(v.previous_memory, v.checkpoint.memory), gr.update(interactive=True))

    def load_timeline(reading_id: int | None):
        """The open reading's timeline, at its last step; the slider spans every step."""
        try:
            n = len(readings.show(settings, reading_id, user=me()).checkpoints) if reading_id is not None else 0
        except NotFound:
            n = 0
        if n == 0:
            return gr.update(minimum=0, maximum=1, value=0, interactive=False), *NO_STEP
        return gr.update(minimum=1, maximum=max(n, 2), value=n, interactive=n > 1), *show_step(reading_id, n)

    def on_resume(reading_id: int | None, k: float | None, memory_text: str, document_id: int | None,
                  saved: dict | None):
        """Make a branch from the edited memory at step k and open it: it reads on from chunk k+1."""
        keep = (gr.update(),) * 9
        if reading_id is None or not k:
            return "**Cannot resume:** open a reading and choose a step first.", *keep
        try:
            who = me()
            branch = readings.edit(settings, reading_id, int(k), memory_text,
                                   edited_by=f"ui:{who.username}" if who else "ui", user=who)
        except (NotFound, ValueError) as exc:  # ReadingError is a ValueError
            return f"**Cannot resume:** {text_md(exc)}", *keep
        note = (f"Branch #{branch.id} of #{reading_id} made at step {int(k)}: "
                + ("it writes a new answer." if branch.cursor >= (branch.total_chunks or 0) else
                   f"it reads on from chunk {int(k) + 1}."))  # fmt: skip
        return (note, *open_reading(branch.id), {**(saved or {}), "reading": branch.id},
                reading_rows(document_id))

    def compare_choices(reading_id: int | None):
        """The other readings of the open reading's document, to compare answers with; this one on the left."""
        try:
            r = readings.show(settings, reading_id, user=me()) if reading_id is not None else None
        except NotFound:
            r = None
        if r is None:
            return gr.update(choices=[], value=None), gr.update(value="", label="This reading"), ""
        others = [(f"#{o.id} " + (f"(branch of #{o.parent_reading_id} at step {o.branched_at_step}) " if
                                  o.parent_reading_id else "") + f"{' '.join(o.question.split())[:80]} · {o.status}", o.id)
                  for o in readings.document_readings(settings, r.document_id, user=me()) if o.id != r.id]  # fmt: skip
        return (gr.update(choices=others, value=None), gr.update(value=compare_text(r), label=f"This reading (#{r.id})"),
                gr.update(value="", label="The other reading"))  # fmt: skip

    def on_compare(reading_id: int | None, other_id: int | None):
        if reading_id is None or other_id is None:
            return gr.update(), gr.update(value="", label="The other reading")
        try:
            this, other = readings.show(settings, reading_id, user=me()), readings.show(settings, int(other_id), user=me())
        except NotFound:
            return gr.update(), gr.update(value="", label="The other reading")
        return (gr.update(value=compare_text(this), label=f"This reading (#{this.id})"),
                gr.update(value=compare_text(other), label=f"The other reading (#{other.id})"))  # fmt: skip

    def load_provenance(reading_id: int | None):
        """Each sentence of the final memory and the answer, with the step it entered the memory at."""
        empty = [], [], [], "Open a reading: where each sentence of its memory and answer came from shows here."
        if reading_id is None:
            return *empty, gr.update(value="", visible=False)
        try:
            who = me()
            sources = provenance.provenance(settings, reading_id, user=who)
            doc = documents.show_document(settings, readings.show(settings, reading_id, user=who).document_id, user=who)
        except NotFound:
            return *empty, gr.update(value="", visible=False)
        labels = [p.label for p in doc.page_map or []]
        rows = [[x.part, " ".join(x.sentence.split()), x.step if x.step else "–",
                 (_pages(x.first_page, x.last_page, doc.page_unit, labels)
                  + (" (memory edited there)" if x.origin == "edited" else "")) if x.step else "not in the memory"]
                for x in sources]  # fmt: skip
        starts = [p.start for p in doc.page_map or []] if doc.format == "pdf" else []
        keep = [[x.passage_start, x.passage_end, x.step, doc.id,
                 bisect.bisect_right(starts, x.passage_start) if starts and x.passage_start is not None else None]
                for x in sources]  # fmt: skip
        note = "Choose a sentence to see the passage it came from." if rows else "No memory yet."
        return rows, keep, [], note, gr.update(value="", visible=False)

    def on_source(evt: gr.SelectData, reading_id: int | None, kept: list | None):
        """The chosen sentence's passage, highlighted in its place in the document; for a PDF, beside it
        the page it is printed on, as an image (GET /api/documents/{id}/pages/{n}.png)."""
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        if reading_id is None or not kept or row >= len(kept) or kept[row][0] is None:
            return ([], "That sentence is in no memory the agent wrote, so it has no passage.",
                    gr.update(value="", visible=False))  # fmt: skip
        start, end, k, document_id, page = (kept[row] + [None, None])[:5]
        before, passage, after = provenance.passage_in_context(settings, reading_id, start, end, user=me())
        note = f"The passage of step {k}'s chunk that matches it best (characters {start:,}–{end:,})"
        image = gr.update(value="", visible=False)
        if page:
            note += f", printed on page {int(page)} of the PDF (beside it)"
            image = gr.update(value=page_image_html(int(document_id), int(page)), visible=True)
        return [(before, None), (passage, "source"), (after, None)], note + ".", image

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
        note = ("No branches yet: edit a memory in the timeline and resume from it to make one." if len(family) <= 1
                else f"{len(family) - 1} branch{'es' if len(family) > 2 else ''}: choose one to open it.")
        return family, note

    def on_branches_refresh(reading_id: int | None, shown: list[list[object]] | None):
        """Branches made elsewhere and their progress; no update when nothing changed (no flicker)."""
        rows, note = load_branches(reading_id)
        same = [[str(c) for c in row] for row in rows] == [[str(c) for c in row] for row in (shown or [])]
        return (gr.update(), gr.update()) if same else (rows, note)

    def on_health():
        with session_scope(url) as s:
            h = health.health(s)
        failed = h.engine_state == "failed"
        return describe_health(h), gr.update(value=h.detail if failed else "", visible=failed)

    def on_account():
        """The header's account line (who is signed in, a sign-out button) and, for admins, the Users panel
        and the Training and Models tabs."""
        who = me()
        if who is None:
            return "", *(gr.update(visible=False),) * 3, *admin_view(None)
        if settings.mode == "production":
            line = (f'Signed in as <b id="account-name">{html.escape(who.username)}</b> ({html.escape(who.role)})'
                    '<form method="post" action="/logout" class="lr-signout">'
                    '<button type="submit" id="sign-out">Sign out</button></form>')
        else:
            line = (f'Acting as the local admin <b id="account-name">{html.escape(who.username)}</b> '
                    "(embedded mode: no sign-in)")
        return (f'<div class="lr-account">{line}</div>', *(gr.update(visible=who.is_admin),) * 3,
                *admin_view("" if who.is_admin else None))

    def admin_view(note: str | None):
        """The Users panel's table, user menu and message; nothing for a non-admin (note None)."""
        if note is None:
            return [], gr.update(choices=[], value=None), ""
        listed = users.list_users(settings, me())
        rows = [[u.id, u.username, u.role, "disabled" if u.disabled else "active",
                 "yes" if u.has_password else "no (cannot sign in)",
                 f"{u.created_at:%Y-%m-%d %H:%M}" if u.created_at else ""] for u in listed]
        return rows, gr.update(choices=[(u.username, u.id) for u in listed], value=None), note

    def _admin_act(action: Callable[[], users.UserView], done: str):
        try:
            changed = action()
        except (NotFound, ValueError, PermissionError) as exc:  # UserError is a ValueError, Forbidden a PermissionError
            who = me()
            return *admin_view(f"**Cannot do that:** {text_md(exc)}" if who and who.is_admin else None), gr.update()
        return *admin_view(done.format(name=text_md(changed.username), role=text_md(changed.role))), ""

    def on_add_user(name: str, password: str, role: str | None):
        return _admin_act(lambda: users.add_user(settings, (name or "").strip(), password or "", role or "reader",
                                                 user=me()), "Added {name} ({role}).")

    def on_set_role(user_id: int | None, role: str | None):
        if user_id is None or role is None:
            return *admin_view("**Cannot change the role:** choose a user and a role."), gr.update()
        return _admin_act(lambda: users.update_user(settings, int(user_id), role=role, user=me()),
                          "{name} is now {role}.")

    def on_disable(user_id: int | None, disabled: bool):
        if user_id is None:
            return *admin_view("**Choose a user first.**"), gr.update()
        return _admin_act(lambda: users.update_user(settings, int(user_id), disabled=disabled, user=me()),
                          "{name} is " + ("disabled: they cannot sign in, and their sessions and tokens stop working."
                                          if disabled else "enabled again."))

    with gr.Blocks(title="Longread") as ui:
        with gr.Row(equal_height=True):
            gr.Markdown("# Longread\nAsk questions of a whole book or contract. "
                        "A memory agent reads every page, chunk by chunk, and answers from its notes.")
            account = gr.HTML(elem_id="account")
        health_line = gr.Markdown(elem_id="health", latex_delimiters=[])
        engine_log = gr.Textbox(label="The model's log (last lines)", lines=8, max_lines=20, interactive=False,
                                visible=False, elem_id="engine-log")
        with gr.Tabs(elem_id="pages"):
            with gr.Tab("Read", id="read", elem_id="read-tab"):
                reading_id = gr.State(None)
                notice = gr.State(None)  # why the last cancel/retry was refused: see _act
                with gr.Row():
                    with gr.Column(scale=1, min_width=320):
                        upload = gr.File(label=f"Upload (PDF, DOCX, EPUB, HTML, MD, TXT; at most {settings.max_upload_mb} MiB)",
                                         file_types=UPLOAD_TYPES, elem_id="upload")
                        document = gr.Dropdown(label="Document", choices=doc_choices(), value=None,
                                               elem_id="document")
                        doc_info = gr.Markdown(elem_id="doc-info", latex_delimiters=[])
                    with gr.Column(scale=2):
                        question = gr.Textbox(label="Question", placeholder="Which law governs this agreement?",
                                              elem_id="question")
                        with gr.Accordion("More questions at once", open=False, elem_id="more-box"):
                            more_questions = gr.Textbox(label="More questions, one a line: read together with the one "
                                                        "above, in one pass", lines=3, elem_id="more-questions")
                        with gr.Accordion("Reading settings", open=False):
                            # Limits are the service's (a clear "Cannot ask" message), not Gradio's.
                            chunk_tokens = gr.Number(settings.chunk_tokens, precision=0, elem_id="chunk-tokens",
                                                     label=f"Chunk tokens ({MIN_CHUNK_TOKENS:,}–{MAX_CHUNK_TOKENS:,})")
                            memory_tokens = gr.Number(settings.memory_tokens, precision=0, elem_id="memory-tokens",
                                                      label=f"Memory tokens ({MIN_MEMORY_TOKENS:,}–{MAX_MEMORY_TOKENS:,})")
                        ask = gr.Button("Ask", variant="primary", elem_id="ask")
                        status = gr.Markdown(elem_id="status", latex_delimiters=[])
                        bar = gr.HTML(elem_id="progress")
                        with gr.Row():
                            cancel = gr.Button("Cancel reading", size="sm", elem_id="cancel")
                            retry = gr.Button("Resume reading", size="sm", elem_id="retry")
                        memory = gr.Textbox(label="Agent memory", lines=6, interactive=False, elem_id="memory")
                        answer = gr.Textbox(label="Answer", interactive=False, elem_id="answer")
                        with gr.Accordion("Timeline: the memory after each chunk (edit one and resume from it)",
                                          open=False, elem_id="timeline") as timeline:
                            step_slider = gr.Slider(0, 1, value=0, step=1, label="Step (arrow keys move through the steps)",
                                                    interactive=False, elem_id="step")
                            step_info = gr.Markdown(elem_id="step-info", latex_delimiters=[])
                            with gr.Row():
                                step_chunk = gr.Textbox(label="The chunk the agent read", lines=8, max_lines=16,
                                                        interactive=False, elem_id="step-chunk")
                                step_memory = gr.Textbox(label="The memory it wrote (edit it, then resume from it)", lines=8,
                                                         max_lines=16, interactive=True, elem_id="step-memory")
                            step_diff = gr.HighlightedText(label="Change from the step before", combine_adjacent=False,
                                                           show_legend=True, show_inline_category=False,
                                                           color_map=DIFF_COLORS, elem_id="step-diff")
                            resume = gr.Button("Resume from this memory (a new branch)", size="sm", interactive=False,
                                               elem_id="resume-edit")
                            edit_msg = gr.Markdown(elem_id="edit-msg", latex_delimiters=[])
                        with gr.Accordion("Where it came from: each sentence of the memory and the answer, and its passage",
                                          open=False, elem_id="provenance") as provenance_box:
                            sources = gr.Dataframe(value=[], headers=SOURCE_COLUMNS, type="array", interactive=False,
                                                   wrap=True, max_height=300, elem_id="sources",
                                                   column_widths=["10%", "55%", "12%", "23%"])
                            source_note = gr.Markdown(elem_id="source-note", latex_delimiters=[])
                            with gr.Row():
                                source_passage = gr.HighlightedText(label="The passage, in its place in the document",
                                                                    combine_adjacent=False, show_legend=False,
                                                                    show_inline_category=False,
                                                                    color_map={"source": "yellow"}, elem_id="source-passage")
                                source_page = gr.HTML(visible=False, elem_id="source-page")
                            source_spans = gr.State([])
                        with gr.Group(elem_id="branches-box"):
                            branches_note = gr.Markdown(elem_id="branches-note", latex_delimiters=[])
                            branches_table = gr.Dataframe(value=[], headers=BRANCH_COLUMNS, type="array", interactive=False,
                                                          wrap=True, max_height=260, elem_id="branches",
                                                          label="Branches: this reading's family as a tree (choose one to "
                                                          "open it)", column_widths=["8%", "52%", "12%", "28%"])
                        with gr.Accordion("Compare answers: this reading beside another of the document (a branch, say)",
                                          open=False, elem_id="compare") as compare_box:
                            compare_with = gr.Dropdown(label="Compare with", choices=[], value=None, elem_id="compare-with")
                            with gr.Row():
                                compare_left = gr.Textbox(label="This reading", lines=6, max_lines=20, interactive=False,
                                                          elem_id="compare-left")
                                compare_right = gr.Textbox(label="The other reading", lines=6, max_lines=20,
                                                           interactive=False, elem_id="compare-right")
                        with gr.Group(elem_id="feedback"):
                            verdict = gr.Radio(["correct", "incorrect"], label="Your verdict on this answer",
                                               elem_id="verdict")
                            corrected = gr.Textbox(label="The right answer (if it is wrong)", elem_id="corrected-answer")
                            comment = gr.Textbox(label="Comment", elem_id="feedback-comment")
                            save_feedback = gr.Button("Save feedback", size="sm", elem_id="save-feedback")
                        feedback_list = gr.Markdown(elem_id="feedback-list", latex_delimiters=[])
                readings_table = gr.Dataframe(value=[], headers=READING_COLUMNS, type="array", interactive=False,
                                              wrap=True, max_height=360, elem_id="readings",
                                              label="Readings of this document: choose one to open it",
                                              column_widths=["6%", "30%", "12%", "30%", "10%", "12%"])
                # Admins only (hidden for readers; the services refuse a reader's calls all the same).
                with gr.Accordion("Users (admins only): add, change role, disable", open=True, visible=False,
                                  elem_id="admin-users") as admin_box:
                    users_table = gr.Dataframe(value=[], headers=["#", "Username", "Role", "State", "Password set",
                                                                  "Created (UTC)"], type="array", interactive=False,
                                               elem_id="users-table")
                    with gr.Row():
                        new_name = gr.Textbox(label="New user's name", elem_id="new-username")
                        new_password = gr.Textbox(label="Their password (at least 8 characters)", type="password",
                                                  elem_id="new-password")
                        new_role = gr.Radio(["reader", "admin"], value="reader", label="Role", elem_id="new-role")
                        add_user = gr.Button("Add user", elem_id="add-user")
                    with gr.Row():
                        pick_user = gr.Dropdown(label="User", choices=[], value=None, elem_id="pick-user")
                        pick_role = gr.Radio(["reader", "admin"], label="Role", elem_id="pick-role")
                        change_role = gr.Button("Change role", size="sm", elem_id="change-role")
                        disable_user = gr.Button("Disable", size="sm", elem_id="disable-user")
                        enable_user = gr.Button("Enable", size="sm", elem_id="enable-user")
                    users_msg = gr.Markdown(elem_id="users-msg", latex_delimiters=[])
            admin_tabs = build_admin_tabs(settings, me)
        # The document and reading open in this browser, restored after a reload.
        saved = gr.BrowserState({"document": None, "reading": None}, storage_key="longread-view")
        timer = gr.Timer(1.0, active=False)
        list_timer = gr.Timer(3.0)
        health_timer = gr.Timer(3.0)

        # show_progress="hidden": no Gradio spinner or timer ("0.2s") over the info and status lines.
        # `input`, not `change`: a document set by the code (upload, reload) is shown by that code.
        view = [reading_id, status, bar, memory, answer, timer]
        shown = [doc_info, readings_table, saved, *view]
        upload.upload(on_upload, [upload, reading_id, saved], [upload, document, *shown], show_progress="hidden")
        document.input(show_document, [document, reading_id, saved], shown, show_progress="hidden")
        ask.click(on_ask, [document, question, more_questions, chunk_tokens, memory_tokens, saved],
                  [*view, readings_table, saved], show_progress="hidden")
        readings_table.select(on_open, saved, [reading_id, question, *view[1:], saved], show_progress="hidden")
        list_timer.tick(on_refresh, [document, readings_table], readings_table, show_progress="hidden")
        timer.tick(on_tick, [reading_id, notice], [status, bar, memory, answer, timer], show_progress="hidden")
        cancel.click(on_cancel, reading_id, [status, bar, memory, answer, timer, notice], show_progress="hidden")
        reading_id.change(show_feedback, reading_id, feedback_list, show_progress="hidden")
        step_view = [step_info, step_chunk, step_memory, step_diff, resume]
        reading_id.change(load_timeline, reading_id, [step_slider, *step_view], show_progress="hidden")
        timeline.expand(load_timeline, reading_id, [step_slider, *step_view], show_progress="hidden")
        step_slider.change(show_step, [reading_id, step_slider], step_view, show_progress="hidden")
        provenance_view = [sources, source_spans, source_passage, source_note, source_page]
        reading_id.change(load_provenance, reading_id, provenance_view, show_progress="hidden")
        provenance_box.expand(load_provenance, reading_id, provenance_view, show_progress="hidden")
        sources.select(on_source, [reading_id, source_spans], [source_passage, source_note, source_page],
                       show_progress="hidden")
        branch_view = [branches_table, branches_note]
        reading_id.change(load_branches, reading_id, branch_view, show_progress="hidden")
        list_timer.tick(on_branches_refresh, [reading_id, branches_table], branch_view, show_progress="hidden")
        # While a reading runs, its rows in both tables follow it every second, not every three.
        timer.tick(on_branches_refresh, [reading_id, branches_table], branch_view, show_progress="hidden")
        timer.tick(on_refresh, [document, readings_table], readings_table, show_progress="hidden")
        branches_table.select(on_open, saved, [reading_id, question, *view[1:], saved], show_progress="hidden")
        compare_view = [compare_with, compare_left, compare_right]
        reading_id.change(compare_choices, reading_id, compare_view, show_progress="hidden")
        compare_box.expand(compare_choices, reading_id, compare_view, show_progress="hidden")
        compare_with.input(on_compare, [reading_id, compare_with], [compare_left, compare_right],
                           show_progress="hidden")
        resume.click(on_resume, [reading_id, step_slider, step_memory, document, saved],
                     [edit_msg, reading_id, question, *view[1:], saved, readings_table], show_progress="hidden")
        save_feedback.click(on_feedback, [reading_id, verdict, corrected, comment],
                            [feedback_list, verdict, corrected, comment], show_progress="hidden")
        retry.click(on_retry, reading_id, [status, bar, memory, answer, timer, notice], show_progress="hidden")
        health_timer.tick(on_health, None, [health_line, engine_log], show_progress="hidden")
        ui.load(on_health, None, [health_line, engine_log], show_progress="hidden")
        admin_outputs = [users_table, pick_user, users_msg]
        ui.load(on_account, None, [account, admin_box, admin_tabs.training, admin_tabs.models, *admin_outputs],
                show_progress="hidden")
        add_user.click(on_add_user, [new_name, new_password, new_role], [*admin_outputs, new_password],
                       show_progress="hidden")
        change_role.click(on_set_role, [pick_user, pick_role], [*admin_outputs, new_password], show_progress="hidden")
        disable_user.click(lambda u: on_disable(u, True), pick_user, [*admin_outputs, new_password],
                           show_progress="hidden")
        enable_user.click(lambda u: on_disable(u, False), pick_user, [*admin_outputs, new_password],
                          show_progress="hidden")
        ui.load(on_restore, saved, [document, doc_info, readings_table, reading_id, question, *view[1:]],
                show_progress="hidden")
    return ui
