"""Git keeps code, configs, the results index and the one shipped adapter: run outputs (adapters, event files,
evaluation folders) go to runs/, which git ignores. A tracked file over 1 MB anywhere but inference/reader/
fails here, and so does a second one there: a reader swap is one adapter file.

What this guards: the repository's size limit counts what one submission adds (the diffs of one stop's commits not
yet on main, at most 256 MiB), not the project's history. Replacing the ~10 MB bfloat16 adapter costs about 25 MB
of that (old and new file, as binary patches), so a swap fits when it is one adapter file in one stop with little
other binary churn (docs/decisions/shipping-a-reader.md). The limit itself is checked where a stop is submitted;
a unit test cannot see which commits are not yet on main."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT = 1_000_000  # bytes
ALLOWED = ("inference/reader/",)  # the shipped reader: its adapter (~10 MB, bfloat16) and relevance weights (<1 MB)
ADAPTER = "inference/reader/adapter_model.safetensors"


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
    assert (REPO / ADAPTER).stat().st_size > LIMIT


def test_the_shipped_reader_is_one_big_file():
    """A reader swap replaces this one file; no second adapter, checkpoint or figure rides along in git."""
    big = [
        p for p in _tracked() if p.startswith(ALLOWED) and (REPO / p).is_file() and (REPO / p).stat().st_size > LIMIT
    ]
    assert big == [ADAPTER], big
