"""SFT rows for the answer step of a reader that keeps sentences (`memory_policy = "extractive"`, issue 51): nothing is
written per chunk, so the answer from the final memory is all there is to teach. One conversation a task: the final
memory the capture keeps over the task's document (`MemoryAgent.extract` chunk by chunk, as a reading keeps it) and
the oracle's answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inference.agent import MemoryAgent, holds_nothing
from training.policy import Row, prompt_ids, target_ids
from training.tasks import Task, oracle_answer


def extractive_answer_rows(agent: MemoryAgent, tokenizer: Any, tasks: Sequence[Task]) -> list[Row]:
    """A task whose memory keeps nothing is answered without the model (`MemoryAgent.answer`): no row for it."""
    rows = []
    for task in tasks:
        memory = None
        for chunk in agent.chunks(task.document):
            (kept,) = agent.extract([(task.question, memory, chunk.text(task.document))])
            memory = kept.text
        if memory is None or holds_nothing(memory):
            continue
        (final,) = agent.final_messages([(task.question, memory)])
        rows.append(Row(prompt_ids(tokenizer, final), target_ids(tokenizer, oracle_answer(task))))
    return rows
