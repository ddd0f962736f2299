"""Does a reader tell a clause from its absence? Teacher-forced, one chunk, on the dev clauses suite's contracts.

For each Yes clause of the dev contracts (`training.suites.CLAUSES_DEV`), a chunk-sized window that holds it and
its twin, the same window with every passage marked for its category cut out (`training.evidence_tasks`). With
the empty memory before it, the probe scores p(keep) = p("No relevant information yet." | update prompt) on
both. A reader that tells them apart keeps the empty memory with more probability on the twin than on its clause,
pair by pair (half the pairs: no difference). A greedy reader writes when p(keep) < 0.5.

    .venv/bin/python -m benchmarks.clause_twins [--adapter DIR] [--n 40]

About 2 minutes a reader on 2 cores; a cheap check before a 20-minute dev evaluation.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch

from inference.agent import AgentConfig
from inference.models import BUNDLED, READER_ADAPTER, model_folder
from inference.templates import NO_EVIDENCE_MEMORY, get_template_set
from training.config import TrainConfig
from training.evidence_tasks import CONTRACT_CLAUSE, EvidenceTasks, cut_out
from training.policy import Row, completion_log_probs, load_policy, prompt_ids, target_ids
from training.tasks import CLAUSES_DEV, CONTRACTS_TRAIN_DIR, contract_cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", type=Path, default=READER_ADAPTER, help="a peft LoRA folder (default: the reader)")
    parser.add_argument("--n", type=int, default=40, help="clause and twin pairs")
    args = parser.parse_args()
    c = TrainConfig()
    model, tokenizer = load_policy(model_folder(BUNDLED), c.lora_r, c.lora_alpha, 0.0, c.lora_targets, args.adapter, 0)
    model.eval()
    reading = AgentConfig.of(c)
    others = {case["id"] for case in contract_cases(CONTRACTS_TRAIN_DIR)} - set(CLAUSES_DEV)
    source = EvidenceTasks(
        tokenizer,
        reading.chunk_tokens,
        reading.memory_tokens,
        c.answer_tokens,
        exclude_contracts=others,
        groups=[CONTRACT_CLAUSE],
    )
    rng = random.Random(0)
    yes = source.clauses(yes=True)
    templates, keep = get_template_set(reading.template_set), target_ids(tokenizer, NO_EVIDENCE_MEMORY)
    pairs = []
    for q in rng.sample(yes, min(args.n, len(yes))):
        span = source.window_span(q, rng, reading.chunk_tokens)  # one chunk that holds the clause
        if span is None:
            continue
        text = source.texts[q.source]
        chunks = (text[slice(*span)], cut_out(text, *span, q.marked))
        rows = [
            Row(prompt_ids(tokenizer, templates.render_update(q.question, NO_EVIDENCE_MEMORY, ch)), keep)
            for ch in chunks
        ]
        with torch.no_grad():
            p_clause, p_twin = (
                float(lp.sum().exp()) for lp in completion_log_probs(model, rows, tokenizer.eos_token_id)
            )
        pairs.append((p_clause, p_twin))
    n = len(pairs)
    twin_more = sum(t > p for p, t in pairs)
    writes = sum(p < 0.5 for p, _ in pairs), sum(t < 0.5 for _, t in pairs)
    print(
        f"{args.adapter}: {n} pairs; mean p(keep) clause {sum(p for p, _ in pairs) / n:.3f}, "
        f"twin {sum(t for _, t in pairs) / n:.3f}; twin kept more than its clause in {twin_more}/{n}; "
        f"writes (p(keep) < 0.5) clause {writes[0]}/{n}, twin {writes[1]}/{n}"
    )


if __name__ == "__main__":
    main()
