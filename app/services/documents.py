"""Upload → stored original → extracted text with page map → ready (or failed with the error)."""

from __future__ import annotations

from pathlib import PurePath

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.documents.parsing import ParseError, parse
from app.documents.storage import store_blob
from app.models import Document, DocumentStatus
from app.services.llm import tokenizer_for
from app.settings import Settings


class UploadError(ValueError):
    """The upload was refused; the message is shown to the user."""


def clean_title(filename: str | None) -> str:
    name = PurePath((filename or "").replace("\\", "/")).name
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    return (name or "untitled")[:300]


def ingest(session: Session, settings: Settings, filename: str | None, data: bytes) -> Document:
    """Store the file and extract its text. A file that cannot be parsed is kept, marked failed."""
    if len(data) > settings.max_upload_mb * 1024 * 1024:
        raise UploadError(f"the file is larger than the {settings.max_upload_mb} MiB limit")
    sha256 = store_blob(settings.blob_dir, data)
    doc = Document(title=clean_title(filename), format="unknown", sha256=sha256, size_bytes=len(data),
                   status=DocumentStatus.parsing)
    session.add(doc)
    session.flush()
    try:
        parsed = parse(data)
    except ParseError as exc:
        doc.status, doc.error = DocumentStatus.failed, str(exc)
        return doc
    doc.format = parsed.format
    doc.text = parsed.text
    doc.page_starts = parsed.page_starts
    doc.char_count = len(parsed.text)
    doc.token_count = len(tokenizer_for(settings)(parsed.text, add_special_tokens=False)["input_ids"])
    doc.status = DocumentStatus.ready
    return doc


def list_documents(session: Session) -> list[Document]:
    return list(session.scalars(select(Document).order_by(Document.id.desc())))


def get_document(session: Session, document_id: int) -> Document | None:
    return session.get(Document, document_id)
