"""The open reading's live view on the Read tab: its status line, progress bar, Cancel and Resume buttons, the
agent's current memory and the answer, followed by the page's 1-second timer while it reads."""

from __future__ import annotations

from dataclasses import dataclass, field

import gradio as gr


@dataclass
class OpenReading:
    reading_id: gr.State  #: the reading open (None: none)
    notice: gr.State  #: why the last cancel/retry was refused (read_events.act)
    status: gr.Markdown
    bar: gr.HTML
    cancel: gr.Button
    retry: gr.Button
    memory: gr.Textbox
    answer: gr.Textbox
    body: gr.Column  #: all but the status line (where a refused Ask says why): hidden with no document chosen
    #: the page's 1-second timer; it lives outside the tabs (so it runs whichever is open): read_tab's connect sets it
    timer: gr.Timer | None = field(default=None)

    @property
    def live(self) -> list:
        """What a tick updates."""
        return [self.status, self.bar, self.memory, self.answer, self.timer]

    @property
    def outputs(self) -> list:
        """What opening or closing a reading updates."""
        return [self.reading_id, *self.live]

    def view(self, reading_id: int | None, status: str, bar: str = "", reading: bool = False) -> dict:
        """A reading just asked (or refused): its id, status line and bar; no memory or answer yet."""
        return {
            self.reading_id: reading_id,
            self.status: status,
            self.bar: bar,
            self.memory: "",
            self.answer: "",
            self.timer: gr.Timer(active=reading),
        }

    def closed(self) -> dict:
        """No reading open. Made afresh for every event: Gradio pops an update's value when it applies it, so a
        shared update would clear the memory only once. (The timer is made here, outside the page's layout: one
        made while the tab is built would be rendered.)"""
        return self.view(None, "") | {self.memory: gr.update(value="", label="Agent memory")}


def build_open_reading() -> OpenReading:
    """The view's components, in the current layout context; its body hidden until a document is chosen."""
    reading_id, notice = gr.State(None), gr.State(None)
    status = gr.Markdown(elem_id="status", latex_delimiters=[])
    with gr.Column(visible=False, elem_id="reading-body") as body:
        bar = gr.HTML(elem_id="progress")
        with gr.Row():
            cancel = gr.Button("Cancel reading", size="sm", elem_id="cancel")
            retry = gr.Button("Resume reading", size="sm", elem_id="retry")
        memory = gr.Textbox(label="Agent memory", lines=6, interactive=False, elem_id="memory")
        answer = gr.Textbox(label="Answer", interactive=False, elem_id="answer")
    return OpenReading(reading_id, notice, status, bar, cancel, retry, memory, answer, body)
