"""Train the extractive memory's pointer scorer (issue 51, item 1): LoRA on SmolLM2, the loss `pointer_loss` on
`training/capture_rows.py`'s rows, read from the same prefill `inference.capture_scorer.PointerScorer` scores with.

A step is `--rows` rows (chunks of training contracts, never `NOT_FOR_TRAINING`); each row is one prefill of its
chunk and, for a few of its questions, the question's suffix: every question with evidence in the chunk (at most
`--positives`) and `--negatives` drawn from those without (their label is 0, "none": what a "No" clause needs).
A share `--positive-rows` of the rows hold evidence for some question; the rest teach "none" only. The order of
rows is fixed by the seed, so `--resume` continues from the last checkpoint's step with the same rows to come.

Checkpoints: `<out>/step-<n>/` (the peft adapter, `state.pt` with the optimiser, `log.jsonl` beside them);
`<out>/latest` names the last. Each step's log line: loss, the loss of questions with evidence and of "none",
the evidence's best rank in its chunk (1 = the pointer's first choice), seconds.

    OMP_NUM_THREADS=2 nice -n 19 .venv/bin/python -m training.capture_train --out runs/pointer/r1 --steps 60
    ... --resume                                               # from runs/pointer/r1/latest
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.capture_rows import CaptureRow, best_rank, pointer_loss

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass(frozen=True)
class Item:
    """One training row as read: the chunk's sentences and the chosen questions with their labels."""

    source: str
    chunk: int
    sentences: tuple[str, ...]
    questions: tuple[str, ...]
    labels: tuple[tuple[int, ...], ...]


def pick_questions(row: CaptureRow, rng: random.Random, positives: int, negatives: int) -> list[int]:
    """The questions a row teaches: those with evidence in the chunk (at most `positives`, drawn) and `negatives`
    drawn from the rest (label "none").

    >>> row = CaptureRow("c", 0, ((0, 1), (1, 2)), ("a", "b", "c", "d"), ((0, 1), (0, 0), (1, 0), (0, 0)))
    >>> sorted(pick_questions(row, random.Random(0), 5, 1))  # both with evidence, one of the two without
    [0, 1, 2]
    """
    pos = [q for q, lab in enumerate(row.labels) if any(lab)]
    neg = [q for q, lab in enumerate(row.labels) if not any(lab)]
    return rng.sample(pos, min(positives, len(pos))) + rng.sample(neg, min(negatives, len(neg)))


def schedule(
    rows: Sequence[tuple[str, CaptureRow]],
    count: int,
    positive_share: float,
    seed: int,
    positives: int = 4,
    negatives: int = 2,
) -> list[Item]:
    """`count` items drawn with the seed: a share `positive_share` from rows with evidence for some question, the
    rest from rows with none; rows without sentences are skipped. The same arguments give the same list, and a
    longer `count` the same list longer, so a resumed run (even with more `--steps`) sees the rows it had not seen.

    >>> rows = [("ab", CaptureRow("c", 0, ((0, 1), (1, 2)), ("q",), ((0, 1),))),
    ...         ("ab", CaptureRow("c", 1, ((0, 2),), ("q",), ((0,),)))]
    >>> [(i.chunk, i.labels) for i in schedule(rows, 3, 0.5, 0)]
    [(1, ((0,),)), (0, ((0, 1),)), (1, ((0,),))]
    """
    rng = random.Random(seed)
    with_ev = [(t, r) for t, r in rows if r.spans and any(any(lab) for lab in r.labels)]
    without = [(t, r) for t, r in rows if r.spans and not any(any(lab) for lab in r.labels)]
    items = []
    for _ in range(count):
        pool = with_ev if (rng.random() < positive_share and with_ev) or not without else without
        text, row = rng.choice(pool)
        qs = pick_questions(row, rng, positives, negatives)
        items.append(
            Item(
                row.source,
                row.chunk,
                tuple(row.sentences(text)),
                tuple(row.questions[q] for q in qs),
                tuple(row.labels[q] for q in qs),
            )
        )
    return items


def evidence_rank(logp: Any, labels: Sequence[int]) -> int | None:
    """The best rank of an evidence sentence among the chunk's sentences by the pointer's log P (1 = first;
    ties to the earlier, as the memory breaks them); None when the chunk holds no evidence.

    >>> import torch
    >>> evidence_rank(torch.log(torch.tensor([0.1, 0.5, 0.2, 0.2])), [0, 1, 0]), evidence_rank(torch.zeros(3), [0, 0])
    (2, None)
    """
    return best_rank(logp[1:].tolist(), labels)


