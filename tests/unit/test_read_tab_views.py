"""What the Read tab shows for a finished branch, a multi-question pass and a deletion's confirmation."""

from __future__ import annotations

import doctest
import html
from datetime import datetime

from app.documents import base
from app.services.document_deletion import DeletionView
from app.services.health import Health
from app.services.views import CheckpointView, ProgressView, ReadingView
from app.ui.document_actions import confirm_text
from app.ui.pass_view import pass_cards_html
from app.ui.read_views import (
    describe_health,
    describe_progress,
    first_step_text,
    history_rows,
    page_parts,
    review_of_row,
)


def test_a_finished_branch_counts_the_chunks_it_read_not_the_whole_document() -> None:
    branch = ProgressView(step=13, total=13, elapsed_s=9.0, eta_s=None, reading_s=6.0, read_from=7)
    assert describe_progress("done", branch, None).startswith(
        "Done: read 6 chunks (8–13 of 13, after the edited step 7) in 6 s"
    )
    whole = ProgressView(step=13, total=13, elapsed_s=9.0, eta_s=None, reading_s=6.0)
    assert describe_progress("done", whole, None).startswith("Done: read 13 chunks in 6 s")
    at_end = ProgressView(step=13, total=13, elapsed_s=2.0, eta_s=None, reading_s=1.0, read_from=13)
    assert describe_progress("done", at_end, None).startswith("Done: answered from the edited memory")


def _reading(
    i: int,
    question: str,
    answer: str | None,
    memory: str | None,
    status: str = "done",
    review_id: int | None = None,
    cursor: int = 3,
) -> ReadingView:
    steps = (
        [
            CheckpointView(
                step=3,
                memory=memory,
                start_char=0,
                end_char=9,
                first_page=1,
                last_page=1,
                origin="agent",
                edited_by=None,
                prompt_tokens=1,
                completion_tokens=1,
                seconds=0.1,
                created_at=datetime(2026, 1, 1),
            )
        ]
        if memory is not None
        else []
    )
    return ReadingView(
        id=i,
        document_id=1,
        question=question,
        status=status,
        answer=answer,
        final_output=None,
        error=None,
        model="m",
        chunk_tokens=64,
        memory_tokens=32,
        template_set="memagent",
        memory_policy="generative",
        cursor=cursor,
        total_chunks=3,
        created_at=None,
        parent_reading_id=None,
        branched_at_step=None,
        review_id=review_id,
        progress=ProgressView(cursor, 3, None, None),
        checkpoints=steps,
    )


def test_a_pass_shows_every_answer_beside_its_memory_and_escapes_them() -> None:
    evil = '<img src=x onerror="alert(1)">'
    out = pass_cards_html(
        [
            _reading(4, "Who signs?", "Acme " + evil, "Acme signs on page 2"),
            _reading(5, f"Law {evil}?", None, None, status="running"),
        ]
    )
    assert out.count('class="lr-pass-card"') == 2 and "One pass, 2 questions" in out
    assert "<img" not in out and html.escape("Acme " + evil) in out
    assert out.index("Acme signs on page 2") < out.index('data-reading="5"')  # each memory in its own card
    assert "Memory (after chunk 3)" in out and "Memory (none yet)" in out and "writing the answer" in out


def test_a_review_is_one_line_of_the_readings_table_among_a_persons_readings() -> None:
    """A review's 41 readings are one line, in the order it was asked, that opens its checklist (issue 54)."""
    views = [_reading(60, "Mine, later?", "yes", "m")]
    views += [
        _reading(i, f"Clause {i}?", "No." if i < 20 else None, None, "done" if i < 20 else "running", 4, 1)
        for i in range(59, 18, -1)
    ]
    views += [_reading(3, "Mine, first?", "no", "m")]
    rows = history_rows(views)
    assert [row[0] for row in rows] == [60, "review #4", 3]
    assert rows[1][2:4] == ["reading 2 of 3", "1 of 41 answered"], rows[1]
    assert "checklist" in rows[1][1]
    assert review_of_row(rows[1]) == 4 and review_of_row(rows[0]) is None and review_of_row(None) is None
    finished = history_rows([_reading(i, "Clause?", "No.", None, review_id=4) for i in (5, 4)])
    assert finished == [["review #4", finished[0][1], "done", "2 of 2 answered", "", ""]]


def test_the_delete_confirmation_names_the_document_and_its_readings() -> None:
    text = confirm_text(DeletionView(7, "Lease *bold*", "ready", readings=3, checkpoints=12, feedback=1))
    assert text.startswith(
        "**Delete #7 Lease \\*bold\\*?** 3 readings (12 checkpoints, 1 feedback) go with it, and so do its file"
    )
    assert "1 reading (1 checkpoint, 0 feedback) goes with it" in confirm_text(DeletionView(8, "x", "ready", 1, 1, 0))
    assert "It has no readings; with it go its file" in confirm_text(DeletionView(8, "x", "failed", 0, 0, 0))


def test_the_status_line_names_the_model_version() -> None:
    h = Health(1, "ready", "vllm-local", None, None)
    assert describe_health(h, "reader-v2 (version #3)").endswith("· **Model version:** reader\\-v2 \\(version \\#3\\)")
    assert "Model version" not in describe_health(h)


def test_a_failed_upload_shows_only_dismiss_and_a_readable_document_the_rest() -> None:
    failed = page_parts("failed")
    assert failed.dismiss and not failed.delete and not failed.reading and not failed.asking
    for status in ("uploaded", "parsing", "ready"):
        parts = page_parts(status)
        assert parts.reading and parts.asking and parts.delete and not parts.dismiss and not parts.first_step, status


def test_an_empty_page_shows_what_to_do_first_and_nothing_that_needs_a_document() -> None:
    """No document chosen (none uploaded yet, or it is gone): the first step, and the question box (a question
    typed first is kept for the document; Ask says to choose one); no reading, readings or review (issue 54)."""
    nothing = page_parts(None)
    assert nothing.first_step and nothing.asking
    assert not nothing.reading and not nothing.delete and not nothing.dismiss
    text = first_step_text(50)
    assert text.startswith("**Start here:** upload a document") and "PDF, DOCX, EPUB" in text and "50 MiB" in text


def test_doctests() -> None:
    """The page map's examples: a PDF's pages by their printed labels (printed_pages)."""
    result = doctest.testmod(base)
    assert result.attempted > 0 and result.failed == 0
