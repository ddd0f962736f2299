"""Training curves as one PNG: what a person checks first is whether the reward rises."""

from __future__ import annotations

import json
from pathlib import Path


def _smooth(values: list[float], window: int = 5) -> list[float]:
    out = []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1) : i + 1]
        out.append(sum(chunk) / len(chunk))
    return out


def plot_metrics(metrics_jsonl: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in Path(metrics_jsonl).read_text().splitlines() if line.strip()]
    if not rows:
        return
    sft = [r for r in rows if r["phase"] == "sft"]
    rl = [r for r in rows if r["phase"] == "rl"]
    read = [r for r in sft if "reward" in r]  # sft_corrections: the policy's greedy readings
    # a step whose groups were all filtered trained nothing: its loss and speed of 0 are not measurements
    trained = [r for r in rl if r.get("trained_tokens", 1)]
    panels = (
        ([("SFT loss", sft, ["loss"])] if sft else [])
        + ([("reward / accuracy of greedy readings (SFT)", read, ["reward", "accuracy"])] if read else [])
        + (
            [
                ("reward / accuracy (RL)", rl, ["reward", "accuracy"]),
                ("loss (RL)", trained, ["loss"]),
                ("KL, clip fraction", trained, ["kl", "clip_fraction"]),
                ("groups filtered (all rewards equal)", rl, ["groups_filtered"]),
                ("memory tokens (mean)", rl, ["memory_tokens_mean"]),
                ("trained tokens/s", trained, ["tokens_per_s"]),
            ]
            if rl
            else []
        )
    )
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.2 * len(panels)), sharex=True, squeeze=False)
    for ax, (title, data, keys) in zip(axes[:, 0], panels):
        for key in keys:
            xs = [r["step"] for r in data if key in r]
            ys = [r[key] for r in data if key in r]
            (line,) = ax.plot(xs, ys, alpha=0.35, linewidth=1)
            if len(ys) >= 5:
                ax.plot(xs, _smooth(ys), color=line.get_color(), linewidth=2, label=f"{key} (mean of 5)")
            else:
                line.set_label(key)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
