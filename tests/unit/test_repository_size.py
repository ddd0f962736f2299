"""Git keeps code, configs, the results index and the one shipped adapter: run outputs (adapters, event files,
evaluation folders) go to runs/, which git ignores. A tracked file over 1 MB anywhere but inference/reader/
fails here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT = 1_000_000  # bytes
ALLOWED = ("inference/reader/",)  # the shipped reader's adapter (~10 MB, bfloat16)


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], check=True, capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p]


def test_no_tracked_file_over_1_mb_outside_the_shipped_reader():
    big = {
        p: (REPO / p).stat().st_size
        for p in _tracked()
        if not p.startswith(ALLOWED) and (REPO / p).is_file() and (REPO / p).stat().st_size > LIMIT
    }
    assert big == {}, f"tracked files over 1 MB (put outputs under runs/, cite them in training/results.jsonl): {big}"


def test_the_limit_would_catch_the_shipped_adapter_were_it_elsewhere():
    """The check is live: the one allowed big file is over the limit."""
    assert (REPO / "inference" / "reader" / "adapter_model.safetensors").stat().st_size > LIMIT