def item_loss(scorer: Any, item: Item) -> tuple[Any, list[dict]]:
    """The mean `pointer_loss` of an item's questions, and per question what it says (loss, evidence or none,
    the evidence's rank, P(none))."""
    logps = scorer.log_probs(list(item.sentences), list(item.questions))
    losses, stats = [], []
    for logp, labels in zip(logps, item.labels):
        loss = pointer_loss(logp, labels)
        losses.append(loss)
        logp = logp.detach()
        stats.append(
            {
                "loss": float(loss.detach()),
                "positive": any(labels),
                "rank": evidence_rank(logp, labels),
                "p_none": float(logp[0].exp()),
            }
        )
    return sum(losses) / len(losses), stats


def summary(stats: list[dict]) -> dict:
    """A step's log line from its questions' stats.

    >>> summary([{"loss": 1.0, "positive": True, "rank": 1, "p_none": 0.5},
    ...          {"loss": 3.0, "positive": False, "rank": None, "p_none": 0.1}])
    {'loss': 2.0, 'loss_pos': 1.0, 'loss_none': 3.0, 'top1': 1.0, 'top3': 1.0, 'p_none_on_none': 0.1, 'questions': 2}
    """

    def mean(xs: list[float]) -> float | None:
        return sum(xs) / len(xs) if xs else None

    ranks = [s["rank"] for s in stats if s["rank"] is not None]
    return {
        "loss": mean([s["loss"] for s in stats]),
        "loss_pos": mean([s["loss"] for s in stats if s["positive"]]),
        "loss_none": mean([s["loss"] for s in stats if not s["positive"]]),
        "top1": mean([float(r == 1) for r in ranks]),
        "top3": mean([float(r <= 3) for r in ranks]),
        "p_none_on_none": mean([s["p_none"] for s in stats if not s["positive"]]),
        "questions": len(stats),
    }


def save(out: Path, step: int, model: Any, optimizer: Any) -> Path:
    import torch

    path = out / f"step-{step:04d}"
    model.save_pretrained(path)
    torch.save({"step": step, "optimizer": optimizer.state_dict()}, path / "state.pt")
    (out / "latest").write_text(path.name)
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/pointer/r1"))
    ap.add_argument("--steps", type=int, default=60, help="optimiser steps to reach (a resumed run counts on)")
    ap.add_argument("--rows", type=int, default=1, help="rows (chunks) a step")
    ap.add_argument("--contracts", type=int, default=60, help="the first N training contracts")
    ap.add_argument("--chunk-tokens", type=int, default=512)
    ap.add_argument("--positive-rows", type=float, default=0.75, help="share of rows with evidence")
    ap.add_argument("--positives", type=int, default=4, help="most questions with evidence a row")
    ap.add_argument("--negatives", type=int, default=2, help="questions without evidence a row (label none)")
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--lora-alpha", type=int, default=32)
    ap.add_argument("--save-every", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resume", action="store_true", help="continue from <out>/latest")
    args = ap.parse_args(argv)

    import torch

    from inference.capture_scorer import PointerScorer
    from inference.models import model_folder
    from training.capture_rows import contract_rows
    from training.policy import load_policy

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    start, init, state = 0, None, None
    if args.resume and (args.out / "latest").is_file():
        init = args.out / (args.out / "latest").read_text().strip()
        state = torch.load(init / "state.pt")
        start = int(state["step"])
    model, tok = load_policy(model_folder("smollm2"), args.lora_r, args.lora_alpha, 0.0, TARGETS, init, args.seed)
    scorer = PointerScorer(model, tok)  # eval mode: no dropout (LoRA dropout 0), gradients still flow
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.0)
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
    t = time.time()
    rows = list(contract_rows(tok, chunk_tokens=args.chunk_tokens, limit=args.contracts))
    items = schedule(rows, args.steps * args.rows, args.positive_rows, args.seed, args.positives, args.negatives)
    print(f"{len(rows)} rows of {args.contracts} contracts in {time.time() - t:.0f} s; from step {start}", flush=True)
    (args.out / "config.json").write_text(json.dumps({k: str(v) for k, v in vars(args).items()}, indent=1))
    log = (args.out / "log.jsonl").open("a")
    for step in range(start, args.steps):
        t = time.time()
        optimizer.zero_grad()
        stats = []
        for item in items[step * args.rows : (step + 1) * args.rows]:
            loss, got = item_loss(scorer, item)
            (loss / args.rows).backward()
            stats += got
        optimizer.step()
        line = {"step": step + 1, **summary(stats), "seconds": round(time.time() - t, 1)}
        log.write(json.dumps(line) + "\n")
        log.flush()
        print(json.dumps(line), flush=True)
        if (step + 1) % args.save_every == 0 or step + 1 == args.steps:
            save(args.out, step + 1, model, optimizer)


if __name__ == "__main__":
    main()
