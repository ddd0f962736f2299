"""Starting weights named by sha256 (training/weights.py): found where they lie, or an error that says
which indexed run made them and the commit that restores them; every shipped config names its start so."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from inference.models import READER_ADAPTER
from training.config import ConfigError, load_config, make_config
from training.results_index import INDEX, file_sha256, load_index, where_adapter_was
from training.weights import AdapterNotFound, resolve_adapter

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "training" / "configs").glob("*.toml"))


def _adapter(folder: Path, content: bytes) -> str:
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(content)
    (folder / "adapter_config.json").write_text("{}")
    return hashlib.sha256(content).hexdigest()


def test_a_digest_finds_its_adapter_wherever_it_lies_under_runs(tmp_path):
    _adapter(tmp_path / "runs" / "a" / "adapter", b"first")
    digest = _adapter(tmp_path / "runs" / "b" / "checkpoint" / "model", b"second")
    found = resolve_adapter(f"sha256:{digest}", search=[tmp_path / "reader", tmp_path / "runs"], index=tmp_path / "x")
    assert found == tmp_path / "runs" / "b" / "checkpoint" / "model"


def test_a_folder_path_is_taken_as_it_is(tmp_path):
    assert resolve_adapter(tmp_path / "runs" / "x" / "adapter") == tmp_path / "runs" / "x" / "adapter"


def test_the_shipped_reader_is_found_by_its_digest():
    digest = file_sha256(READER_ADAPTER / "adapter_model.safetensors")
    assert resolve_adapter(f"sha256:{digest}") == READER_ADAPTER


def test_a_missing_adapter_names_the_indexed_run_and_the_commit_that_holds_it(tmp_path):
    digest = hashlib.sha256(b"gone").hexdigest()
    index = tmp_path / "results.jsonl"
    index.write_text(
        json.dumps(
            {
                "name": "sft-old",
                "kind": "train",
                "path": "training/results/sft-old",
                "adapters": [{"path": "adapter-step9", "sha256": digest, "commit": "a" * 40}],
            }
        )
        + "\n"
    )
    with pytest.raises(AdapterNotFound) as caught:
        resolve_adapter(f"sha256:{digest}", search=[tmp_path / "runs"], index=index)
    message = str(caught.value)
    assert f"sha256:{digest}" in message and str(tmp_path / "runs") in message
    assert "sft-old: training/results/sft-old/adapter-step9 at commit aaaaaaa" in message
    assert "git show aaaaaaa:training/results/sft-old/adapter-step9/adapter_model.safetensors" in message


def test_an_unknown_digest_says_the_index_has_none(tmp_path):
    with pytest.raises(AdapterNotFound, match="the results index .* has none"):
        resolve_adapter("sha256:" + "0" * 64, search=[tmp_path], index=tmp_path / "results.jsonl")


def test_a_malformed_digest_is_refused_with_what_to_write():
    with pytest.raises(ConfigError, match="64 lowercase hex digits"):
        make_config({"preset": "small", "init_adapter": "sha256:12ab"})


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_config_names_its_start_by_a_digest_the_index_holds(path):
    config = load_config(path)
    if config.init_adapter is None:
        return
    assert str(config.init_adapter).startswith("sha256:"), f"{path.name}: init_adapter is a path: {config.init_adapter}"
    places = where_adapter_was(str(config.init_adapter).removeprefix("sha256:"), load_index(INDEX))
    # restorable: some commit holds it (a shipped reader also has the line of the run that made it, never committed)
    assert any(p["commit"] for p in places), f"{path.name}: its start is in no commit {INDEX.name} names"
