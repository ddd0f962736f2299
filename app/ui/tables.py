"""The read-only tables of the page: documents' readings, provenance, branches, the review, the training pages."""

from __future__ import annotations

from typing import Any

import gradio as gr


def table(headers: list[str], elem_id: str, **kw: Any) -> gr.Dataframe:
    """A read-only table, empty until an event fills it, its cells' text wrapped."""
    return gr.Dataframe(value=[], headers=headers, type="array", interactive=False, wrap=True, elem_id=elem_id, **kw)
