"""The ASGI app: JSON API under /api, our static files under /app-static (Gradio serves its
own under /static and /assets), the Gradio UI at /, the sign-in page at /login. In production
(LONGREAD_MODE=production) everything but the sign-in page, /healthz and /app-static needs a session
or a bearer token (app/api/auth.py); in embedded mode the app acts as the local admin."""

from __future__ import annotations

import threading
from pathlib import Path

import gradio as gr
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from app.api import auth
from app.api.review import router as review_router
from app.api.routes import router
from app.api.training import router as training_router
from app.documents.pages import PageRenderError
from app.documents.sandbox import warm_up as warm_up_parser
from app.services.document_deletion import DeletionError
from app.services.documents import UploadError
from app.services.errors import NotFound
from app.services.feedback import FeedbackError
from app.services.models import ModelVersionError
from app.services.readings import ReadingError
from app.services.training_runs import RunError
from app.services.users import Forbidden, UserError
from app.settings import Settings, get_settings
from app.ui.gradio_app import build_ui
from app.ui.read_views import UPLOAD_HEADROOM

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"


def _detail_response(status_code: int):
    async def handler(_req: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status_code)

    return handler


class UnsafeSettings(RuntimeError):
    """The settings must not serve (production without a secret key, or on SQLite); says what to set."""


def check_serving(settings: Settings) -> None:
    problems = settings.serving_problems()
    if problems:
        raise UnsafeSettings("refusing to start: " + "; ".join(problems))


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    check_serving(settings)
    api = FastAPI(title="Longread", version="0.1.0")
    api.state.settings = settings

    # Errors the services raise for bad input: their message, with the status that says what went wrong.
    for error, code in (
        (UploadError, 413),
        (NotFound, 404),
        (ReadingError, 422),
        (PageRenderError, 422),
        (FeedbackError, 422),
        (Forbidden, 403),
        (UserError, 422),
        (RunError, 422),
        (ModelVersionError, 422),
        (DeletionError, 409),
    ):
        api.add_exception_handler(error, _detail_response(code))
    auth.add_error_handlers(api)

    @api.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    # The sandboxed document parser imports its parsers once (~3 s): start it now, not on the first upload.
    threading.Thread(target=warm_up_parser, name="parser-warm-up", daemon=True).start()
    api.include_router(auth.router)
    api.include_router(auth.pages)
    api.include_router(router)
    api.include_router(training_router)
    api.include_router(review_router)
    api.mount("/app-static", StaticFiles(directory=STATIC_DIR), name="app-static")
    css = (STATIC_DIR / "longread.css").read_text()
    # The UI refuses files over the limit itself, with a message that says so (see UPLOAD_HEADROOM).
    # No run history: its "Runs" page lists Gradio's internal calls, which mean nothing to a reader;
    # our API's docs are at /docs, so Gradio's "Use via API" page is left out too.
    app = gr.mount_gradio_app(
        api,
        build_ui(settings),
        path="/",
        css=css,
        max_file_size=UPLOAD_HEADROOM * settings.max_upload_mb * 1024 * 1024,
        footer_links=["gradio", "settings"],
        run_history=False,
        # the UI's handlers read the user from gr.Request.username (app/ui/gradio_app.py)
        auth_dependency=auth.gradio_username,
    )
    # Outermost: the sign-in gate and the cross-origin check see every request, the UI's included.
    app.add_middleware(auth.AuthGate, settings=settings)
    return app
