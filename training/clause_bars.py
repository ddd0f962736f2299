"""Each clause question's keep bar, calibrated on the training contracts (issue 51).

The extractive memory keeps a sentence for a yes/no question when its relevance log-odds reach a bar; below it the
memory stays empty and the answer is "No". One bar for all 33 clause questions kept something for 68% of the dev
contracts without a right of first refusal and for none without a most-favoured-nation clause: the scorer's
log-odds are not calibrated alike across questions (its training sees 30 sentences a question, a reading all of
a contract's). So each question gets its own bar: the score its best sentence reaches in no more than `--rate` of
the training contracts that lack the clause, read out of fold (the scorer trained on the other half of the
contracts, as `training.relevance_train` trains it, then every sentence of this half scored, as a reading scores
them).

    .venv/bin/python -m training.clause_bars --out runs/relevance/bars [--rate 0.15]
    .venv/bin/python -m benchmarks.capture_probe --policy relevance --keep -2 --open-keep -4 --margin 1 \\
        --budgets 256 --clause-bars runs/relevance/bars/clause_bars.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from inference.capture import document_spans
from training.relevance_train import train


def out_of_fold_best(out: Path, folds: int, **recipe) -> list[dict]:
    """Every clause question of every training contract: its gold and the best score of the contract's sentences,
    by a scorer that did not train on that contract."""
    from training.tasks import CONTRACTS_TRAIN_DIR, NOT_FOR_TRAINING, contract_cases

    cases = [c for c in contract_cases(CONTRACTS_TRAIN_DIR) if c["id"] not in NOT_FOR_TRAINING]
    rows = []
    for k in range(folds):
        held = cases[k::folds]
        scorer = train(out / f"fold{k}", only={c["id"] for c in cases} - {c["id"] for c in held}, **recipe)
        for case in held:
            text = (CONTRACTS_TRAIN_DIR / case["txt"]).read_text(encoding="utf-8")
            sentences = [text[a:b] for a, b in document_spans(text)]
            clauses = [x for x in case["qa"] if x.get("kind") == "yes-no"]
            scores = scorer.score(sentences, [x["question"] for x in clauses], text)
            rows += [
                {"question": x["question"], "yes": x["answer"] == "Yes", "best": max(s, default=-np.inf)}
                for x, s in zip(clauses, scores)
            ]
    return rows


def bars(rows: list[dict], rate: float) -> dict[str, float]:
    """Each question's bar: its best scores over the contracts without the clause, at the 1 - `rate` quantile.

    >>> rows = [{"question": "q", "yes": False, "best": float(b)} for b in range(10)]
    >>> bars(rows + [{"question": "q", "yes": True, "best": 20.0}], 0.2)
    {'q': 7.2}
    """
    questions = sorted({r["question"] for r in rows})
    return {
        q: round(float(np.quantile([r["best"] for r in rows if r["question"] == q and not r["yes"]], 1 - rate)), 3)
        for q in questions
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rate", type=float, default=0.15, help="of the contracts without a clause, those that keep one")
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--rows", type=Path, help="re-use the out-of-fold scores a run saved (no training)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if args.rows:
        rows = json.loads(args.rows.read_text())
    else:
        rows = out_of_fold_best(args.out, args.folds, epochs=3, lr=0.1, l2=1e-4, hard=10, easy=20, seed=0, planted=120)
        (args.out / "rows.json").write_text(json.dumps(rows))
    found = bars(rows, args.rate)
    (args.out / "clause_bars.json").write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    for q, bar in sorted(found.items(), key=lambda kv: kv[1]):
        yes = [r["best"] >= bar for r in rows if r["question"] == q and r["yes"]]
        print(f"{bar:7.2f}  Yes kept {sum(yes):3d}/{len(yes):3d}  {q[:80]}")
    print(f"wrote {args.out / 'clause_bars.json'} ({len(found)} questions) in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
