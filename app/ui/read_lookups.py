"""The services' views the Read tab's handlers read, for the signed-in user: None (or nothing) for a document or
reading that is gone or not theirs, so each handler checks one value instead of catching NotFound."""

from __future__ import annotations

from collections.abc import Callable

from gradio.context import LocalContext

from app.services import documents, readings
from app.services.errors import NotFound
from app.services.users import UserView
from app.services.views import DocumentView, ReadingView
from app.settings import Settings
from app.ui.read_views import history_rows


class Lookups:
    def __init__(self, settings: Settings, me: Callable[[], UserView | None]) -> None:
        self.settings, self.me = settings, me

    def document(self, document_id: int | None, with_page_map: bool = False) -> DocumentView | None:
        if document_id is None:
            return None
        try:
            return documents.show_document(self.settings, document_id, with_page_map=with_page_map, user=self.me())
        except NotFound:
            return None

    def reading(self, reading_id: int | None) -> ReadingView | None:
        if reading_id is None:
            return None
        try:
            return readings.show(self.settings, reading_id, user=self.me())
        except NotFound:
            return None

    def document_of(self, reading_id: int) -> int | None:
        r = self.reading(reading_id)
        return r.document_id if r else None

    def reading_rows(self, document_id: int | None) -> list[list[object]]:
        """The document's readings table (a review one line: history_rows)."""
        if document_id is None:
            return []
        try:
            return history_rows(readings.document_readings(self.settings, document_id, user=self.me()))
        except NotFound:
            return []

    def document_choices(self) -> list[tuple[str, int]]:
        """The document menu. Failed documents are listed too: choosing one shows why it could not be read."""
        if LocalContext.request.get(None) is None:
            return []  # building the page: nobody's documents (on_restore fills the menu for the user)
        return [
            (f"#{d.id} {d.title}" + _status_note(d.status), d.id)
            for d in documents.all_documents(self.settings, user=self.me())
        ]


def _status_note(status: str) -> str:
    return "" if status == "ready" else " (could not be read)" if status == "failed" else f" ({status})"
