"""Readings and checkpoints as the CLI's `--json` prints them (`ask`, `readings`, `checkpoints`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.services.views import CheckpointView, ReadingView


def checkpoint_json(c: CheckpointView) -> dict:
    out = {
        "step": c.step,
        "memory": c.memory,
        "start_char": c.start_char,
        "end_char": c.end_char,
        "origin": c.origin,
        "first_page": c.first_page,
        "last_page": c.last_page,
    }
    if c.chunk is not None:
        out["chunk"] = c.chunk
    return out


def reading_json(r: ReadingView, with_checkpoints: bool = True) -> dict:
    """A reading as `ask --json`, `readings --json` and `checkpoints --json` print it."""
    out = {
        "id": r.id,
        "document_id": r.document_id,
        "question": r.question,
        "answer": r.answer,
        "status": r.status,
        "error": r.error,
        "model": r.model,
        "chunk_tokens": r.chunk_tokens,
        "memory_tokens": r.memory_tokens,
        "steps": len(r.checkpoints),
        "total_chunks": r.total_chunks,
        "parent_reading_id": r.parent_reading_id,
        "branched_at_step": r.branched_at_step,
        "created_at": r.created_at.isoformat() if r.created_at else None,
    }
    if with_checkpoints:
        out["checkpoints"] = [checkpoint_json(c) for c in r.checkpoints]
    return out
