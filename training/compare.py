"""Compare two evaluations of the same questions: `python -m training.compare BEFORE AFTER`.

BEFORE and AFTER are `longread eval` results (results.json, or the folder holding it). Cases are paired by
question id within each suite; per suite it prints both scores, the difference (after - before) with a 95%
paired bootstrap interval (the questions resampled together, so both readers are judged on the same draw),
how many questions each side got right that the other missed, and how often the two answers were the same.

Exit code 1 when any suite dropped by more than its interval, i.e. the whole interval lies below zero (the
rule for shipping a new reader, issue 38); 0 otherwise. Questions in only one of the files are counted, not
compared.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from inference.contract_review import normalize


def load(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    return json.loads((path / "results.json" if path.is_dir() else path).read_text(encoding="utf-8"))


def bootstrap_interval(
    before: Sequence[float], after: Sequence[float], resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of mean(after - before) over paired resamples of the questions.

    >>> bootstrap_interval([0, 1, 0, 1], [0, 1, 0, 1])
    (0.0, 0.0)
    """
    diff = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.concatenate(
        [
            diff[rng.integers(0, len(diff), (min(1000, resamples - i), len(diff)))].mean(axis=1)
            for i in range(0, resamples, 1000)
        ]
    )
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def compare(
    before: dict[str, Any], after: dict[str, Any], metric: str = "sub_em", resamples: int = 10_000
) -> dict[str, dict[str, Any]]:
    """Per suite (in AFTER's order): n paired, both scores, the difference and its interval, gained and lost,
    same answers, whether it dropped, and the questions only one side has."""

    def by_suite(results: dict[str, Any]) -> dict[str, dict[str, dict]]:
        out: dict[str, dict[str, dict]] = {}
        for c in results["cases"]:
            out.setdefault(c["suite"], {})[c["task_id"]] = c
        return out

    old, new = by_suite(before), by_suite(after)
    rows: dict[str, dict[str, Any]] = {}
    for suite in [*new, *(s for s in old if s not in new)]:
        a, b = old.get(suite, {}), new.get(suite, {})
        ids = [i for i in b if i in a]
        x = [float(a[i][metric]) for i in ids]
        y = [float(b[i][metric]) for i in ids]
        row: dict[str, Any] = {"n": len(ids), "only_before": len(a) - len(ids), "only_after": len(b) - len(ids)}
        if ids:
            lo, hi = bootstrap_interval(x, y, resamples)
            row.update(
                before=sum(x) / len(x),
                after=sum(y) / len(y),
                difference=(sum(y) - sum(x)) / len(ids),
                interval=[lo, hi],
                gained=sum(q > p for p, q in zip(x, y)),
                lost=sum(q < p for p, q in zip(x, y)),
                same_answer=sum(normalize(a[i]["answer"]) == normalize(b[i]["answer"]) for i in ids) / len(ids),
                dropped=hi < 0,
            )
        rows[suite] = row
    return rows


def table(rows: dict[str, dict[str, Any]], metric: str) -> str:
    header = (
        f"| suite | n | before {metric} | after {metric} | difference (95% bootstrap) | gained | lost | "
        "same answer | verdict |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for suite, r in rows.items():
        if not r["n"]:
            lines.append(
                f"| {suite} | 0 | – | – | – | – | – | – | not comparable ({r['only_before']} questions only "
                f"before, {r['only_after']} only after) |"
            )
            continue
        lo, hi = r["interval"]
        verdict = "DROPPED" if r["dropped"] else "ok"
        lines.append(
            f"| {suite} | {r['n']} | {r['before']:.1%} | {r['after']:.1%} | {r['difference']:+.1%} "
            f"({lo:+.1%} to {hi:+.1%}) | {r['gained']} | {r['lost']} | {r['same_answer']:.1%} | "
            f"{verdict} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("before", help="results.json of the reader before (or its folder)")
    p.add_argument("after", help="results.json of the reader after (or its folder)")
    p.add_argument("--metric", default="sub_em", choices=["sub_em", "exact_match"])
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = p.parse_args(argv)
    rows = compare(load(args.before), load(args.after), args.metric, args.resamples)
    print(json.dumps(rows) if args.json else table(rows, args.metric), end="\n" if args.json else "")
    dropped = [s for s, r in rows.items() if r.get("dropped")]
    if dropped:
        print(f"dropped by more than its 95% interval: {', '.join(dropped)}", file=sys.stderr)
    return 1 if dropped else 0


if __name__ == "__main__":
    sys.exit(main())
