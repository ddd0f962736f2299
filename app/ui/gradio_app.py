"""Upload a document, ask a question, watch the agent read (chunk k of K, its current memory),
get the answer. Calls app.services directly, like the API does."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from app.api.schemas import DocumentOut, Progress
from app.db import session_scope
from app.queue import request_reading_pass
from app.services import documents, readings
from app.services.documents import UploadError
from app.services.readings import ReadingError
from app.settings import Settings

ACTIVE = {"queued", "running"}


def _fmt_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    s = int(round(s))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def _pages(first: int, last: int, unit: str = "page", labels: list[str] | None = None) -> str:
    """Where a chunk came from: "page 3", "pages 3–4", or for sections their headings too:
    "section 2: Chapter 1", "sections 2–3: Chapter 1 – Chapter 2"."""
    span = f"{unit} {first}" if first == last else f"{unit}s {first}–{last}"
    if unit == "page" or not labels or last > len(labels) or {labels[first - 1], labels[last - 1]} == {"Start"}:
        return span
    names = labels[first - 1] if first == last else f"{labels[first - 1]} – {labels[last - 1]}"
    return f"{span}: {names}"


def describe_document(d: DocumentOut) -> str:
    """What a person sees before asking: title, format, pages or sections, size, tokens, and how
    long one question will take on the active engine."""
    if d.status == "failed":
        return f"**{d.title}** could not be read: {d.error}"
    unit = d.page_unit if d.pages == 1 else f"{d.page_unit}s"
    line = (
        f"**{d.title}** · {FORMAT_NAMES.get(d.format, d.format.upper())} · {d.pages:,} {unit} · "
        f"{d.char_count:,} characters · {d.token_count or 0:,} tokens"
    )
    e = d.estimate
    if e is not None and e.chunks:
        chunks = f"{e.chunks:,} chunk{'s' if e.chunks != 1 else ''} of {e.chunk_tokens} tokens"
        if e.seconds is None:
            line += f"  \nOne question reads {chunks} on `{e.engine}` (no speed figure for it yet)."
        else:
            line += (f"  \nOne question: about {_fmt_seconds(e.seconds)} to read {chunks} "
                     f"on `{e.engine}` ({e.basis}).")
    return line


FORMAT_NAMES = {"pdf": "PDF", "docx": "DOCX", "epub": "EPUB", "html": "HTML", "md": "Markdown", "txt": "TXT"}
UPLOAD_TYPES = [".pdf", ".docx", ".epub", ".html", ".htm", ".xhtml", ".md", ".markdown", ".txt"]


def describe_progress(status: str, p: Progress, error: str | None) -> str:
    if status == "queued":
        return "Queued: waiting for a worker…"
    if status == "failed":
        return f"Failed after chunk {p.step} of {p.total}: {error}"
    total = p.total or 0
    if status == "done":
        return f"Done: read {total} chunk{'s' if total != 1 else ''} in {_fmt_seconds(p.elapsed_s)}."
    step = min(p.step + 1, total)
    phase = f"Reading chunk {step} of {total}" if p.step < total else "Writing the answer"
    return f"{phase} · elapsed {_fmt_seconds(p.elapsed_s)} · ETA {_fmt_seconds(p.eta_s)}"


def progress_bar(p: Progress, status: str) -> str:
    total = p.total or 0
    pct = 100 if status == "done" else (int(100 * p.step / total) if total else 0)
    return (
        f'<div class="lr-bar" role="progressbar" aria-valuenow="{pct}" aria-valuemin="0" '
        f'aria-valuemax="100"><div class="lr-fill" style="width:{pct}%"></div></div>'
    )


def build_ui(settings: Settings) -> gr.Blocks:
    url = settings.resolved_database_url

    def doc_choices() -> list[tuple[str, int]]:
        with session_scope(url) as s:
            return [(f"#{d.id} {d.title}", d.id) for d in documents.list_documents(s)
                    if d.status.value == "ready"]

    def on_upload(path: str | None):
        if not path:
            return gr.update(), ""
        try:
            with session_scope(url) as s:
                doc = DocumentOut.of(documents.ingest(s, settings, Path(path).name, Path(path).read_bytes()),
                                     settings)
        except UploadError as exc:
            return gr.update(), f"**Upload refused:** {exc}"
        choices = doc_choices()
        value = doc.id if doc.status == "ready" else None
        return gr.update(choices=choices, value=value), describe_document(doc)

    def on_select(document_id: int | None) -> str:
        if document_id is None:
            return ""
        with session_scope(url) as s:
            doc = documents.get_document(s, document_id)
            return describe_document(DocumentOut.of(doc, settings)) if doc else ""

    def on_ask(document_id: int | None, question: str, chunk_tokens: float, memory_tokens: float):
        if document_id is None:
            return None, "Upload or choose a document first.", "", "", "", gr.Timer(active=False)
        try:
            with session_scope(url) as s:
                (reading,) = readings.create_readings(
                    s, settings, document_id, [question], int(chunk_tokens), int(memory_tokens)
                )
                reading_id = reading.id
        except (ReadingError, ValueError) as exc:
            return None, f"**Cannot ask:** {exc}", "", "", "", gr.Timer(active=False)
        request_reading_pass(settings)
        return (reading_id, "Queued: waiting for a worker…", progress_bar(Progress(step=0, total=None,
                elapsed_s=None, eta_s=None), "queued"), "", "", gr.Timer(active=True))

    def on_tick(reading_id: int | None):
        if reading_id is None:
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.Timer(active=False)
        with session_scope(url) as s:
            r = readings.get_reading(s, reading_id)
            p = Progress.of(r)
            last = r.checkpoints[-1] if r.checkpoints else None
            where = _pages(last.first_page, last.last_page, documents.document_page_unit(r.document),
                           r.document.page_labels) if last else ""
            memory_label = f"Agent memory after chunk {last.step} ({where})" if last else "Agent memory"
            status, error, answer = r.status.value, r.error, r.answer
            memory = last.memory if last else ""
        return (
            describe_progress(status, p, error),
            progress_bar(p, status),
            gr.update(value=memory, label=memory_label),
            answer or "",
            gr.Timer(active=status in ACTIVE),
        )

    with gr.Blocks(title="Longread") as ui:
        gr.Markdown("# Longread\nAsk questions of a whole book or contract. "
                    "A memory agent reads every page, chunk by chunk, and answers from its notes.")
        reading_id = gr.State(None)
        with gr.Row():
            with gr.Column(scale=1):
                upload = gr.File(label="Upload (PDF, DOCX, EPUB, HTML, MD, TXT)",
                                 file_types=UPLOAD_TYPES, elem_id="upload")
                document = gr.Dropdown(label="Document", choices=doc_choices(), value=None,
                                       elem_id="document")
                doc_info = gr.Markdown(elem_id="doc-info")
            with gr.Column(scale=2):
                question = gr.Textbox(label="Question", placeholder="Which law governs this agreement?",
                                      elem_id="question")
                with gr.Accordion("Reading settings", open=False):
                    chunk_tokens = gr.Number(settings.chunk_tokens, label="Chunk tokens", precision=0)
                    memory_tokens = gr.Number(settings.memory_tokens, label="Memory tokens", precision=0)
                ask = gr.Button("Ask", variant="primary", elem_id="ask")
                status = gr.Markdown(elem_id="status")
                bar = gr.HTML(elem_id="progress")
                memory = gr.Textbox(label="Agent memory", lines=6, interactive=False, elem_id="memory")
                answer = gr.Textbox(label="Answer", interactive=False, elem_id="answer")
        timer = gr.Timer(1.0, active=False)

        upload.upload(on_upload, upload, [document, doc_info])
        document.change(on_select, document, doc_info)
        ask.click(on_ask, [document, question, chunk_tokens, memory_tokens],
                  [reading_id, status, bar, memory, answer, timer])
        timer.tick(on_tick, reading_id, [status, bar, memory, answer, timer])
        ui.load(lambda: gr.update(choices=doc_choices()), None, document)
    return ui
