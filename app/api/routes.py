"""Thin routes over app.services: each calls the one service function of its action (which validates,
commits and enqueues) and returns its view, as it is or copied into a schema; service errors map to HTTP errors in one
place (app.web). Every route acts as the request's user (app/api/auth.py), which the services check:
another user's id answers 404 exactly as a missing one does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, UploadFile, status
from fastapi.responses import FileResponse, StreamingResponse
from sqlalchemy.orm import Session

from app.api.auth import UserDep
from app.api.schemas import (
    AskIn,
    CheckpointsOut,
    EditIn,
    FeedbackIn,
    HealthOut,
)
from app.db import session_scope
from app.services import document_deletion, documents, feedback, health, provenance, readings
from app.services.document_deletion import DeletionView
from app.services.feedback import FeedbackView
from app.services.provenance import SourceView
from app.services.views import DocumentView, ReadingView, StepView
from app.settings import Settings

router = APIRouter(prefix="/api")


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    with session_scope(settings.resolved_database_url) as s:
        yield s


SessionDep = Annotated[Session, Depends(get_session)]


@router.get("/health")
def get_health(session: SessionDep) -> HealthOut:
    """Is a worker alive, and is its model starting, ready or failed (with its log's last lines)?"""
    h = health.health(session)
    return HealthOut(
        workers=h.workers,
        engine_state=h.engine_state,
        engine=h.engine,
        detail=h.detail,
        starting_for_s=h.starting_for_s,
        summary=h.summary(),
    )


@router.post("/documents", status_code=status.HTTP_201_CREATED)
def upload_document(file: UploadFile, settings: SettingsDep, response: Response, user: UserDep) -> DocumentView:
    """201 with a new document; 200 with the earlier one when these bytes were uploaded before."""
    limit = settings.max_upload_mb * 1024 * 1024
    data = file.file.read(limit + 1)  # never read more than the limit into memory
    doc, existing = documents.add_document(settings, file.filename, data, user=user)
    if existing:
        response.status_code = status.HTTP_200_OK
    return doc


@router.get("/documents")
def list_documents(settings: SettingsDep, user: UserDep) -> list[DocumentView]:
    """The caller's documents, newest first."""
    return documents.all_documents(settings, user=user)


@router.get("/documents/{document_id}")
def get_document(document_id: int, settings: SettingsDep, user: UserDep) -> DocumentView:
    return documents.show_document(settings, document_id, user=user)


@router.delete("/documents/{document_id}")
def delete_document(document_id: int, settings: SettingsDep, user: UserDep) -> DeletionView:
    """Delete the document with its readings, checkpoints, feedback, stored file and page images (its owner or
    an admin). 409 while one of its readings is queued or running; feedback copied into a training run stays."""
    return document_deletion.delete_document(settings, document_id, user=user)


@router.get(
    "/documents/{document_id}/pages/{page}.png",
    response_class=FileResponse,
    responses={
        200: {"content": {"image/png": {}}, "description": "The page as a PNG image (108 dpi)"},
        404: {"description": "No such document or page, or the document is not a PDF"},
        422: {"description": "The page could not be rendered"},
    },
)
def get_page_image(
    document_id: int,
    page: int,
    settings: SettingsDep,
    user: UserDep,
    start: Annotated[int | None, Query(ge=0, description="a passage's first character")] = None,
    end: Annotated[int | None, Query(ge=0, description="the next one")] = None,
) -> FileResponse:
    """Page `page` (1-based) of a PDF document as an image, rendered once and cached: the page a
    provenance passage is printed on; with `start` and `end`, that passage is highlighted on it."""
    path = documents.page_image(settings, document_id, page, start=start, end=end, user=user)
    return FileResponse(path, media_type="image/png", headers={"Cache-Control": "private, max-age=86400"})


@router.post("/documents/{document_id}/readings", status_code=status.HTTP_201_CREATED)
def ask(document_id: int, body: AskIn, settings: SettingsDep, user: UserDep) -> ReadingView:
    (reading,) = readings.ask(settings, document_id, [body.question], body.chunk_tokens, body.memory_tokens, user=user)
    return reading


@router.get("/documents/{document_id}/readings")
def list_readings(document_id: int, settings: SettingsDep, user: UserDep) -> list[ReadingView]:
    return readings.document_readings(settings, document_id, user=user)


@router.get("/readings/{reading_id}")
def get_reading(reading_id: int, settings: SettingsDep, user: UserDep) -> ReadingView:
    return readings.show(settings, reading_id, user=user)


@router.get("/readings/{reading_id}/checkpoints")
def get_checkpoints(reading_id: int, settings: SettingsDep, user: UserDep, with_chunks: bool = False) -> CheckpointsOut:
    """Every checkpoint of the reading, step by step; `with_chunks=true` adds the text of the chunk each read."""
    r = readings.show(settings, reading_id, with_chunks=with_chunks, user=user)
    return CheckpointsOut(reading_id=r.id, checkpoints=r.checkpoints)


@router.get("/readings/{reading_id}/checkpoints/{step}")
def get_step(reading_id: int, step: int, settings: SettingsDep, user: UserDep) -> StepView:
    """One step with the text of its chunk and the memory before it: a timeline loads steps one at a time."""
    return readings.step(settings, reading_id, step, user=user)


@router.get("/readings/{reading_id}/provenance")
def get_provenance(reading_id: int, settings: SettingsDep, user: UserDep) -> list[SourceView]:
    """For each sentence of the final memory and of the answer: the step where it entered the memory,
    that step's pages, and the passage of its chunk that matches it best."""
    return provenance.provenance(settings, reading_id, user=user)


@router.post("/readings/{reading_id}/branches", status_code=status.HTTP_201_CREATED)
def edit(reading_id: int, body: EditIn, settings: SettingsDep, user: UserDep) -> ReadingView:
    """Edit the memory at a step and resume from it: returns the new branch (queued), which shares the
    reading's earlier steps, has the edited memory as that step and reads on from the next chunk. The
    original reading never changes; editing the last step only re-answers."""
    return readings.edit(settings, reading_id, body.step, body.memory, edited_by=f"api:{user.username}", user=user)


@router.get("/readings/{reading_id}/branches")
def list_branches(reading_id: int, settings: SettingsDep, user: UserDep) -> list[ReadingView]:
    """Every branch made from the reading and from its branches (a tree: follow `parent_reading_id`), by id."""
    return readings.branches(settings, reading_id, user=user)


@router.post("/readings/{reading_id}/cancel")
def cancel(reading_id: int, settings: SettingsDep, user: UserDep) -> ReadingView:
    return readings.cancel(settings, reading_id, user=user)


@router.post("/readings/{reading_id}/retry")
def retry(reading_id: int, settings: SettingsDep, user: UserDep) -> ReadingView:
    return readings.retry(settings, reading_id, user=user)


@router.post("/readings/{reading_id}/feedback", status_code=status.HTTP_201_CREATED)
def add_feedback(reading_id: int, body: FeedbackIn, settings: SettingsDep, user: UserDep) -> FeedbackView:
    """Judge a finished reading's answer; a later verdict on the same reading is added, and the latest counts."""
    return feedback.add_feedback(settings, reading_id, body.verdict, body.corrected_answer, body.comment, user=user)


@router.get("/readings/{reading_id}/feedback")
def list_reading_feedback(reading_id: int, settings: SettingsDep, user: UserDep) -> list[FeedbackView]:
    """Every verdict on the reading, newest first."""
    return feedback.reading_feedback(settings, reading_id, user=user)


@router.get("/documents/{document_id}/feedback")
def list_document_feedback(document_id: int, settings: SettingsDep, user: UserDep) -> list[FeedbackView]:
    """Every verdict on the document's readings, newest first."""
    return feedback.document_feedback(settings, document_id, user=user)


@router.get(
    "/feedback/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/jsonl": {}},
            "description": "JSON Lines: one judged reading a line, its latest verdict (README: Feedback export format)",
        }
    },
)
def export_feedback(settings: SettingsDep, user: UserDep, with_text: bool = False) -> StreamingResponse:
    """The feedback as training data; `with_text=true` adds each document's whole text (`document_text`).
    A reader's export holds their own documents' feedback, an admin's everyone's."""
    lines = list(feedback.export_lines(settings, with_text=with_text, user=user))  # errors before the 200
    return StreamingResponse(
        iter(lines),
        media_type="application/jsonl",
        headers={"Content-Disposition": 'attachment; filename="feedback.jsonl"'},
    )
