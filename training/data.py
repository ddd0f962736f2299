"""What a training step reads: tasks drawn from the config's sources, deterministically by step.

Synthetic tasks follow the length curriculum; contract, QA-file and feedback tasks are mixed in at
`mix_contracts`. Only training splits are used (held-out books and contracts never appear here).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from training.config import DataConfig
from training.tasks import Task, cases_tasks, contract_tasks, feedback_tasks, synthetic_tasks


def doc_tokens_at(curriculum: list[tuple[int, int]], step: int) -> int:
    """The synthetic document length for `step` (0-based).

    >>> doc_tokens_at([(1024, 10), (2048, 20)], 9), doc_tokens_at([(1024, 10), (2048, 20)], 10)
    (1024, 2048)
    >>> doc_tokens_at([(1024, 10), (2048, 20)], 500)
    2048
    """
    for tokens, until in curriculum:
        if step < until:
            return tokens
    return curriculum[-1][0]


class TaskSource:
    """`draw(step, n)`: the same n tasks for the same step, whoever asks and whenever (resumable)."""

    def __init__(self, data: DataConfig, tokenizer: Any, seed: int, documents: Callable[[Any], str] | None = None):
        """`documents` looks up a feedback line's document text by its id (the app's database)."""
        self.data, self.tokenizer, self.seed = data, tokenizer, seed
        self.pool: list[Task] = []  # the non-synthetic tasks, drawn uniformly
        if data.contracts:
            for t in contract_tasks("train", data.contract_categories or None, tokenizer=tokenizer):
                if t.doc_tokens <= data.contract_max_tokens and t.evidence:
                    self.pool.append(t)
        for path in data.qa_files:
            self.pool += cases_tasks(path)
        for path in data.feedback:
            self.pool += feedback_tasks(path, documents)

    def draw(self, step: int, n: int) -> list[Task]:
        rng = random.Random(f"{self.seed}:{step}")
        from_pool = sum(rng.random() < self.data.mix_contracts for _ in range(n)) if self.data.synthetic_kinds else n
        if not self.pool:
            from_pool = 0
        tasks = [rng.choice(self.pool) for _ in range(from_pool)]
        if n - from_pool:
            tasks += synthetic_tasks(self.tokenizer, "train", doc_tokens_at(self.data.curriculum, step),
                                     n - from_pool, seed=rng.randrange(2**31), kinds=self.data.synthetic_kinds)
        return tasks
