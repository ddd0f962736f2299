"""The results index (training/results.jsonl): everything the README, docs/ and the configs cite from the old
training/results/ is in it, and `add` indexes a new run folder of runs/."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from pathlib import Path

import pytest

from training.results_index import INDEX, _progress_step, add, load_index

REPO = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"training/results/([A-Za-z0-9_.*{},/-]+)")


def _expand(pattern: str) -> list[str]:
    """'eval-{a,b}-*' -> ['eval-a-*', 'eval-b-*']."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [x for part in m[1].split(",") for x in _expand(pattern[: m.start()] + part + pattern[m.end() :])]


def _citations() -> list[str]:
    texts = [
        REPO / "README.md",
        *(REPO / "docs").rglob("*.md"),
        *(REPO / "training" / "configs").glob("*.toml"),
        *(REPO / "benchmarks").glob("*.py"),
    ]
    found = {c.rstrip(".,/") for t in texts if t.is_file() for c in CITATION.findall(t.read_text(encoding="utf-8"))}
    placeholder = re.compile(r"[A-Z_]+(/|$)")  # "training/results/NAME/FILE" in prose names no run
    return sorted(x for c in found for x in _expand(c) if x and not placeholder.match(x))


def test_every_citation_of_the_old_results_folder_is_in_the_index():
    entries = {e["name"]: e for e in load_index(INDEX)}
    missing = []
    for cited in _citations():
        top, _, inner = cited.partition("/")
        names = [n for n in entries if fnmatch.fnmatchcase(n, top) or fnmatch.fnmatchcase(n, top + "*")]
        held = [f for n in names for f in entries[n].get("files", [])]
        if not names or (inner and not any(f == inner or f.startswith(inner + "/") for f in held)):
            missing.append(cited)
    assert _citations(), "no citations found: the pattern no longer matches"
    assert missing == [], f"cited but not in {INDEX.name}: {missing}"


def test_the_index_says_where_each_adapter_is_and_what_it_measured():
    entries = {e["name"]: e for e in load_index(INDEX)}
    assert {e["kind"] for e in entries.values()} == {"train", "eval", "reader", "figure"}
    for e in entries.values():
        # files in git at `commit`, or a run's folder that stayed in runs/, indexed with the commit it ran at
        assert re.fullmatch(r"[0-9a-f]{40}", e["commit"] or e.get("ran_at", "")), e["name"]
        for a in e.get("adapters", []):  # in git at a commit, or (a run that stayed in runs/) nowhere in git
            assert re.fullmatch(r"[0-9a-f]{64}", a["sha256"])
            assert re.fullmatch(r"[0-9a-f]{40}", a["commit"]) if e["commit"] else a["commit"] is None, e["name"]
    (adapter,) = entries["sft-open3"]["adapters"]
    assert adapter["path"] == "adapter-step53" and entries["sft-open3"]["metrics"]["steps"] == 53
    assert entries["eval-open53-2k"]["metrics"]["synthetic/2K/single-needle"] == {
        "n": 32,
        "sub_em": 0.7188,
        "exact_match": 0.7188,
    }


def test_progress_lines_give_the_metrics_of_a_run_without_metrics_jsonl():
    line = "step 3/40 rl · reward 0.250 · accuracy 0.167 · loss +0.0511 · KL 0.00000 · clip 0.000 · filtered 1/2"
    assert _progress_step(line) == {"step": 3, "phase": "rl", "reward": 0.25, "accuracy": 0.167, "loss": 0.0511}


def test_add_indexes_a_run_folder_with_its_adapters_digest_and_refuses_a_second_line_of_that_name(tmp_path):
    run = tmp_path / "runs" / "open4"
    (run / "adapter").mkdir(parents=True)
    (run / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    (run / "checkpoint" / "model").mkdir(parents=True)
    (run / "checkpoint" / "model" / "adapter_model.safetensors").write_bytes(b"resumable state")
    steps = [
        {"phase": "sft", "loss": 0.5, "step": 1, "seconds": 1800},
        {"phase": "sft", "loss": 0.25, "step": 2, "seconds": 1800},
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in steps))
    (run / "config.json").write_text(json.dumps({"seed": 4}))
    index = tmp_path / "results.jsonl"
    add(run, config_file="training/configs/small-sft-open3.toml", index=index)
    (entry,) = load_index(index)
    assert entry["name"] == "open4" and entry["kind"] == "train" and entry["commit"] is None
    assert entry["config"] == {"seed": 4} and entry["config_file"] == "training/configs/small-sft-open3.toml"
    assert entry["adapters"] == [{"path": "adapter", "sha256": hashlib.sha256(b"weights").hexdigest(), "commit": None}]
    assert entry["metrics"] == {"steps": 2, "sft_steps": 2, "rl_steps": 0, "sft_loss_last": 0.25, "hours": 1.0}
    assert re.fullmatch(r"[0-9a-f]{40}", entry["ran_at"])
    with pytest.raises(ValueError, match="in .* already"):
        add(run, index=index)
    with pytest.raises(ValueError, match="neither a training run"):
        add(tmp_path, index=index)
