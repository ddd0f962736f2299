"""The policy being trained: a causal LM with LoRA adapters (or all weights), and the one thing the
trainer asks of it: log-probabilities of given completions after given prompts.

A conversation is a `Row`: the prompt's token ids (the user message in the model's chat template,
exactly as the engines render it) and the completion's token ids (stop token included).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from inference.vllm_server import cpu_dtype
from training.algorithms import token_log_probs


@dataclass
class Row:
    prompt_ids: list[int]
    completion_ids: list[int]
    advantage: float = 0.0
    #: the sampling policy's log-probabilities of the completion (set before the first update)
    old_log_probs: torch.Tensor | None = field(default=None, repr=False)
    ref_log_probs: torch.Tensor | None = field(default=None, repr=False)
    #: an SFT row whose completion is not taught but anchored: the policy kept near the starting model there
    anchor: bool = False

    @property
    def tokens(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)


def prompt_ids(tokenizer: Any, message: str) -> list[int]:
    """Token ids of one user message in the chat template, ready for the answer (as the engines send it)."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
    )
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def target_ids(tokenizer: Any, text: str) -> list[int]:
    """A supervised completion: the text's tokens and the stop token the engines stop at."""
    return tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]


def micro_batches(rows: Sequence[Row], max_tokens: int) -> Iterator[list[Row]]:
    """Consecutive groups of rows whose padded size (rows × longest) stays within `max_tokens`;
    a row longer than that goes alone. Sorting by length first keeps padding small."""
    order = sorted(rows, key=lambda r: r.tokens)
    batch: list[Row] = []
    for row in order:
        if batch and (len(batch) + 1) * max(row.tokens, batch[-1].tokens) > max_tokens:
            yield batch
            batch = []
        batch.append(row)
    if batch:
        yield batch


def completion_log_probs(model: Any, rows: Sequence[Row], pad_id: int, temperature: float = 1.0) -> list[torch.Tensor]:
    """log p(completion token | everything before it) for each row, in one right-padded forward
    pass, under the distribution the tokens were sampled from (logits ÷ `temperature`)."""
    return [
        token_log_probs(logits, torch.tensor(r.completion_ids, device=logits.device))
        for r, logits in zip(rows, completion_logits(model, rows, pad_id, temperature))
    ]


def completion_logits(model: Any, rows: Sequence[Row], pad_id: int, temperature: float = 1.0) -> list[torch.Tensor]:
    """The logits (÷ `temperature`) that predict each row's completion tokens, in one right-padded
    forward pass. The LM head runs only on completion positions (the prompt's logits are never needed)."""
    longest = max(r.tokens for r in rows)
    ids = torch.full((len(rows), longest), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), longest), dtype=torch.long)
    for i, r in enumerate(rows):
        seq = r.prompt_ids + r.completion_ids
        ids[i, : len(seq)] = torch.tensor(seq)
        attention[i, : len(seq)] = 1
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    device = base.lm_head.weight.device
    hidden = base.model(input_ids=ids.to(device), attention_mask=attention.to(device)).last_hidden_state
    # position t predicts token t+1: the completion's tokens are predicted from start-1 .. end-2
    return [
        base.lm_head(hidden[i, len(r.prompt_ids) - 1 : len(r.prompt_ids) - 1 + len(r.completion_ids)]) / temperature
        for i, r in enumerate(rows)
    ]


def sft_loss(
    model: Any, anchor: Any, rows: Sequence[Row], pad_id: int, taught: int, anchored: int, weight: float
) -> tuple[torch.Tensor, float]:
    """One micro-batch's share of an SFT step's loss, and its anchor rows' summed KL: the negative
    log-likelihood of the taught rows' completions ÷ `taught` (the step's taught tokens), plus `weight` ×
    the KL from `anchor` (the frozen starting model) to the policy, over the whole vocabulary at each
    completion token of a `Row.anchor` row, ÷ `anchored` (the step's anchored tokens). The KL holds the
    whole next-token distribution where nothing is taught, not only the one token written there."""
    logits = completion_logits(model, rows, pad_id)
    loss = torch.zeros((), device=logits[0].device)
    kept = [i for i, r in enumerate(rows) if r.anchor]
    kl_sum = 0.0
    if kept:
        with torch.no_grad():
            frozen = completion_logits(anchor, [rows[i] for i in kept], pad_id)
        for i, ref in zip(kept, frozen):
            kl = torch.nn.functional.kl_div(
                logits[i].float().log_softmax(-1), ref.float().log_softmax(-1), log_target=True, reduction="sum"
            )
            loss = loss + weight * kl / anchored
            kl_sum += kl.item()
    for r, lg in zip(rows, logits):
        if not r.anchor:
            loss = loss - token_log_probs(lg, torch.tensor(r.completion_ids, device=lg.device)).sum() / taught
    return loss, kl_sum


def fewer_anchors(rows: Sequence[Row], most: int, rng: random.Random) -> list[Row]:
    """`rows` with at most `most` of their `Row.anchor` rows, drawn with `rng`; the order kept."""
    anchors = [i for i, r in enumerate(rows) if r.anchor]
    dropped = set(anchors) - set(rng.sample(anchors, min(len(anchors), most)))
    return [r for i, r in enumerate(rows) if i not in dropped]


