"""Feedback on a reading's answer: correct or incorrect, the right answer, a comment; listed per
reading and per document, and exported as JSON Lines for training (`longread feedback export`,
`GET /api/feedback/export`; read by training/tasks `feedback_tasks`, format in the README).

Each row of the export is one judged reading with its latest verdict:

    {"reading_id", "document_id", "question", "answer" (the model's), "verdict" ("correct" |
     "incorrect"), "corrected_answer", "comment", "final_memory", "created_at" (of the verdict),
     "document_text" (only when asked for)}

Feedback is reached through its reading's document: a reader judges, lists and exports only their
own; an admin's export holds everyone's (it is the training data).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated

from pydantic import Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import session_scope
from app.models import Checkpoint, Document, Feedback, Reading, ReadingStatus, Verdict
from app.services.documents import require_document
from app.services.readings import require_reading
from app.services.users import UserView, resolve_actor
from app.settings import Settings

MAX_ANSWER_CHARS = 4000
MAX_COMMENT_CHARS = 4000
VERDICTS = tuple(v.value for v in Verdict)
#: Characters that Python's str.splitlines() (and some JSON Lines readers) take for line ends but
#: json.dumps(ensure_ascii=False) leaves raw inside strings: escaped, so that a line stays one line.
_LINE_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"})


class FeedbackError(ValueError):
    """Feedback cannot be given; the message is shown to the user."""


@dataclass(frozen=True)
class FeedbackView:
    id: int
    reading_id: int
    document_id: int
    question: str
    answer: Annotated[str | None, Field(description="the model's answer that was judged")]
    verdict: str
    corrected_answer: str | None
    comment: str | None
    created_at: datetime


def _view(f: Feedback) -> FeedbackView:
    r = f.reading
    return FeedbackView(
        id=f.id,
        reading_id=r.id,
        document_id=r.document_id,
        question=r.question,
        answer=r.answer,
        verdict=f.verdict.value,
        corrected_answer=f.corrected_answer,
        comment=f.comment,
        created_at=f.created_at,
    )


def _text(value: str | None, name: str, limit: int) -> str | None:
    """Stripped text, None when empty; FeedbackError when longer than `limit` characters."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise FeedbackError(f"{name} must be text")
    value = value.strip()
    if "\x00" in value:
        raise FeedbackError(f"{name} must not contain NUL characters")
    if len(value) > limit:
        raise FeedbackError(f"{name} may have at most {limit:,} characters (got {len(value):,})")
    return value or None


def record_feedback(
    session: Session,
    reading_id: int,
    verdict: str,
    corrected_answer: str | None = None,
    comment: str | None = None,
    user: UserView | None = None,
) -> Feedback:
    """A new verdict on a finished reading's answer (flushed, not committed)."""
    if verdict not in VERDICTS:
        raise FeedbackError(f"verdict must be one of {', '.join(VERDICTS)} (got {verdict!r})")
    corrected_answer = _text(corrected_answer, "the corrected answer", MAX_ANSWER_CHARS)
    comment = _text(comment, "the comment", MAX_COMMENT_CHARS)
    r = require_reading(session, reading_id, user)
    if r.status != ReadingStatus.done:
        raise FeedbackError(f"reading {reading_id} is {r.status.value}: only an answered reading can be judged")
    f = Feedback(reading_id=r.id, verdict=Verdict(verdict), corrected_answer=corrected_answer, comment=comment)
    session.add(f)
    session.flush()
    return f


# --- the use cases ---------------------------------------------------------------------------------


def add_feedback(
    settings: Settings,
    reading_id: int,
    verdict: str,
    corrected_answer: str | None = None,
    comment: str | None = None,
    *,
    user: UserView | None = None,
) -> FeedbackView:
    """Judge a reading's answer: correct or incorrect, optionally with the right answer and a comment."""
    with session_scope(settings.resolved_database_url) as s:
        actor = resolve_actor(s, settings, user)
        return _view(record_feedback(s, reading_id, verdict, corrected_answer, comment, actor))


def reading_feedback(settings: Settings, reading_id: int, *, user: UserView | None = None) -> list[FeedbackView]:
    """Every verdict on the reading, newest first; NotFound if there is no such reading (or not the user's)."""
    with session_scope(settings.resolved_database_url) as s:
        require_reading(s, reading_id, resolve_actor(s, settings, user))
        rows = s.scalars(select(Feedback).where(Feedback.reading_id == reading_id).order_by(Feedback.id.desc()))
        return [_view(f) for f in rows]


def document_feedback(settings: Settings, document_id: int, *, user: UserView | None = None) -> list[FeedbackView]:
    """Every verdict on the document's readings, newest first; NotFound if there is no such document
    (or not the user's)."""
    with session_scope(settings.resolved_database_url) as s:
        require_document(s, document_id, resolve_actor(s, settings, user))
        rows = s.scalars(
            select(Feedback).join(Reading).where(Reading.document_id == document_id).order_by(Feedback.id.desc())
        )
        return [_view(f) for f in rows]


def export_rows(settings: Settings, *, with_text: bool = False, user: UserView | None = None) -> list[dict]:
    """One dict per judged reading (its latest verdict), by reading id: the JSON Lines export's rows.
    `with_text` adds the document's whole text as `document_text` (training then needs no database).
    A reader's export holds their own documents' feedback; an admin's everyone's."""
    rows = []
    with session_scope(settings.resolved_database_url) as s:
        actor = resolve_actor(s, settings, user)
        latest = select(func.max(Feedback.id)).group_by(Feedback.reading_id).scalar_subquery()
        query = select(Feedback, Reading).join(Reading).where(Feedback.id.in_(latest)).order_by(Reading.id)
        if not actor.is_admin:
            query = query.join(Document, Document.id == Reading.document_id).where(Document.owner_id == actor.id)
        judged = s.execute(query).all()
        texts: dict[int, str] = {}
        for f, r in judged:
            last = s.scalars(
                select(Checkpoint).where(Checkpoint.reading_id == r.id).order_by(Checkpoint.step.desc()).limit(1)
            ).first()
            row = {
                "reading_id": r.id,
                "document_id": r.document_id,
                "question": r.question,
                "answer": r.answer,
                "verdict": f.verdict.value,
                "corrected_answer": f.corrected_answer,
                "comment": f.comment,
                "final_memory": last.memory if last else None,
                "created_at": f.created_at.isoformat(),
            }
            if with_text:
                if r.document_id not in texts:
                    texts[r.document_id] = s.get(Document, r.document_id).text or ""
                row["document_text"] = texts[r.document_id]
            rows.append(row)
    return rows


def export_lines(settings: Settings, *, with_text: bool = False, user: UserView | None = None) -> Iterator[str]:
    """The export as JSON Lines, one line (ending in a newline) per judged reading. The rows are read
    in one transaction before the first line is given out."""
    for row in export_rows(settings, with_text=with_text, user=user):
        yield json.dumps(row, ensure_ascii=False).translate(_LINE_BREAKS) + "\n"


def export_file(settings: Settings, path: Path, *, with_text: bool = False, user: UserView | None = None) -> int:
    """Write the export to `path` (replaced whole, never left half-written); returns the number of lines."""
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    n = 0
    with tmp.open("w", encoding="utf-8") as out:
        for line in export_lines(settings, with_text=with_text, user=user):
            out.write(line)
            n += 1
    tmp.replace(path)
    return n
