"""The Read tab's question box: the question, more questions read in the same pass, the reading's sizes, how
long the pass would take, and the Ask button."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from app.services.readings import MAX_CHUNK_TOKENS, MAX_MEMORY_TOKENS, MIN_CHUNK_TOKENS, MIN_MEMORY_TOKENS


@dataclass(frozen=True)
class QuestionPanel:
    question: gr.Textbox
    more: gr.Textbox  #: more questions, one a line
    settings_box: gr.Accordion  #: the sizes' accordion (its placeholders are filled when it opens)
    chunk_tokens: gr.Textbox
    memory_tokens: gr.Textbox
    estimate: gr.Markdown
    ask: gr.Button


def build_question_panel() -> QuestionPanel:
    """The box's components, in the current layout context."""
    question = gr.Textbox(label="Question", placeholder="Which law governs this agreement?", elem_id="question")
    with gr.Accordion("More questions at once", open=False, elem_id="more-box"):
        more = gr.Textbox(
            label="More questions, one a line: read together with the one above, in one pass",
            lines=3,
            elem_id="more-questions",
        )
    with gr.Accordion("Reading settings", open=False) as settings_box:
        # Empty unless the user types a size: the reading then gets the active version's, else the
        # settings' (the placeholder says which). Limits are the service's ("Cannot ask"), not Gradio's.
        chunk_tokens = gr.Textbox(
            max_lines=1,
            elem_id="chunk-tokens",
            label=f"Chunk tokens ({MIN_CHUNK_TOKENS:,}–{MAX_CHUNK_TOKENS:,})",
        )
        memory_tokens = gr.Textbox(
            max_lines=1,
            elem_id="memory-tokens",
            label=f"Memory tokens ({MIN_MEMORY_TOKENS:,}–{MAX_MEMORY_TOKENS:,})",
        )
    estimate = gr.Markdown(elem_id="pass-estimate", latex_delimiters=[])
    ask = gr.Button("Ask", variant="primary", elem_id="ask")
    return QuestionPanel(question, more, settings_box, chunk_tokens, memory_tokens, estimate, ask)


def parse_tokens(value: str | None, what: str) -> int | None:
    """A size typed in a box: None (the reading's default) when left empty. A text box, as Gradio's Number box
    cannot be empty (it shows and sends 0)."""
    text = (value or "").strip().replace(",", "")
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"{what} must be a whole number of tokens, or empty for the default (got {value!r})")
    return int(text)
