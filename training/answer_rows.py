"""SFT rows for the answer step of a reader that keeps sentences (`memory_policy = "extractive"`, issue 51): nothing is
written per chunk, so the answer from the final memory is all there is to teach. One conversation a task: the final
memory the capture keeps over the task's document (`MemoryAgent.extract` chunk by chunk, as a reading keeps it) and
the oracle's answer, only where that memory supports it (`supported`): an answer taught from a memory that lacks it
teaches the answer step to make one up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inference.agent import MemoryAgent, holds_nothing
from training.policy import Row, prompt_ids, target_ids
from training.tasks import ABSENT, Task, oracle_answer


def extractive_answer_rows(agent: MemoryAgent, tokenizer: Any, tasks: Sequence[Task], gate: bool) -> list[Row]:
    """A task whose memory keeps nothing is answered without the model (`MemoryAgent.answer`): no row for it; with
    `gate`, none either for one whose memory does not support its answer."""
    rows = []
    for task in tasks:
        memory = final_memory(agent, task)
        if not teaches(task, memory, gate):
            continue
        (final,) = agent.final_messages([(task.question, memory)])
        rows.append(Row(prompt_ids(tokenizer, final), target_ids(tokenizer, oracle_answer(task))))
    return rows


def final_memory(agent: MemoryAgent, task: Task) -> str | None:
    """The memory the capture keeps over the task's document, chunk by chunk, as a reading keeps it."""
    memory = None
    for chunk in agent.chunks(task.document):
        (kept,) = agent.extract([(task.question, memory, chunk.text(task.document))], [task.document])
        memory = kept.text
    return memory


def teaches(task: Task, memory: str | None, gate: bool) -> bool:
    """Whether `memory` gives the task a row: it keeps something and, with `gate`, supports the answer."""
    return memory is not None and not holds_nothing(memory) and (not gate or supported(task, memory))


def supported(task: Task, memory: str) -> bool:
    """Whether `memory` holds what a value's answer rests on (a date, a name, a planted fact): an answer taught from a
    memory that lacks it teaches making one up. A clause question is always taught, Yes or No: gating a Yes on its
    clause's text let few through, and the answer step learned to say No to every clause (round 2 of
    docs/experiments/2026-12-06-extractive-answers.md); so is a question with nothing to find (kind ABSENT).

    >>> code = Task("t", "", "Code?", ("4417",))
    >>> supported(code, "The code is 4417."), supported(code, "No code.")
    (True, False)
    """
    if task.kind == ABSENT or task.kind.startswith("clause:"):
        return True
    text = " ".join(memory.lower().split())
    return any(" ".join(a.lower().split()) in text for a in task.answers if a.strip())
