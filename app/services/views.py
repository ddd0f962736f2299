"""What the use cases hand back: plain, detached snapshots of documents and readings, with every
derived figure (a reading's progress and ETA, a document's reading estimate) computed here, once.

The API serves them as they are (their fields' descriptions are its schema's; a field marked
`NOT_SERVED` stays out of its JSON), the UI and the CLI show them; none of them computes anything of
its own, and nothing here touches the database after the session closes.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from pydantic import Field

from app.models import Checkpoint, Reading, ReadingStatus
from app.settings import Settings

#: A field the API leaves out of its JSON: the UI's and the CLI's, not part of the API's answer.
NOT_SERVED = Field(exclude=True)


@dataclass(frozen=True)
class ProgressView:
    """Where a reading is, and where its time went: reading (the agent at work) apart from waiting
    (in the queue, for the model to start, for a worker after its worker died)."""

    step: int
    total: int | None
    elapsed_s: Annotated[float | None, Field(description="wall time since the question was asked (reading + waiting)")]
    eta_s: Annotated[float | None, Field(description="time left at the reading's own pace; None while it waits")]
    reading_s: Annotated[
        float | None,
        Field(description="time the agent spent reading: every step's own seconds, the answer and the step under way"),
    ] = None
    waiting_s: Annotated[float | None, Field(description="the rest of elapsed_s: queued, or waiting for a worker")] = (
        None
    )
    stalled: Annotated[bool, Field(description="running, but its worker stopped beating: it waits for a worker")] = (
        False
    )
    #: the chunks before this one were not read by this reading: a branch starts after its edited step
    read_from: Annotated[int, NOT_SERVED] = 0


QUEUED = ProgressView(step=0, total=None, elapsed_s=None, eta_s=None)


def reading_progress(r: Reading, stale_after_s: float | None = None, now: datetime | None = None) -> ProgressView:
    now = now or datetime.now(UTC)
    stale_after_s = Settings.model_fields["stale_after_s"].default if stale_after_s is None else stale_after_s
    running = r.status == ReadingStatus.running
    stalled = running and (r.heartbeat_at is None or (now - r.heartbeat_at).total_seconds() > stale_after_s)
    reading = sum(c.seconds for c in r.checkpoints)
    if r.started_at:
        # The step under way (or the answer, once done) counts as reading while a runner holds it.
        last = max([r.started_at] + [c.created_at for c in r.checkpoints[-1:] if c.created_at])
        if running and not stalled:
            reading += max(0.0, (now - last).total_seconds())
        elif r.status == ReadingStatus.done and r.finished_at:
            reading += max(0.0, (r.finished_at - last).total_seconds())
    elapsed = None
    if r.created_at:
        elapsed = ((r.finished_at if r.finished_at else now) - r.created_at).total_seconds()
    eta = None
    read = [c for c in r.checkpoints if c.origin != "edited"]  # a branch's edited step took no reading
    if r.total_chunks is not None and read and not r.finished_at and running and not stalled:
        per_step = sum(c.seconds for c in read) / len(read)
        eta = per_step * (r.total_chunks - r.cursor)
    return ProgressView(
        step=r.cursor,
        total=r.total_chunks,
        elapsed_s=elapsed,
        reading_s=reading if r.started_at else None,
        waiting_s=None if elapsed is None else max(0.0, elapsed - reading),
        eta_s=eta,
        stalled=stalled,
        read_from=r.branched_at_step or 0,
    )


@dataclass(frozen=True)
class CheckpointView:
    step: int
    memory: str
    start_char: int
    end_char: int
    first_page: int
    last_page: int
    origin: Annotated[
        str, Field(description="`agent`, or `edited` for a memory a person wrote (a branch's first step)")
    ]
    edited_by: Annotated[str | None, Field(description="for an edited memory: who edited it")]
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    created_at: Annotated[datetime | None, NOT_SERVED]
    #: it can be long: a reading's chunks make up the whole document
    chunk: Annotated[str | None, Field(description="the chunk's text, on request (`with_chunks=true`)")] = None


def checkpoint_view(c: Checkpoint, text: str | None = None) -> CheckpointView:
    """`text`: the document's text, to include the chunk the agent read."""
    return CheckpointView(
        step=c.step,
        memory=c.memory,
        start_char=c.start_char,
        end_char=c.end_char,
        first_page=c.first_page,
        last_page=c.last_page,
        origin=c.origin or "agent",
        edited_by=c.edited_by,
        prompt_tokens=c.prompt_tokens,
        completion_tokens=c.completion_tokens,
        seconds=c.seconds,
        created_at=c.created_at,
        chunk=None if text is None else text[c.start_char : c.end_char],
    )


@dataclass(frozen=True)
class ReadingView:
    id: int
    document_id: int
    question: str
    status: str
    answer: str | None
    final_output: str | None
    error: str | None
    model: str
    chunk_tokens: int
    memory_tokens: int
    template_set: str
    memory_policy: Annotated[
        str, Field(description="generative: the model rewrites its memory; extractive: sentences kept")
    ]
    #: `progress` serves them (its step and total)
    cursor: Annotated[int, NOT_SERVED]
    total_chunks: Annotated[int | None, NOT_SERVED]
    created_at: datetime | None
    parent_reading_id: Annotated[int | None, Field(description="a branch: the reading it was made from")]
    branched_at_step: Annotated[int | None, Field(description="a branch: the step whose memory was edited")]
    review_id: Annotated[int | None, Field(description="the contract review this reading is one question of")]
    progress: ProgressView
    #: every step as this reading sees it: a branch's shared steps (its ancestors') included
    checkpoints: list[CheckpointView]


