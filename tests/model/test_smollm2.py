"""The real bundled model, greedy, reads a one-chunk document and answers from its memory."""

import pytest

from inference.agent import AgentConfig, MemoryAgent
from inference.engines.transformers_engine import TransformersEngine

pytestmark = pytest.mark.model

DOC = (
    "The harbour town woke slowly that morning. Fishing boats rocked against the pier while gulls circled "
    "overhead. Old Tomas mended his nets on the quay, as he had done for forty years. The code to the "
    "harbour master's safe is 4417. By noon the market was full of voices, baskets of silver fish and the "
    "smell of tar and salt."
)


@pytest.fixture(scope="module")
def engine(model_path):
    # float32, whatever the CPU: batch independence held in bfloat16 on a Zen 4 (2026-12-07) but was never checked
    # on AMX's kernels; the engine's own choice (bfloat16 where native) reads in the integration tests
    return TransformersEngine(model_path, dtype="float32")


def test_planted_fact_is_found_in_a_one_chunk_document(engine):
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=512, memory_tokens=128, answer_tokens=64))
    assert len(agent.chunks(DOC)) == 1
    question = "What is the code to the harbour master's safe?"
    assert "4417" not in question
    (trajectory,) = agent.read_batch([(question, DOC)])
    assert "4417" in trajectory.memories[0]
    assert "4417" in trajectory.answer.answer


def test_generation_is_greedy_and_batch_independent(engine):
    prompts = ["Name a colour.", "Count from one to five."]
    alone = [engine.generate([p], 24)[0].text for p in prompts]
    together = [c.text for c in engine.generate(prompts, 24)]
    assert together == alone
    assert all(c.completion_tokens <= 24 for c in engine.generate(prompts, 24))


def test_a_tokenizer_without_a_pad_token_pads_with_its_end_token(engine, model_path):
    # transformers 5.17 converts the bundled GGUF without a pad token; a batch of unequal prompts
    # then raised "Asking to pad but the tokenizer does not have a padding token" mid-training.
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    tokenizer.pad_token = None
    unpadded = TransformersEngine.from_model(engine.model, tokenizer)
    prompts = ["Name a colour.", "Count from one to five, slowly and in words."]
    assert [c.text for c in unpadded.generate(prompts, 16)] == [c.text for c in engine.generate(prompts, 16)]
    assert tokenizer.pad_token == tokenizer.eos_token
