"""`longread train` under torch.distributed (what `accelerate launch` starts): one step on two CPU
processes (gloo) makes the same update as one process on the same batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from inference.vllm_server import free_port
from tests.conftest import LIGHTHOUSE, MODEL_CACHE

pytestmark = pytest.mark.model

CONFIG = """
preset = "small"
sft_steps = 2
rl_steps = 0
sft_samples_per_step = 4
chunk_tokens = 64
memory_tokens = 24
answer_tokens = 16
warmup_steps = 0
seed = 5

[data]
synthetic_kinds = []
contracts = false
qa_files = ["{cases}"]
"""


def _train(tmp: Path, run: str, launcher: list[str]) -> dict[str, torch.Tensor]:
    # gloo on loopback: by the hostname's address, a machine whose hostname resolves elsewhere would hang
    env = {
        **os.environ,
        "LONGREAD_MODEL_CACHE_DIR": str(MODEL_CACHE),
        "LONGREAD_DATA_DIR": str(tmp / "data"),
        "OMP_NUM_THREADS": "1",
        "GLOO_SOCKET_IFNAME": "lo",
    }
    subprocess.run(
        [*launcher, "train", str(tmp / "config.toml"), "--run-dir", str(tmp / run), "--max-steps", "1"],
        check=True,
        env=env,
        timeout=600,
    )
    return load_file(tmp / run / "checkpoint" / "model" / "adapter_model.safetensors")


def test_two_processes_make_the_same_update_as_one(tmp_path: Path) -> None:
    (tmp_path / "story.txt").write_text(LIGHTHOUSE)
    questions = [
        "Where does the spare key hang?",
        "How many steps did Mara climb?",
        "What colour is the ledger?",
        "When did the supply boat come?",
    ]
    answers = ["behind the barometer", "ninety", "green", "the first Monday of each month"]
    (tmp_path / "cases.jsonl").write_text(
        "".join(
            json.dumps({"document": "story.txt", "question": q, "answers": [a]}) + "\n"
            for q, a in zip(questions, answers)
        )
    )
    (tmp_path / "config.toml").write_text(CONFIG.format(cases=tmp_path / "cases.jsonl"))

    cli = [sys.executable, "-m", "app.cli"]
    one = _train(tmp_path, "one", cli)
    two = _train(
        tmp_path,
        "two",
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(free_port()),
            "-m",
            "app.cli",
        ],
    )
    # Fresh LoRA: A random (same seed), B zero; after one step B moved, identically in both runs.
    moved = [k for k in one if "lora_B" in k]
    a = torch.cat([one[k].flatten() for k in moved])
    b = torch.cat([two[k].flatten() for k in moved])
    assert a.abs().sum() > 0
    cosine = torch.nn.functional.cosine_similarity(a, b, dim=0).item()
    assert cosine > 0.999, cosine
    assert (a - b).abs().mean() < 0.01 * a.abs().mean()
    # only rank 0 writes: one metrics line for the one step, with the whole batch's conversations
    m_one = [json.loads(x) for x in (tmp_path / "one" / "metrics.jsonl").read_text().splitlines()]
    m_two = [json.loads(x) for x in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()]
    assert len(m_one) == len(m_two) == 1
    assert m_one[0]["conversations"] == m_two[0]["conversations"]
    assert m_one[0]["loss"] == pytest.approx(m_two[0]["loss"], rel=1e-4)
