"""In-process rollouts decode on a plain copy of the policy, LoRA merged in (a tiny random Llama with tied
embeddings as SmolLM2's, real peft): it computes what the policy computes and follows its updates."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from training.policy import decoding_copy, refresh_decoding_copy  # noqa: E402

IDS = torch.tensor([[1, 5, 9, 2, 7, 3]])


@pytest.fixture
def policy():
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
    return peft.get_peft_model(LlamaForCausalLM(config), lora)


def logits(model):
    with torch.no_grad():
        return model(IDS).logits.float()


def test_the_copy_computes_the_policys_logits_and_follows_its_updates(policy):
    copy = refresh_decoding_copy(decoding_copy(policy, "float32"), policy)
    assert not any(isinstance(m, peft.tuners.lora.LoraLayer) for m in copy.modules())
    assert torch.allclose(logits(copy), logits(policy), atol=1e-5)
    with policy.disable_adapter():  # the adapters matter here, so the copy has them merged in
        assert not torch.allclose(logits(copy), logits(policy), atol=1e-3)

    with torch.no_grad():  # an optimizer step, as it were
        for name, p in policy.named_parameters():
            if "lora_B" in name:
                p.add_(0.5)
    assert not torch.allclose(logits(copy), logits(policy), atol=1e-3)
    refresh_decoding_copy(copy, policy)
    assert torch.allclose(logits(copy), logits(policy), atol=1e-5)
    assert copy.lm_head.weight is copy.model.embed_tokens.weight  # still tied


def test_a_bfloat16_copy_rounds_the_same_weights(policy):
    copy = refresh_decoding_copy(decoding_copy(policy, "bfloat16"), policy)
    assert {p.dtype for p in copy.parameters()} == {torch.bfloat16}
    assert torch.allclose(logits(copy), logits(policy), atol=0.05)
    assert all(p.dtype == torch.float32 for p in policy.parameters())  # the policy itself is not cast


def test_a_copy_of_another_model_is_refused(policy):
    shallower = policy.get_base_model().config.to_dict() | {"num_hidden_layers": 1}
    other = LlamaForCausalLM(LlamaConfig(**shallower))
    with pytest.raises(ValueError, match="does not match"):
        refresh_decoding_copy(decoding_copy(other, "float32"), policy)