def reading_view(r: Reading, stale_after_s: float | None = None, with_chunks: bool = False) -> ReadingView:
    text = (r.document.text or "") if with_chunks else None
    return ReadingView(
        id=r.id,
        document_id=r.document_id,
        question=r.question,
        status=r.status.value,
        answer=r.answer,
        final_output=r.final_output,
        error=r.error,
        model=r.model,
        chunk_tokens=r.chunk_tokens,
        memory_tokens=r.memory_tokens,
        template_set=r.template_set,
        memory_policy=r.memory_policy,
        cursor=r.cursor or 0,
        total_chunks=r.total_chunks,
        created_at=r.created_at,
        parent_reading_id=r.parent_reading_id,
        branched_at_step=r.branched_at_step,
        review_id=r.review_id,
        progress=reading_progress(r, stale_after_s),
        checkpoints=[checkpoint_view(c, text) for c in r.timeline()],
    )


@dataclass(frozen=True)
class EstimateView:
    """How long questions would take to read the whole document on the active engine: n questions asked
    together, n * per_question_s + ceil(n / shared_by) * shared_s, plus start_s when given."""

    chunks: int
    seconds: Annotated[float | None, Field(description="one question read alone; None when there is no speed figure")]
    engine: str
    chunk_tokens: int
    memory_tokens: int
    basis: str
    #: the part of `seconds` every question of a pass pays (all of it when nothing is shared) and the part
    #: `shared_by` questions share (writing, batched); None: no figure (app/services/documents.py `estimate_reading`)
    per_question_s: Annotated[float | None, Field(description="what each question of a pass adds (its prompts)")] = None
    shared_s: Annotated[
        float | None, Field(description="what up to `shared_by` questions of a pass share (the writing)")
    ] = None
    shared_by: int = 1
    #: seconds to start the model (None: it is up, or no figure)
    start_s: Annotated[
        float | None, Field(description="the model's start first: no worker has it up (None: it is up)")
    ] = None
    #: the work the workers have before a new question: readings queued or under way, and their time left
    ahead_readings: Annotated[int, Field(description="readings queued or under way before a new question")] = 0
    ahead_s: Annotated[
        float | None, Field(description="about how long those take, read as the passes they are in (None: unknown)")
    ] = None
    #: chunks end between sentences (the extractive memory): `chunks` is then the least there are, a few more read
    whole_sentences: Annotated[
        bool, Field(description="chunks end between sentences, so a reading has a few more than `chunks`")
    ] = False

    def pass_seconds(self, questions: int) -> float | None:
        """Seconds for `questions` read together in one pass, the model up."""
        if self.per_question_s is None or self.shared_s is None:
            return None
        return round(questions * self.per_question_s + math.ceil(questions / self.shared_by) * self.shared_s, 1)


@dataclass(frozen=True)
class PageView:
    page: Annotated[int, Field(description="1-based number, as in a checkpoint's first_page/last_page")]
    start: Annotated[int, Field(description="character offset in the document's text where it starts")]
    label: Annotated[str, Field(description="printed page label (PDF) or the section's heading")]


@dataclass(frozen=True)
class DocumentView:
    id: int
    title: str
    filename: str | None
    format: str
    status: str
    error: str | None
    size_bytes: int
    pages: Annotated[int, Field(description="number of pages (PDF) or sections (other formats)")]
    page_unit: Annotated[str, Field(description="`page` for PDF, `section` (a heading and what follows) otherwise")]
    char_count: int
    token_count: int | None
    created_at: datetime
    estimate: EstimateView | None = None
    page_map: Annotated[list[PageView] | None, Field(description="on single-document responses only")] = None


@dataclass(frozen=True)
class StepView:
    """One step of a reading's timeline, for moving through it: the chunk the agent read (its text),
    the memory it wrote, and the memory before it (step k-1; None at step 1)."""

    reading_id: int
    steps: Annotated[int, Field(description="steps in the reading's timeline (a branch's shared steps included)")]
    checkpoint: CheckpointView
    previous_memory: Annotated[str | None, Field(description="the memory at the step before; None at step 1")]
    #: `page` or `section`, and each page's label (PDF) or section's heading: where the chunk came from
    page_unit: Annotated[str, NOT_SERVED]
    page_labels: Annotated[list[str], NOT_SERVED]
    #: a branch: the reading it was made from, and the step whose memory was edited
    parent_reading_id: Annotated[int | None, NOT_SERVED]
    branched_at_step: Annotated[int | None, NOT_SERVED]


#: words, runs of whitespace, and each punctuation mark on its own ("logged," is "logged" and ",")
_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def word_diff(old: str | None, new: str) -> list[tuple[str, str | None]]:
    """`new` against `old`, word by word: (text, None) kept, (text, "+") added, (text, "-") dropped,
    in reading order (a dropped run comes before what replaced it). Whitespace stays with the text."""
    a, b = _WORDS.findall(old or ""), _WORDS.findall(new)
    out: list[tuple[str, str | None]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("".join(b[j1:j2]), None))
            continue
        if op in ("delete", "replace"):
            out.append(("".join(a[i1:i2]), "-"))
        if op in ("insert", "replace"):
            out.append(("".join(b[j1:j2]), "+"))
    return [(text, kind) for text, kind in out if text]