def pick_device(name: str = "auto") -> torch.device:
    """`auto`: a GPU if torch has one, else the CPU. A GPU without an index (`auto`, `cuda`) is this
    process's LOCAL_RANK under torchrun, else the first: torch.cuda.set_device refuses a bare `cuda`."""
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu" if name == "auto" else name)


def run_precision(precision: str, device_type: str, cpuinfo: str | None = None) -> str:
    """The precision a run computes in: what its config asks, except bfloat16 on a CPU that only emulates
    it (no AVX-512 BF16, AMX or Arm BF16), which runs in float32: emulated, the first step of
    small-sft-anchor.toml had not finished after 13 min on a 2-core AVX2 EPYC, against 156 s in float32.

    >>> [run_precision("bfloat16", "cpu", "flags : avx2 " + f) for f in ("", "avx512_bf16")]
    ['float32', 'bfloat16']
    >>> run_precision("bfloat16", "cuda", "flags : avx2"), run_precision("float32", "cpu", "flags : avx512_bf16")
    ('bfloat16', 'float32')
    """
    if precision == "bfloat16" and device_type == "cpu" and cpu_dtype(cpuinfo) != "bfloat16":
        return "float32"
    return precision


def load_policy(
    model_path: Path,
    lora_r: int,
    lora_alpha: int,
    lora_dropout: float,
    targets: list[str],
    init_adapter: Path | None,
    seed: int,
    device: torch.device | str = "cpu",
) -> tuple[Any, Any]:
    """The model to train and its tokenizer, in float32 on `device`. With `lora_r` > 0 only the
    adapters train (fresh, seeded, or loaded from `init_adapter`); with 0 every weight does."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).to(device)
    if lora_r > 0:
        from peft import LoraConfig, PeftModel, get_peft_model

        torch.manual_seed(seed)
        if init_adapter is not None:
            model = PeftModel.from_pretrained(model, init_adapter, is_trainable=True)
        else:
            model = get_peft_model(
                model,
                LoraConfig(
                    r=lora_r,
                    lora_alpha=lora_alpha,
                    lora_dropout=lora_dropout,
                    target_modules=targets,
                    task_type="CAUSAL_LM",
                ),
            )
        model.to(device)  # adapters beside their base weights
    model.train()
    return model, tokenizer


def decoding_copy(policy: Any, precision: str) -> Any:
    """A plain model of the policy's architecture in the compute dtype, for decoding in this process; its
    weights are set by `refresh_decoding_copy`. Decoding the LoRA policy under bfloat16 autocast casts every
    weight again at every token: 16 rollouts of the training tests' tiny task took 10.3-10.5 s, 7.2-7.5 s from
    a bfloat16 copy; 12.9-14.2 s and 10.7-12.3 s in float32 (`benchmarks/rollout_speed.py`, 2-core Zen 4). It
    costs one more copy of the weights (half the policy's float32 size in bfloat16)."""
    from transformers import AutoModelForCausalLM

    base = policy.get_base_model() if hasattr(policy, "get_base_model") else policy
    dtype = torch.bfloat16 if precision == "bfloat16" else torch.float32
    copy = AutoModelForCausalLM.from_config(base.config, dtype=dtype).to(base.device)
    copy.generation_config = base.generation_config
    return copy.eval().requires_grad_(False)


def merged_state(policy: Any) -> dict[str, torch.Tensor]:
    """The policy's weights as a plain model's state dict: each LoRA layer's base weight plus its update."""
    from peft import PeftModel
    from peft.tuners.lora import LoraLayer

    if not isinstance(policy, PeftModel):
        return policy.state_dict()
    base = policy.get_base_model()
    state = {k.replace(".base_layer.", "."): v for k, v in base.state_dict().items() if "lora_" not in k}
    for name, module in base.named_modules():
        if isinstance(module, LoraLayer) and not module.merged:
            for adapter in module.active_adapters:
                state[f"{name}.weight"] = state[f"{name}.weight"] + module.get_delta_weight(adapter)
    return state


@torch.no_grad()
def refresh_decoding_copy(copy: Any, policy: Any) -> Any:
    """`copy` given the policy's current weights (cast to its dtype); returns it."""
    missing, unexpected = copy.load_state_dict(merged_state(policy), strict=False)
    tied = {n for n, _ in copy.named_parameters(remove_duplicate=False)} - {n for n, _ in copy.named_parameters()}
    if unexpected or set(missing) - tied:
        raise ValueError(f"the decoding copy does not match the policy: missing {missing}, unexpected {unexpected}")
    return copy


def reference_log_probs(
    model: Any, rows: Sequence[Row], pad_id: int, reference: Any = None, temperature: float = 1.0
) -> list[torch.Tensor]:
    """The reference policy's log-probabilities: with LoRA, the same model with adapters off;
    otherwise `reference`, a frozen copy of the starting weights."""
    with torch.no_grad():
        if reference is not None:
            return completion_log_probs(reference, rows, pad_id, temperature)
        with model.disable_adapter():
            return completion_log_probs(model, rows, pad_id, temperature)


def distributed():
    """torch.distributed when several processes train together (accelerate launch / torchrun), else None."""
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1 else None


def init_distributed() -> None:
    """Join the process group that `accelerate launch` / torchrun describe in the environment
    (gloo on the CPU, nccl on GPUs); nothing to do for a single process."""
    import torch.distributed as dist

    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
