"""Deleting a document (its owner or an admin; the UI's Delete and Dismiss, `DELETE /api/documents/{id}`,
`longread documents delete`): its readings, their checkpoints and feedback, then its stored file and page
images, unless another document shares those bytes (blobs and page images are content-addressed).

Feedback already copied into a training run's data stays in that run's folder: deletion touches the database
and the blob store only, never runs/ or the app's training folder. A document being read (a reading queued
or running) is refused: its worker would write into rows that are gone; cancel the readings first.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from app.db import session_scope
from app.documents.storage import blob_path, page_dir
from app.models import Checkpoint, Document, Feedback, Reading, ReadingStatus, Review
from app.services.documents import require_document
from app.services.users import UserView, resolve_actor
from app.settings import Settings

ACTIVE = (ReadingStatus.queued, ReadingStatus.running)


class DeletionError(ValueError):
    """The document cannot be deleted now; the message says why and what to do."""


@dataclass(frozen=True)
class DeletionView:
    """What a deletion removed (or, from `deletion_preview`, would remove)."""

    document_id: int
    title: str
    status: Annotated[str, Field(description="the document's status when it was deleted (ready, failed, ...)")]
    readings: int
    checkpoints: int
    feedback: int
    #: the stored file went too (False: another document has the same bytes, or it was already gone)
    file_removed: Annotated[
        bool, Field(description="False when another document shares the stored file (same bytes)")
    ] = False


def _counts(s: Session, doc: Document) -> DeletionView:
    ids = select(Reading.id).where(Reading.document_id == doc.id).scalar_subquery()
    n = s.scalar(select(func.count()).select_from(Reading).where(Reading.document_id == doc.id)) or 0
    checkpoints = s.scalar(select(func.count()).select_from(Checkpoint).where(Checkpoint.reading_id.in_(ids))) or 0
    feedback = s.scalar(select(func.count()).select_from(Feedback).where(Feedback.reading_id.in_(ids))) or 0
    return DeletionView(doc.id, doc.title, doc.status.value, n, checkpoints, feedback)


def deletion_preview(settings: Settings, document_id: int, *, user: UserView | None = None) -> DeletionView:
    """What deleting the document would remove (NotFound if none or not the user's): the confirmation's text."""
    with session_scope(settings.resolved_database_url) as s:
        return _counts(s, require_document(s, document_id, resolve_actor(s, settings, user)))


def delete_document(settings: Settings, document_id: int, *, user: UserView | None = None) -> DeletionView:
    """Delete the document and everything of it (see the module's docstring). NotFound if none or not the
    user's (an admin may delete anyone's); DeletionError while one of its readings is queued or running."""
    with session_scope(settings.resolved_database_url) as s:
        doc = require_document(s, document_id, resolve_actor(s, settings, user))
        busy = s.scalars(select(Reading.id).where(Reading.document_id == doc.id, Reading.status.in_(ACTIVE))).all()
        if busy:
            raise DeletionError(
                f"document {doc.id} is being read (reading{'s' if len(busy) > 1 else ''} "
                f"{', '.join(f'#{i}' for i in busy)}): cancel {'them' if len(busy) > 1 else 'it'} "
                "first, then delete it"
            )
        gone = _counts(s, doc)
        sha256 = doc.sha256
        ids = select(Reading.id).where(Reading.document_id == doc.id).scalar_subquery()
        s.execute(delete(Feedback).where(Feedback.reading_id.in_(ids)))
        s.execute(delete(Checkpoint).where(Checkpoint.reading_id.in_(ids)))
        # Branches point at their parents, all of the same document: unlink them, then delete them together.
        s.execute(update(Reading).where(Reading.document_id == doc.id).values(parent_reading_id=None))
        s.execute(delete(Reading).where(Reading.document_id == doc.id))
        s.execute(delete(Review).where(Review.document_id == doc.id))  # after the readings that point at them
        s.delete(doc)
        s.flush()
        shared = s.scalar(select(func.count()).select_from(Document).where(Document.sha256 == sha256)) or 0
    removed = False
    if not shared:  # committed: no document refers to these bytes any more
        path = blob_path(settings.blob_dir, sha256)
        removed = path.is_file()
        path.unlink(missing_ok=True)
        shutil.rmtree(page_dir(settings.data_dir, sha256), ignore_errors=True)
    return DeletionView(
        gone.document_id, gone.title, gone.status, gone.readings, gone.checkpoints, gone.feedback, file_removed=removed
    )
