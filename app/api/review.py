"""Contract reviews (app/services/review.py): start one on a document, read its checklist table, export it."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Response, status

from app.api.auth import UserDep
from app.api.routes import SettingsDep
from app.api.schemas import ReviewIn
from app.services import review
from app.services.review import ReviewView

router = APIRouter(prefix="/api")


@router.post("/documents/{document_id}/review", status_code=status.HTTP_201_CREATED)
def start_review(document_id: int, settings: SettingsDep, user: UserDep, body: ReviewIn | None = None) -> ReviewView:
    """Ask all 41 CUAD categories of the document in one pass; the rows fill as the readings finish."""
    body = body or ReviewIn()
    return review.review(settings, document_id, body.chunk_tokens, body.memory_tokens, user=user)


@router.get("/documents/{document_id}/reviews")
def list_reviews(document_id: int, settings: SettingsDep, user: UserDep) -> list[int]:
    """The ids of the document's reviews, newest first."""
    return review.document_reviews(settings, document_id, user=user)


@router.get("/reviews/{review_id}")
def get_review(review_id: int, settings: SettingsDep, user: UserDep, which: str = "All") -> ReviewView:
    """The checklist table; `which` filters it: All, Yes, No, Found, Not found."""
    return review.filtered(review.show_review(settings, review_id, user=user), which)


@router.get(
    "/reviews/{review_id}/export",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}, "text/markdown": {}}}},
)
def export_review(
    review_id: int, settings: SettingsDep, user: UserDep, format: Literal["csv", "markdown"] = "csv", which: str = "All"
) -> Response:
    """The table as CSV or Markdown (a download), filtered as `which` says."""
    view = review.filtered(review.show_review(settings, review_id, user=user), which)
    body, media, ext = (
        (review.to_csv(view), "text/csv", "csv")
        if format == "csv"
        else (review.to_markdown(view), "text/markdown", "md")
    )
    return Response(
        body,
        media_type=f"{media}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="review-{review_id}.{ext}"'},
    )
