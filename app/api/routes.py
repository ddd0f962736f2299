"""Thin routes over app.services; service errors map to HTTP errors in one place (app.web)."""

from __future__ import annotations

from typing import Annotated, Iterator

from fastapi import APIRouter, Depends, HTTPException, Request, UploadFile, status
from sqlalchemy.orm import Session

from app.api.schemas import AskIn, DocumentOut, ReadingOut
from app.db import session_scope
from app.queue import request_reading_pass
from app.services import documents, readings
from app.settings import Settings

router = APIRouter(prefix="/api")


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    with session_scope(settings.resolved_database_url) as s:
        yield s


SessionDep = Annotated[Session, Depends(get_session)]


@router.post("/documents", status_code=status.HTTP_201_CREATED)
def upload_document(file: UploadFile, settings: SettingsDep, session: SessionDep) -> DocumentOut:
    limit = settings.max_upload_mb * 1024 * 1024
    data = file.file.read(limit + 1)  # never read more than the limit into memory
    doc = documents.ingest(session, settings, file.filename, data)
    return DocumentOut.of(doc, settings, with_page_map=True)


@router.get("/documents")
def list_documents(settings: SettingsDep, session: SessionDep) -> list[DocumentOut]:
    return [DocumentOut.of(d, settings) for d in documents.list_documents(session)]


@router.get("/documents/{document_id}")
def get_document(document_id: int, settings: SettingsDep, session: SessionDep) -> DocumentOut:
    doc = documents.get_document(session, document_id)
    if doc is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no document {document_id}")
    return DocumentOut.of(doc, settings, with_page_map=True)


@router.post("/documents/{document_id}/readings", status_code=status.HTTP_201_CREATED)
def ask(document_id: int, body: AskIn, settings: SettingsDep) -> ReadingOut:
    # Commit before enqueueing, so the worker always finds the reading.
    with session_scope(settings.resolved_database_url) as s:
        (reading,) = readings.create_readings(
            s, settings, document_id, [body.question], body.chunk_tokens, body.memory_tokens
        )
        out = ReadingOut.of(reading)
    request_reading_pass(settings)
    return out


@router.get("/documents/{document_id}/readings")
def list_readings(document_id: int, session: SessionDep) -> list[ReadingOut]:
    return [ReadingOut.of(r) for r in readings.list_readings(session, document_id)]


@router.get("/readings/{reading_id}")
def get_reading(reading_id: int, session: SessionDep) -> ReadingOut:
    reading = readings.get_reading(session, reading_id)
    if reading is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no reading {reading_id}")
    return ReadingOut.of(reading)


@router.post("/readings/{reading_id}/cancel")
def cancel(reading_id: int, session: SessionDep) -> ReadingOut:
    return ReadingOut.of(readings.cancel_reading(session, reading_id))


@router.post("/readings/{reading_id}/retry")
def retry(reading_id: int, settings: SettingsDep) -> ReadingOut:
    with session_scope(settings.resolved_database_url) as s:
        out = ReadingOut.of(readings.retry_reading(s, reading_id))
    request_reading_pass(settings)
    return out
