"""A person's correction stays in the memory until the answer.

When a person edits the memory at some step, they read on from their correction (a branch,
app/services/readings.py). The reader rewrites its memory after every chunk, and it could drop what they wrote:
the shipped reader dropped 8 of 42 corrections written at the middle step of a dev contract, all eight dates
(`benchmarks/edits_kept.py`). So the lines a person added or changed in their latest edit, and those they kept
of an earlier edit, are their correction. After each later chunk, whichever of those lines the reader's new
memory no longer holds is put back at its start. A person who only deleted something pins nothing.
"""

from __future__ import annotations

import re

from app.models import Reading
from inference.agent import holds_nothing


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def correction(reading: Reading) -> str | None:
    """The lines the reader must keep from here on, one per line; None when there are none."""
    return "\n".join(_pinned(reading, None)) or None


def _pinned(reading: Reading, upto_step: int | None) -> list[str]:
    """The lines a person wrote in the latest edit of the reading's timeline (at or before `upto_step`): those
    the memory it replaced did not hold, and those it held because a person had written them there before."""
    edits = [c for c in reading.timeline() if c.origin == "edited" and (upto_step is None or c.step <= upto_step)]
    if not edits:
        return []
    edit = edits[-1]
    branch: Reading | None = reading
    while branch is not None and branch.id != edit.reading_id:  # the branch the edit made: this one or an ancestor
        branch = branch.parent
    parent = branch.parent if branch is not None else None
    steps = parent.timeline() if parent is not None else []
    replaced = steps[edit.step - 1].memory if len(steps) >= edit.step else ""
    earlier = {_key(line) for line in _pinned(parent, edit.step)} if parent is not None else set()
    before = {_key(line) for line in replaced.splitlines()} - earlier
    lines = (line.strip() for line in edit.memory.splitlines())
    return [line for line in lines if line and _key(line) not in before and not holds_nothing(line)]


def keep(memory: str, pinned: str | None) -> str:
    """The reader's new memory with the pinned lines it dropped put back at its start; an empty memory ("No
    relevant information yet.") is replaced by them.

    >>> keep("The term is two years.", "Governing Law: Ohio.")
    'Governing Law: Ohio.\\nThe term is two years.'
    >>> keep("Governed by the laws of  OHIO, Governing Law: Ohio.", "Governing Law: Ohio.")
    'Governed by the laws of  OHIO, Governing Law: Ohio.'
    >>> keep("No relevant information yet.", "Date: 6/29/06."), keep("Anything.", None), keep("+12", "+1")
    ('Date: 6/29/06.', 'Anything.', '+1\\n+12')
    """
    if not pinned:
        return memory
    held = _key(memory)
    dropped = [line for line in pinned.splitlines() if not re.search(rf"(?<!\w){re.escape(_key(line))}(?!\w)", held)]
    if not dropped:
        return memory
    return "\n".join(dropped if holds_nothing(memory) else [*dropped, memory])
