"""Deleting the chosen document from the Read tab: **Delete document** asks first (naming the document and how
many readings go with it), **Dismiss** takes a failed upload off the list. Both call the one deletion service
(app/services/document_deletion.py), which checks that the user owns the document or is an admin."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from app.services import document_deletion
from app.services.errors import NotFound
from app.services.users import UserView
from app.settings import Settings
from app.ui.text import text_md

HIDDEN = gr.update(visible=False)


def confirm_text(v: document_deletion.DeletionView) -> str:
    """The confirmation's question: the document, what goes with it, and what stays."""
    n = v.readings
    what = (
        f"{n} reading{'s' if n != 1 else ''} ({v.checkpoints} checkpoint{'s' if v.checkpoints != 1 else ''}, "
        f"{v.feedback} feedback) {'go' if n != 1 else 'goes'} with it, and so do"
        if n
        else "It has no readings; with it go"
    )
    return (
        f"**Delete #{v.document_id} {text_md(v.title)}?** {what} its file and page images (unless another "
        "document has the same file). Feedback already copied into a training run stays in that run. "
        "This cannot be undone."
    )


class DocumentActions:
    """The buttons, the confirmation and its message; `connect(...)` wires them once the tab's parts exist. Which
    button shows (and when the confirmation closes) follows the chosen document: read_events.py's on_parts."""

    def __init__(self, settings: Settings, me: Callable[[], UserView | None]) -> None:
        self.settings, self.me = settings, me
        with gr.Row():
            self.delete = gr.Button(
                "Delete document", size="sm", variant="secondary", visible=False, elem_id="delete-document"
            )
            self.dismiss = gr.Button("Dismiss", size="sm", visible=False, elem_id="dismiss-document")
        with gr.Group(visible=False) as self.confirm_box:
            self.confirm_text = gr.Markdown(elem_id="delete-confirm-text", latex_delimiters=[])
            with gr.Row():
                self.yes = gr.Button("Yes, delete it", size="sm", variant="stop", elem_id="delete-yes")
                self.no = gr.Button("Keep it", size="sm", elem_id="delete-no")
        self.msg = gr.Markdown(elem_id="delete-msg", latex_delimiters=[])

    def ask(self, document_id: int | None):
        if document_id is None:
            return gr.update(), HIDDEN, "**Choose a document first.**"
        try:
            v = document_deletion.deletion_preview(self.settings, document_id, user=self.me())
        except NotFound as exc:
            return gr.update(), HIDDEN, f"**Cannot delete:** {text_md(exc)}"
        return confirm_text(v), gr.update(visible=True), ""

    def remove(self, document_id: int | None, verb: str = "Deleted"):
        """Delete (or dismiss) the document: the confirmation closes, the message says what went."""
        if document_id is None:
            return HIDDEN, "**Choose a document first.**"
        try:
            v = document_deletion.delete_document(self.settings, int(document_id), user=self.me())
        except (NotFound, document_deletion.DeletionError) as exc:
            return HIDDEN, f"**Cannot delete:** {text_md(exc)}"
        went = f" with {v.readings} reading{'s' if v.readings != 1 else ''}" if v.readings else ""
        return HIDDEN, f"{verb} #{v.document_id} {text_md(v.title)}{went}."

    def connect(self, document: gr.Dropdown, after: Callable, after_inputs: list, after_outputs: list) -> None:
        """Wire the buttons; `after(*after_inputs)` refreshes the tab once a deletion was tried (it clears the
        tab only if the document is gone)."""
        self.delete.click(self.ask, document, [self.confirm_text, self.confirm_box, self.msg], show_progress="hidden")
        self.no.click(lambda: (HIDDEN, ""), None, [self.confirm_box, self.msg], show_progress="hidden")
        self.yes.click(self.remove, document, [self.confirm_box, self.msg], show_progress="hidden").then(
            after, after_inputs, after_outputs, show_progress="hidden"
        )
        self.dismiss.click(
            lambda d: self.remove(d, "Dismissed"), document, [self.confirm_box, self.msg], show_progress="hidden"
        ).then(after, after_inputs, after_outputs, show_progress="hidden")
