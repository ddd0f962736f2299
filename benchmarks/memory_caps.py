"""How often the reader's memory runs to its token cap on open questions: a looping phrase or a copied
passage. Held-out evaluation asks for planted facts and governing law, where the trained readers write
short memories; the throughput benchmark's open questions on a novel made one reader loop ("…, and very
eccentric, and very eccentric, …") to the cap at every chunk, and eight questions in lockstep wait for it.

Reads, with the app's settings (engine, model, chunk and memory sizes; `LONGREAD_MODEL` picks the model),
the throughput benchmark's 8 questions on the held-out novel's first 8,192 tokens and every expert
question of the first held-out contracts (all categories), each document's questions in one batch:

    .venv/bin/python -m benchmarks.memory_caps [--contracts 6] [--out FILE.json]

Prints, per document, the memory writes that reached the cap, the tokens generated per question, and the
contract questions answered right (sub-EM).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.services.llm import close_engines, engine_for
from app.settings import Settings
from benchmarks.adapter_probe import QUESTIONS
from benchmarks.run import book_prefix, table
from inference.agent import AgentConfig, MemoryAgent
from training.tasks import contract_tasks
from training.verifier import sub_em


def count(agent: MemoryAgent, name: str, questions: list[str], text: str, golds: list[tuple[str, ...]] | None) -> dict:
    trajectories = agent.read_batch([(q, text) for q in questions])
    writes = [c for t in trajectories for c in t.completions[:-1]]  # the memory rewrites, not the answers
    row = {
        "document": name,
        "questions": len(questions),
        "memory_writes": len(writes),
        "at_cap": sum(c.completion_tokens >= agent.config.memory_tokens for c in writes),
        "generated_per_question": sum(c.completion_tokens for t in trajectories for c in t.completions)
        / len(questions),
    }
    if golds is not None:
        row["right"] = sum(sub_em(t.answer.answer, g) for t, g in zip(trajectories, golds))
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--contracts", type=int, default=6, help="held-out contracts read (in cases.json order)")
    parser.add_argument("--out", type=Path, help="write the rows as JSON")
    args = parser.parse_args(argv)
    settings = Settings()
    engine = engine_for(settings)
    agent = MemoryAgent(engine, AgentConfig.of(settings))
    by_contract: dict[str, list] = {}
    for t in contract_tasks("held-out"):
        by_contract.setdefault(t.id.split(":")[0], []).append(t)
    try:
        rows = [count(agent, "Little Women, first 8,192 tokens", QUESTIONS, book_prefix(engine.tokenizer, 8192), None)]
        for cid, tasks in list(by_contract.items())[: args.contracts]:
            rows.append(count(agent, cid, [t.question for t in tasks], tasks[0].document, [t.answers for t in tasks]))
    finally:
        close_engines()
    print(f"{settings.model}, chunk {settings.chunk_tokens}, memory {settings.memory_tokens}\n")
    print(
        table(
            ["document", "questions", "memory writes", "at the cap", "tokens generated / question", "right"],
            [
                [
                    r["document"],
                    r["questions"],
                    r["memory_writes"],
                    r["at_cap"],
                    f"{r['generated_per_question']:.0f}",
                    r.get("right", "–"),
                ]
                for r in rows
            ],
        )
    )
    print(
        f"\nall: {sum(r['at_cap'] for r in rows)} of {sum(r['memory_writes'] for r in rows)} memory writes at the cap; "
        f"contracts: {sum(r.get('right', 0) for r in rows)} of {sum(r['questions'] for r in rows[1:])} right"
    )
    if args.out:
        args.out.write_text(json.dumps({"model": settings.model, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
