"""Held-out scores of several models side by side: `longread eval` result folders pooled per length or
contract category (seeds added up), printed as a Markdown table and drawn as grouped bars.

    python -m benchmarks.heldout --model "untrained=runs/eval/*-base1024-*" \\
        --model "reader=runs/eval/*-sft1024-*" --out runs/heldout-1024.png
"""

from __future__ import annotations

import argparse
import glob
import json
import math
from pathlib import Path

from benchmarks.run import table as markdown
from training.evaluate import parse_lengths


def pooled(folders: list[Path]) -> dict[str, tuple[int, int]]:
    """group -> (questions answered right by sub-EM, questions), over every folder's cases."""
    out: dict[str, tuple[int, int]] = {}
    for folder in folders:
        for case in json.loads((folder / "results.json").read_text())["cases"]:
            right, n = out.get(case["group"], (0, 0))
            out[case["group"]] = (right + bool(case["sub_em"]), n + 1)
    return out


def _order(group: str) -> tuple[int, float, str]:
    """Lengths first, shortest first (whole books last of them), then contract categories by name."""
    try:
        (tokens,) = parse_lengths(group)
    except ValueError:  # a contract category
        return (1, 0, group)
    return (0, math.inf if tokens is None else tokens, group)


def _groups(models: dict[str, dict[str, tuple[int, int]]]) -> list[str]:
    return sorted({g for scores in models.values() for g in scores}, key=_order)


def table(models: dict[str, dict[str, tuple[int, int]]]) -> str:
    groups = _groups(models)
    return markdown(
        ["model", *groups],
        [
            [
                name,
                *(
                    f"{100 * scores[g][0] / scores[g][1]:.1f}% ({scores[g][0]}/{scores[g][1]})" if g in scores else "–"
                    for g in groups
                ),
            ]
            for name, scores in models.items()
        ],
    )


def plot(models: dict[str, dict[str, tuple[int, int]]], png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(models)
    width = 0.8 / len(models)
    fig, ax = plt.subplots(figsize=(1.6 * len(groups) + 4, 3.6))
    for i, (name, scores) in enumerate(models.items()):
        xs = [j + (i - (len(models) - 1) / 2) * width for j in range(len(groups))]
        ys = [100 * scores[g][0] / scores[g][1] if g in scores else 0 for g in groups]
        bars = ax.bar(xs, ys, width, label=name)
        ax.bar_label(bars, [f"{y:.0f}" if g in scores else "" for g, y in zip(groups, ys)], fontsize=8)
    ns = [sorted({s[g][1] for s in models.values() if g in s}) for g in groups]
    ax.set_xticks(
        range(len(groups)), [f"{g}\n(n={n[0]}{f'–{n[-1]}' if len(n) > 1 else ''})" for g, n in zip(groups, ns)]
    )
    ax.set_ylabel("sub-EM, %")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the bars, never over them
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="NAME=GLOB",
        help="a model's name and a glob of its `longread eval` folders (repeat per model)",
    )
    parser.add_argument("--title", default="Held out: sub-EM by length and contract category")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args(argv)
    models = {}
    for spec in args.model:
        name, sep, pattern = spec.partition("=")
        folders = sorted(Path(p) for p in glob.glob(pattern) if (Path(p) / "results.json").is_file())
        if not sep or not folders:
            raise SystemExit(f"--model {spec!r}: give NAME=GLOB matching folders with a results.json")
        models[name] = pooled(folders)
    print(table(models))
    plot(models, args.out, args.title)
    print(f"\nplot: {args.out}")


if __name__ == "__main__":
    main()
