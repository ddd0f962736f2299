"""Weight-space interpolation of two LoRA adapters of one base (WiSE-FT, Wortsman et al. 2022).

A fine-tuning round that teaches one skill (governing law) can undo another that its starting adapter had
(reading 32K documents); an adapter on the line between the two may keep some of both. Both adapters must
share the base, rank and target modules: the result interpolates their A and B matrices, which, for two adapters
a few steps apart, is the interpolation of their weight updates up to a term in the product of the two steps.

    python -m training.interpolate START END --weight 0.5 --out DIR
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

WEIGHTS = "adapter_model.safetensors"
CONFIG = "adapter_config.json"

# what must agree for A and B matrices to mean the same thing in both adapters
SHAPE_FIELDS = ("peft_type", "r", "lora_alpha", "use_rslora", "rank_pattern", "alpha_pattern", "modules_to_save")


def _shape(adapter: Path) -> dict:
    config = json.loads((adapter / CONFIG).read_text())
    modules = config["target_modules"]  # a list, or one regular expression
    return {
        **{k: config.get(k) for k in SHAPE_FIELDS},
        "target_modules": sorted(modules) if isinstance(modules, list) else modules,
    }


def interpolate(start: dict[str, torch.Tensor], end: dict[str, torch.Tensor], weight: float) -> dict[str, torch.Tensor]:
    """(1 - weight) * start + weight * end, tensor by tensor.

    >>> interpolate({"a": torch.tensor([0.0, 2.0])}, {"a": torch.tensor([4.0, 2.0])}, 0.25)["a"].tolist()
    [1.0, 2.0]
    """
    if start.keys() != end.keys():
        raise ValueError(f"the adapters hold different tensors: {sorted(start.keys() ^ end.keys())[:4]}")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight {weight} is outside [0, 1]: 0 gives the start adapter, 1 the end one")
    out = {}
    for name, a in start.items():
        b = end[name]
        if a.shape != b.shape:
            raise ValueError(f"{name} is {tuple(a.shape)} in one adapter and {tuple(b.shape)} in the other")
        out[name] = torch.lerp(a.float(), b.float(), weight).to(a.dtype)
    return out


def interpolate_adapters(start: Path, end: Path, weight: float, out: Path) -> Path:
    """Write the adapter `weight` of the way from `start` to `end` into `out` (its config is start's)."""
    if _shape(start) != _shape(end):
        raise ValueError(f"{start} and {end} differ in their LoRA configs (rank, alpha or target modules)")
    tensors = interpolate(load_file(start / WEIGHTS), load_file(end / WEIGHTS), weight)
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, out / WEIGHTS, metadata={"format": "pt"})  # as peft writes it; transformers checks it
    shutil.copyfile(start / CONFIG, out / CONFIG)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("start", type=Path, help="adapter folder at weight 0")
    parser.add_argument("end", type=Path, help="adapter folder at weight 1")
    parser.add_argument("--weight", type=float, default=0.5, help="how far from start to end (0 to 1)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the interpolated adapter")
    args = parser.parse_args(argv)
    print(interpolate_adapters(args.start, args.end, args.weight, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
