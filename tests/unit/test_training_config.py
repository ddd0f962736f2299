"""The training config: presets, TOML overrides, and errors that say what to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.config import ConfigError, describe, load_config, make_config


def test_memagent_preset_is_memagents_recipe() -> None:
    c = load_config("memagent")
    assert (c.group_size, c.learning_rate, c.warmup_steps, c.kl_coef, c.eps_low, c.eps_high, c.temperature) == (
        16,
        1e-6,
        20,
        1e-3,
        0.2,
        0.2,
        1.0,
    )
    assert not c.scale_advantage_by_std and c.template_set == "memagent" and c.lora_r == 0


def test_toml_overrides_a_preset(tmp_path: Path) -> None:
    f = tmp_path / "run.toml"
    f.write_text('preset = "memagent"\nrl_steps = 3\n[data]\ncontracts = false\n')
    c = load_config(f)
    assert c.rl_steps == 3 and c.group_size == 16 and not c.data.contracts
    assert c.data.curriculum == [(28_000, 1_000_000)]  # the preset's data keys survive a partial [data]


def test_every_bad_field_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        make_config({"preset": "small", "lora_r": -1, "group_size": 1, "bogus": 2})
    message = str(e.value)
    assert "3 setting(s) to fix" in message
    for field in ("lora_r", "group_size", "bogus"):
        assert field in message


@pytest.mark.parametrize(
    "raw, says",
    [
        ({"sft_steps": 0, "rl_steps": 0}, "set one of them above 0"),
        ({"eps_low": 0.3, "eps_high": 0.2}, "eps_high >= eps_low"),
        ({"template_set": "nope"}, "choose one of"),
        ({"data": {"synthetic_kinds": [], "contracts": False}}, "data selects nothing"),
        (
            {"data": {"mix_contracts": 0.6, "mix_feedback": 0.5, "feedback": ["f.jsonl"]}},
            "mix_contracts \\+ mix_feedback is 1.1",
        ),
        ({"rollout_engine": "vllm", "lora_r": 0}, "set lora_r above 0 or use rollout_engine policy"),
        ({"device": "gpu"}, "not one of auto, cpu, cuda, cuda:N"),
        ({"precision": "float16"}, "precision"),
        ({"sft_anchor": 1.0}, "set sft_updates to none or planted"),
    ],
)
def test_incoherent_configs_say_what_to_change(raw: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        make_config(raw)


def test_unknown_preset_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown preset"):
        make_config({"preset": "huge"})
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.toml")


def test_describe_has_help_for_every_field() -> None:
    lines = describe(make_config({})).splitlines()
    assert all("  # " in line and not line.endswith("# None") for line in lines)
    assert any(line.startswith("data.curriculum") for line in lines)


def test_a_run_folders_config_json_loads_back_the_same(tmp_path: Path) -> None:
    config = make_config({"preset": "small", "rl_steps": 3, "data": {"curriculum": [(256, 3)], "contracts": False}})
    path = tmp_path / "config.json"
    path.write_text(config.model_dump_json(indent=2))
    assert load_config(path) == config
    path.write_text('{"rl_steps": -1}')
    with pytest.raises(ConfigError, match="rl_steps"):
        load_config(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(path)


def test_auto_device_is_the_cpu_without_a_gpu_and_a_gpu_always_has_an_index(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from training.policy import pick_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("LOCAL_RANK", "3")  # torchrun: each process its own GPU
    assert pick_device("auto") == torch.device("cuda", 3)
    assert pick_device("cpu") == torch.device("cpu")
    # a bare `cuda` gets its index too: torch.cuda.set_device raised on it (the first run on an H200)
    assert pick_device("cuda") == torch.device("cuda", 3)
    assert pick_device("cuda:1") == torch.device("cuda", 1)


def test_a_phase_of_more_steps_than_any_run_takes_is_refused(tmp_path: Path) -> None:
    """The estimate walks a run's steps: 10^18 of them, from a generated API request, kept it busy for good."""
    f = tmp_path / "run.toml"
    f.write_text("rl_steps = 1000000000000000000\n")
    with pytest.raises(ConfigError, match=r"rl_steps.*less than or equal to 100000"):
        load_config(f)
    f.write_text("rl_steps = 100000\n")
    assert load_config(f).rl_steps == 100_000
