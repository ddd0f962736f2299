"""What training/trainer.py writes into a run's folder and reads back (app/services/training_runs/folder.py reads
it for the app): a JSON line per step in metrics.jsonl and samples.jsonl, and the progress line it logs; the
checkpoint (adapter or weights, optimizer, step) and the final adapter, each written whole or not at all; and
going back to the last checkpoint to resume, which drops the lines of the steps after it (to be redone)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch

CHECKPOINT = "checkpoint"
FINAL_ADAPTER = "adapter"


def append_record(run_dir: Path, name: str, record: dict[str, Any]) -> None:
    with open(run_dir / name, "a") as f:
        f.write(json.dumps(record) + "\n")


def progress_line(m: dict[str, Any], total: int) -> str:
    """A step's metrics `m` as the line the trainer logs."""
    eta = m.get("eta_s", 0)
    head = f"step {m['step']}/{total} {m['phase']}"
    if m["phase"] == "sft":
        body = f"loss {m['loss']:.3f} · {m['conversations']} conversations"
        if "reward" in m:  # sft_corrections: how the policy's own greedy readings scored
            body = f"reward {m['reward']:.3f} · accuracy {m['accuracy']:.3f} · " + body
    else:
        body = (
            f"reward {m['reward']:.3f} · accuracy {m['accuracy']:.3f} · loss {m['loss']:+.4f} · "
            f"KL {m['kl']:.5f} · clip {m['clip_fraction']:.3f} · filtered {m['groups_filtered']}/{m['groups']}"
        )
    return (
        f"{head} · {body} · {m['tokens_per_s']:.0f} tok/s · {m['seconds']:.0f} s · "
        f"ETA {int(eta) // 3600}h{int(eta) % 3600 // 60:02d}m"
    )


def save_adapter(model: Any, tokenizer: Any, folder: Path) -> None:
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    _replace(tmp, folder)


def save_checkpoint(run_dir: Path, model: Any, optimizer: torch.optim.Optimizer, step: int) -> None:
    """Adapter (or weights), optimizer and step, written whole or not at all; then the curve so far."""
    tmp = run_dir / (CHECKPOINT + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp / "model")
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps({"step": step}))
    _replace(tmp, run_dir / CHECKPOINT)
    from training.plots import plot_metrics

    plot_metrics(run_dir / "metrics.jsonl", run_dir / "curve.png")


def load_checkpoint(run_dir: Path, model: Any, optimizer: torch.optim.Optimizer, device: torch.device) -> int:
    """Put the run folder's last checkpoint into `model` and `optimizer` and return its step; the step logs'
    lines (metrics, samples) past it are dropped, to be redone."""
    folder = run_dir / CHECKPOINT
    if not folder.exists() and folder.with_name(CHECKPOINT + ".old").exists():  # stopped mid-replace
        folder = folder.with_name(CHECKPOINT + ".old")
    if not (folder / "state.json").is_file():
        raise FileNotFoundError(f"{run_dir} has no checkpoint to resume from")
    step = json.loads((folder / "state.json").read_text())["step"]
    load_weights(model, folder / "model")
    optimizer.load_state_dict(torch.load(folder / "optimizer.pt", map_location=device))
    for name in ("metrics.jsonl", "samples.jsonl"):
        path = run_dir / name
        if path.exists():
            kept = [line for line in path.read_text().splitlines() if json.loads(line)["step"] <= step]
            path.write_text("".join(line + "\n" for line in kept))
    return step


def load_weights(model: Any, folder: Path) -> None:
    """Put saved adapters (or full weights) into `model` in place."""
    if hasattr(model, "peft_config"):
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        set_peft_model_state_dict(model, load_file(folder / "adapter_model.safetensors"))
    else:
        from safetensors.torch import load_file

        model.load_state_dict(load_file(folder / "model.safetensors"), strict=False)


def _replace(tmp: Path, target: Path) -> None:
    old = target.with_name(target.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)
