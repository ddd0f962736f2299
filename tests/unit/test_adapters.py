"""Merging a LoRA adapter into its base, cached by the adapter's bytes (a tiny random Llama, real peft)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM  # noqa: E402

from inference.adapters import merged_model  # noqa: E402
from training.interpolate import interpolate_adapters  # noqa: E402


@pytest.fixture
def base(tmp_path, tokenizer):
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    path = tmp_path / "base"
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _adapter(base_path, path, seed: int):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(base_path)
    lora = peft.get_peft_model(
        model, peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    lora.save_pretrained(path)
    return lora


def test_merge_applies_the_adapter_once_and_caches_by_content(tmp_path, base):
    lora = _adapter(base, tmp_path / "adapter", seed=1)
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        expected = lora(ids).logits
    merged = merged_model(base, tmp_path / "adapter", tmp_path / "cache")
    with torch.no_grad():
        got = AutoModelForCausalLM.from_pretrained(merged)(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(base)(ids).logits
    assert torch.allclose(got, expected, atol=1e-5) and not torch.allclose(got, plain, atol=1e-3)
    assert (merged / "tokenizer.json").is_file()

    stamp = (merged / "config.json").stat().st_mtime_ns
    assert merged_model(base, tmp_path / "adapter", tmp_path / "cache") == merged  # reused, not rebuilt
    assert (merged / "config.json").stat().st_mtime_ns == stamp
    _adapter(base, tmp_path / "adapter", seed=2)  # retrained into the same folder
    assert merged_model(base, tmp_path / "adapter", tmp_path / "cache") != merged


def test_a_folder_without_adapter_is_refused(tmp_path, base):
    with pytest.raises(FileNotFoundError, match="not a peft adapter"):
        merged_model(base, tmp_path, tmp_path / "cache")


def test_interpolated_adapter_lies_between_its_ends(tmp_path, base):
    from safetensors.torch import load_file

    _adapter(base, tmp_path / "start", seed=1)
    _adapter(base, tmp_path / "end", seed=2)
    start, end = (load_file(tmp_path / name / "adapter_model.safetensors") for name in ("start", "end"))
    quarter = interpolate_adapters(tmp_path / "start", tmp_path / "end", 0.25, tmp_path / "quarter")
    got = load_file(quarter / "adapter_model.safetensors")
    assert got.keys() == start.keys() and len(got) == 4  # A and B of q_proj and v_proj (one layer)
    for name, a in start.items():
        assert not torch.allclose(a, end[name])
        assert torch.allclose(got[name], 0.75 * a + 0.25 * end[name])
    # peft loads it as it loads the others; at weight 0 it is the start adapter
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        logits = [
            peft.PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), path)(ids).logits
            for path in (
                tmp_path / "start",
                interpolate_adapters(tmp_path / "start", tmp_path / "end", 0.0, tmp_path / "zero"),
            )
        ]
    assert torch.allclose(logits[0], logits[1])


def test_adapters_of_different_ranks_are_not_interpolated(tmp_path, base):
    _adapter(base, tmp_path / "start", seed=1)
    model = AutoModelForCausalLM.from_pretrained(base)
    peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules=["q_proj", "v_proj"])).save_pretrained(
        tmp_path / "end"
    )
    with pytest.raises(ValueError, match="differ in their LoRA configs"):
        interpolate_adapters(tmp_path / "start", tmp_path / "end", 0.5, tmp_path / "out")


@pytest.mark.model
def test_the_bundled_reader_is_the_bundled_model_with_the_shipped_adapter(model_path):
    """`smollm2-reader` resolves to the bundled model with inference/reader/ merged in: the same logits
    as peft applying the adapter, not the base's."""
    from inference.models import READER, READER_ADAPTER, base_of, model_folder

    cache = model_path.parent  # the bundled model is converted there already; the merge goes beside it
    reader = model_folder(READER, cache_dir=cache)
    assert reader.parent == cache / "merged" and (reader / "config.json").is_file()
    assert model_folder(base_of(READER), cache_dir=cache) == model_path  # its tokenizer loads without a merge
    ids = torch.tensor([[1, 504, 3158, 28, 253, 1978]])
    base = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    with torch.no_grad():
        plain = base(ids).logits
        expected = peft.PeftModel.from_pretrained(base, READER_ADAPTER)(ids).logits
        got = AutoModelForCausalLM.from_pretrained(reader, dtype=torch.float32)(ids).logits
    assert torch.allclose(got, expected, atol=1e-4) and not torch.allclose(got, plain, atol=1e-2)


@pytest.mark.parametrize("cpu", ["bfloat16", "float32"])
def test_the_in_process_engine_loads_in_the_dtype_the_cpu_computes(base, monkeypatch, cpu):
    """As the vLLM server and training runs do (issue 52): bfloat16 only where the CPU has it natively."""
    import inference.vllm_server
    from inference.engines.transformers_engine import TransformersEngine

    monkeypatch.setattr(inference.vllm_server, "cpu_dtype", lambda cpuinfo=None: cpu)
    assert TransformersEngine(base).model.dtype == getattr(torch, cpu)
    assert TransformersEngine(base, dtype="float32").model.dtype == torch.float32  # asked for, as to compare
