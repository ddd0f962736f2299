"""What a training step reads: tasks drawn from the config's sources, deterministically by step.

Synthetic tasks follow the length curriculum; contract and QA-file tasks are mixed in at `mix_contracts`,
feedback tasks at `mix_feedback`; real-evidence groups (training/evidence_tasks.py) take `mix_evidence` of the
samples when a config names them, their documents cut to the curriculum's length. Only training splits are used
(held-out books and contracts never appear here).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from inference.agent import AgentConfig
from training.config import DataConfig
from training.evidence_tasks import EvidenceTasks
from training.tasks import Task, cases_tasks, contract_tasks, feedback_tasks, governing_law_variant, synthetic_tasks

GOVERNING_LAW = "contract:Governing Law"


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

    def __init__(
        self,
        data: DataConfig,
        tokenizer: Any,
        seed: int,
        documents: Callable[[Any], str] | None = None,
        reading: AgentConfig | None = None,
    ):
        """`documents` looks up a feedback line's document text by its id (the app's database); `reading` is the
        trained chunk, memory and answer sizes, which real-evidence tasks are cut and filtered to."""
        self.data, self.tokenizer, self.seed = data, tokenizer, seed
        self.evidence: EvidenceTasks | None = None
        if data.evidence_groups:
            if reading is None:
                raise ValueError("evidence_groups need the reading sizes (chunk, memory and answer tokens)")
            self.evidence = EvidenceTasks(
                tokenizer,
                reading.chunk_tokens,
                reading.memory_tokens,
                reading.answer_tokens,
                groups=data.evidence_groups,
            )
        self.pool: list[Task] = []  # contract and QA-file tasks, drawn uniformly
        self.feedback: list[Task] = []  # readers' feedback, drawn uniformly at its own share
        if data.contracts:
            for t in contract_tasks("train", data.contract_categories or None, tokenizer=tokenizer):
                if t.doc_tokens <= data.contract_max_tokens and t.evidence:
                    self.pool.append(t)
        for path in data.qa_files:
            self.pool += cases_tasks(path)
        self.clauses = [t for t in self.pool if t.kind == GOVERNING_LAW]  # donors of governing-law variants
        for path in data.feedback:
            self.feedback += feedback_tasks(path, documents)

    def shares(self) -> tuple[float, float, float]:
        """(feedback, contracts and QA, synthetic): each sample's chance of coming from each source.
        A source with nothing in it gets no share; if only such sources had a share, the others split it."""
        d = self.data
        feedback, pool = d.mix_feedback if self.feedback else 0.0, d.mix_contracts if self.pool else 0.0
        weights = [feedback, pool, 1 - feedback - pool if d.synthetic_kinds else 0.0]
        if not any(weights):
            weights = [1.0 if self.feedback else 0.0, 1.0 if self.pool else 0.0, 1.0 if d.synthetic_kinds else 0.0]
        total = sum(weights)
        return (weights[0] / total, weights[1] / total, weights[2] / total)

    def draw(self, step: int, n: int) -> list[Task]:
        if self.evidence is None:
            return self._draw(step, n)
        rng = random.Random(f"{self.seed}:{step}:evidence")  # its own stream: the other sources draw as before
        # Each of the step's places (step * n + i) is an evidence sample at mix_evidence, of the group whose turn
        # that place is: every group as often, whatever the share (numbering only the evidence samples of a step
        # from step * n would favour the first groups of the turn).
        places = [step * n + i for i in range(n) if rng.random() < self.data.mix_evidence]
        tasks = self.evidence.draw_at(self.data.evidence_groups, places, rng, doc_tokens_at(self.data.curriculum, step))
        return tasks + (self._draw(step, n - len(places)) if len(places) < n else [])

    def _draw(self, step: int, n: int) -> list[Task]:
        """`n` tasks of the feedback, contract and QA, and synthetic sources, in their shares."""
        rng = random.Random(f"{self.seed}:{step}")
        sources = rng.choices(range(3), weights=self.shares(), k=n)
        tasks = [rng.choice(self.feedback) for s in sources if s == 0]
        tasks += [self._maybe_variant(rng.choice(self.pool), step, i) for i, s in enumerate(sources) if s == 1]
        if synthetic := sources.count(2):
            tasks += synthetic_tasks(
                self.tokenizer,
                "train",
                doc_tokens_at(self.data.curriculum, step),
                synthetic,
                seed=rng.randrange(2**31),
                kinds=self.data.synthetic_kinds,
                facts_per_doc=self.data.facts_per_doc,
            )
        return tasks

    def _maybe_variant(self, task: Task, step: int, i: int) -> Task:
        """`task`, or at `governing_law_variants` a governing-law variant of it (its own random stream, so that
        configs without variants draw as before)."""
        if task.kind != GOVERNING_LAW or not self.data.governing_law_variants:
            return task
        rng = random.Random(f"{self.seed}:{step}:{i}:variant")
        if rng.random() >= self.data.governing_law_variants:
            return task
        return governing_law_variant(task, rng.choice(self.clauses), rng) or task
