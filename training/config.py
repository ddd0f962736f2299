"""One typed training config: every field has help text, every bad value an error that says what
to change. A run is SFT on oracle memory traces (optional warm start), then multi-conversation
GRPO (optional); `sft_steps` and `rl_steps` select SFT alone, RL alone, or SFT then RL.

Load a TOML (or JSON) file with `load_config(path)`; `preset = "small"` or `"memagent"` in it starts from a
preset and the file's other keys override it.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from inference.templates import TEMPLATE_SETS
from training.evidence_tasks import GROUPS
from training.tasks import SYNTHETIC_KINDS

Kind = Literal[SYNTHETIC_KINDS]  # type: ignore[valid-type]  # the tuple spreads into Literal's values
#: An adapter named by the sha256 of its adapter_model.safetensors (training/weights.py finds it).
AdapterDigest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
EvidenceGroup = Literal[GROUPS]  # type: ignore[valid-type]


class DataConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    synthetic_kinds: list[Kind] = Field(
        ["single-needle", "multi-needle", "multi-hop", "variable-tracking"],
        description="RULER-style tasks planted in the training books (`absent`: the fact asked for is not in the "
        "document, to answer that it does not say); empty for none.",
    )
    curriculum: list[tuple[int, int]] = Field(
        [(1024, 40), (2048, 1_000_000)],
        description="Length curriculum for synthetic documents: (document tokens, up to which step), in "
        "order; a step past the last bound uses the last length.",
    )
    facts_per_doc: int = Field(
        1,
        ge=1,
        le=16,
        description="Questions planted in each synthetic document, each with its look-alike: the "
        "others' facts are look-alikes too, as in held-out documents of 8K tokens and more (one question per 4K "
        "tokens, training/evaluate.py), so the reader learns to keep only the asked person's fact.",
    )
    contracts: bool = Field(
        True,
        description="Use the training split of the contracts' expert QA: the extraction "
        "questions of contracts-train, less every evaluation suite's contracts.",
    )
    contract_categories: list[str] = Field(
        [], description="Only these contract question categories (e.g. 'Governing Law'); empty means all."
    )
    contract_max_tokens: int = Field(
        8192, ge=256, description="Skip training contracts longer than this many tokens (CPU time)."
    )
    governing_law_variants: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of Governing Law contract samples replaced by a variant: another "
        "training contract's clause, its jurisdiction swapped, planted at a random sentence of the sample's contract "
        "in place of its own (training/tasks, governing_law_variant): new company and new answers for the 34 clauses.",
    )
    qa_files: list[Path] = Field([], description="JSON Lines files of {document, question, answers}.")
    feedback: list[Path] = Field(
        [],
        description="JSON Lines files from `longread feedback export` (documents found by id in the app's "
        "database, or in the file with `--with-text`).",
    )
    mix_contracts: float = Field(
        0.25, ge=0.0, le=1.0, description="Share of samples drawn from contracts and QA files, the rest synthetic."
    )
    mix_feedback: float = Field(
        0.25,
        ge=0.0,
        le=1.0,
        description="Share of samples drawn from readers' feedback (when `feedback` is "
        "given): its own share, since a few readers' questions would be lost among hundreds of contract ones.",
    )
    evidence_groups: list[EvidenceGroup] = Field(
        [],
        description="Real questions with their evidence (training/evidence_tasks.py), drawn in turn, each as often "
        "as it is listed: `contract-extract` (the 8 extraction categories of contracts-train), `contract-clause` (its "
        "33 yes/no clause categories, Yes and No equally often), `clause-twin` (a Yes clause's window with the clause "
        "cut out, answered No), `book` (questions on the training novels), `planted` "
        "(planted facts), `absent` (questions the document does not answer). Real documents are cut to windows of "
        "the curriculum's length around their evidence; the clauses suite's contracts are never read. Empty for none.",
    )
    mix_evidence: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="Share of samples drawn from `evidence_groups` (when given); the rest come "
        "from the sources above in their shares.",
    )

    @model_validator(mode="after")
    def _something(self) -> DataConfig:
        others = bool(self.synthetic_kinds or self.contracts or self.qa_files or self.feedback)
        if not (others or self.evidence_groups):
            raise ValueError(
                "data selects nothing: enable synthetic_kinds, contracts, qa_files, feedback or evidence_groups"
            )
        if self.evidence_groups and self.mix_evidence < 1 and not others:
            raise ValueError(
                f"mix_evidence is {self.mix_evidence:g} but no other source is on: set it to 1 or "
                "enable synthetic_kinds, contracts, qa_files or feedback"
            )
        if self.feedback and (self.contracts or self.qa_files) and self.mix_contracts + self.mix_feedback > 1:
            raise ValueError(
                f"mix_contracts + mix_feedback is {self.mix_contracts + self.mix_feedback:g}: "
                "together they are a share of the samples, at most 1; lower one"
            )
        if not self.curriculum:
            raise ValueError("curriculum needs at least one (document tokens, until step) stage")
        return self


#: a bound on each phase's steps (about 290 days of 250-second steps): the run's estimate walks its steps, and
#: a generated request with 10^18 of them kept the API busy for good (schemathesis, seed 9)
MAX_STEPS = 100_000


class TrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # --- model -----------------------------------------------------------------------------------
    model: str = Field("smollm2", description="`smollm2` (the bundled SmolLM2-135M) or a Hugging Face model folder.")
    init_adapter: AdapterDigest | Path | None = Field(
        None,
        description="Start from this LoRA adapter instead of fresh adapters: `sha256:<hex>` of its "
        "adapter_model.safetensors, found in inference/reader/ or under runs/ (training/results.jsonl lists every "
        "kept adapter's digest), or a folder whose contents stay put, such as a finished run's adapter.",
    )
    lora_r: int = Field(16, ge=0, description="LoRA rank; 0 trains every weight (needs memory for a reference copy).")
    lora_alpha: int = Field(32, ge=1, description="LoRA scale numerator (scale = alpha / r).")
    lora_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="Dropout on the LoRA input.")
    lora_targets: list[str] = Field(
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        description="Module names that get adapters.",
    )
    # --- reading ---------------------------------------------------------------------------------
    template_set: str = Field("chunk-first", description="Prompt templates the model learns (inference/templates.py).")
    # 512, not the app's 1024 (app/settings.py): a step on two CPU cores takes minutes at 512, and a run is served
    # at the sizes its model version records (the run's own), whatever the app's default is.
    chunk_tokens: int = Field(512, ge=16, description="Document tokens per chunk in rollouts and traces.")
    memory_tokens: int = Field(128, ge=8, description="Most tokens of each memory the agent writes.")
    answer_tokens: int = Field(32, ge=4, description="Most tokens of the final answer.")
    memory_policy: Literal["generative", "extractive"] = Field(
        "generative",
        description="How the agent keeps its memory: `generative`, it rewrites it (SFT teaches the updates and the "
        "answer, RL rewards both); `extractive`, its best-scored sentences are kept verbatim (inference/agent.py "
        "`extract`), so only the answer step learns: SFT teaches the answer from the final memory the capture keeps, "
        "RL samples readings that keep sentences and trains their answers. A run from the app takes its start "
        "version's.",
    )
    # --- schedule --------------------------------------------------------------------------------
    sft_steps: int = Field(
        0, ge=0, le=MAX_STEPS, description="Supervised steps on oracle memory traces first (0: no warm start)."
    )
    rl_steps: int = Field(100, ge=0, le=MAX_STEPS, description="GRPO steps after the SFT phase (0: SFT alone).")
    learning_rate: float = Field(
        1e-4, gt=0, description="Peak learning rate (AdamW); LoRA wants ~1e-4, full weights ~1e-6."
    )
    sft_learning_rate: float = Field(3e-4, gt=0, description="Peak learning rate of the SFT phase.")
    warmup_steps: int = Field(5, ge=0, description="Linear warm-up steps of each phase, then constant.")
    weight_decay: float = Field(0.0, ge=0.0, description="AdamW weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping by global norm.")
    micro_batch_tokens: int = Field(
        2048,
        ge=256,
        description="Tokens per forward/backward pass; a step accumulates as many as it needs. "
        "Activation memory grows with it (~1.5 GB per 1,000 tokens for the 135M model in fp32); "
        "speed hardly does on a CPU.",
    )
    sft_samples_per_step: int = Field(8, ge=1, description="Samples (whole oracle readings) per SFT step.")
    sft_keeps: int = Field(
        1,
        ge=0,
        description="SFT conversations per sample, drawn at random, in which the chunk adds nothing and the memory "
        "must come through unchanged; most are before any evidence (a contract's governing-law clause is near "
        "its end): "
        "they teach the reader not to write what is not asked.",
    )
    sft_carry: int = Field(
        0,
        ge=0,
        description="Extra SFT conversations per sample in which the memory already holds evidence and must "
        "come through a chunk unchanged: what a long document asks of the reader most often.",
    )
    sft_echoes: int = Field(
        0,
        ge=0,
        description="SFT conversations per sample that start from the question restated without its answer "
        "(training/tasks, question_echo), the reader's commonest stray write: at the chunk that brings the evidence "
        "(the fact replaces the echo) and at up to this many minus one chunks before it (the echo is dropped). "
        "The same lesson as `sft_corrections` for that one mistake, without reading the sample first.",
    )
    sft_updates: Literal["all", "planted", "none"] = Field(
        "all",
        description="Which samples teach their memory updates: `all`; `none`, only the answer step (from the "
        "oracle's final memory and `sft_passage_answers`), the reader keeping the memories it writes; `planted`, "
        "the updates of planted facts and of questions with nothing to find (the memory stays empty) besides: "
        "updates the reader already writes, rehearsed so that the answers taught do not move them.",
    )
    sft_anchor: float = Field(
        0.0,
        ge=0.0,
        description="Weight of the anchor on the memory updates that `sft_updates` does not teach: at each of "
        "their oracle memory's tokens, the KL from the starting model (`init_adapter`, kept frozen) to the policy "
        "over the whole vocabulary. The answers taught then move the memories the reader writes less (the two "
        "steps share one set of weights). Costs a frozen copy of the model and a forward pass of those "
        "conversations; 0 turns it off.",
    )
    sft_anchor_rows: int = Field(
        8,
        ge=1,
        description="Most anchored conversations per step, drawn from the step's samples: each is a whole chunk "
        "read forward twice and back once (a 1,024-token chunk costs about as much as 8 answers).",
    )
    sft_passage_answers: bool = Field(
        False,
        description="Also teach each answer from a memory as the reader writes one: the text from the start of "
        "the evidence's sentence, cut at `memory_tokens`, or from a sentence drawn at random when the document does "
        "not answer (training/tasks, passage_memory). The reader keeps a contract's preamble, where the oracle keeps "
        "only the title or the names; the answer step must pick them out, or find that they are not there.",
    )
    sft_answers_supported: bool = Field(
        True,
        description="Under the extractive memory, teach a value's answer only from a final memory that holds it "
        "(training/answer_rows.py `supported`); false teaches every answer from whatever the capture kept, as round 1 "
        "of docs/experiments/2026-12-06-extractive-answers.md did.",
    )
    sft_corrections: int = Field(
        0,
        ge=0,
        description="SFT on the policy's own states (DAgger): each step's samples are first read greedily "
        "by the policy, and up to this many conversations per sample where its memory went wrong are trained "
        "with its memory in and the oracle's out (recovering from an echoed question or a missed fact; the "
        "capture it missed first, then its first mistake, then others at random). "
        "Costs a reading per sample (on the rollout engine); 0 turns it off.",
    )
    # --- GRPO ------------------------------------------------------------------------------------
    samples_per_step: int = Field(4, ge=1, description="Distinct samples (document, question) per RL step.")
    group_size: int = Field(8, ge=2, description="Rollouts per sample (G); advantages are relative within a group.")
    temperature: float = Field(
        0.7,
        gt=0,
        description="Sampling temperature of the rollouts (log-probabilities are taken at the same "
        "temperature). MemAgent samples its 7B/14B models at 1.0; SmolLM2-135M writes noise at 1.0.",
    )
    rollout_engine: Literal["policy", "vllm"] = Field(
        "policy",
        description="Who samples the rollouts (and the readings of `sft_corrections`): `policy`, the model "
        "being trained, in this process; `vllm`, "
        "a vLLM server the trainer starts (LONGREAD_VLLM_PYTHON) that serves the base model and hot-loads the "
        "policy's adapter every step (MemAgent's way on GPUs; faster on the CPU too). `vllm` needs LoRA.",
    )
    rollout_vllm_args: str = Field(
        "", description="Extra flags for that vLLM server, e.g. `--gpu-memory-utilization 0.5`."
    )
    scale_advantage_by_std: bool = Field(
        False, description="Divide advantages by the group's std (GRPO) or not (MemAgent, Dr. GRPO)."
    )
    filter_equal_groups: bool = Field(
        True, description="Drop groups whose rollouts all earned the same reward (they carry no signal)."
    )
    eps_low: float = Field(0.2, gt=0, lt=1, description="Lower clip range of the probability ratio.")
    eps_high: float = Field(0.28, gt=0, description="Upper clip range (DAPO's clip-higher: 0.28; PPO: 0.2).")
    updates_per_batch: int = Field(
        1, ge=1, description="Optimizer passes over each batch of rollouts (>1 makes clipping active)."
    )
    kl_coef: float = Field(
        0.0, ge=0.0, description="β of the k3 KL to the reference (LoRA: the base with adapters off); 0 skips it."
    )
    reward_rule: Literal["exact_match", "sub_em"] = Field(
        "sub_em",
        description="How the final answer is scored: `sub_em`, the strict rules of training/verifier.py "
        "that the evaluation reports, or `exact_match`.",
    )
    # --- bookkeeping -----------------------------------------------------------------------------
    seed: int = Field(0, description="Seeds the data order, the sampling and the adapters' initialisation.")
    save_every: int = Field(10, ge=1, description="Save adapter, optimizer and data position every this many steps.")
    threads: int = Field(0, ge=0, description="torch threads; 0 keeps torch's default (all cores).")
    device: str = Field(
        "auto",
        description="Where the policy trains and samples: `auto` (a CUDA GPU when torch has one, else the "
        "CPU), `cpu`, `cuda` or `cuda:N`. Under torchrun each process takes the GPU of its LOCAL_RANK.",
    )
    precision: Literal["float32", "bfloat16"] = Field(
        "float32",
        description="Compute precision of the forward passes (autocast); weights, gradients and the "
        "optimizer stay float32. bfloat16 ran a LoRA forward + backward 1.7-2.1x faster than float32 on an "
        "AVX-512-BF16 CPU and is what vLLM samples in, but a CPU without bf16 instructions (AVX2 only) emulates it "
        "(the first step of small-dagger.toml took 233 s in float32 and over 11 minutes in bfloat16), so there a run "
        "computes in float32 whatever this says, and its log says so. "
        "float32 keeps the sampled and trained log-probabilities bit-equal.",
    )
    rollout_batch: int = Field(
        64,
        ge=1,
        description="Most conversations the in-process engine generates at once (rollouts and greedy "
        "readings); a GPU takes hundreds, a CPU gains little past 64.",
    )

    @model_validator(mode="after")
    def _coherent(self) -> TrainConfig:
        if self.template_set not in TEMPLATE_SETS:
            raise ValueError(f"template_set {self.template_set!r} is unknown; choose one of {', '.join(TEMPLATE_SETS)}")
        if self.sft_steps == 0 and self.rl_steps == 0:
            raise ValueError("sft_steps and rl_steps are both 0: set one of them above 0")
        if str(self.init_adapter).startswith("sha256:") and not isinstance(self.init_adapter, str):
            raise ValueError(
                f"init_adapter {self.init_adapter} is not a sha256 digest: write sha256: and the 64 "
                "lowercase hex digits of the adapter's adapter_model.safetensors (sha256sum prints them)"
            )
        if self.sft_anchor > 0 and self.sft_updates == "all":
            raise ValueError(
                "sft_anchor holds the memory updates that are not taught: set sft_updates to none or planted"
            )
        if self.lora_r == 0 and self.init_adapter is not None:
            raise ValueError("init_adapter needs LoRA: set lora_r above 0 or remove init_adapter")
        if self.rollout_engine == "vllm" and self.lora_r == 0:
            raise ValueError(
                "rollout_engine vllm hot-loads LoRA adapters: set lora_r above 0 or use rollout_engine policy"
            )
        if self.device != "auto" and not re.fullmatch(r"cpu|cuda(:\d+)?", self.device):
            raise ValueError(f"device {self.device!r} is not one of auto, cpu, cuda, cuda:N")
        if self.eps_high < self.eps_low:
            raise ValueError("eps_high below eps_low narrows the upper range: use eps_high >= eps_low (0.2-0.28)")
        return self

    data: DataConfig = Field(default_factory=DataConfig, description="What the samples are made of.")


PRESETS: dict[str, dict] = {
    # MemAgent's recipe (its verl launch script for the 7B/14B models): G=16, advantage = reward −
    # group mean, KL low_var_kl β=1e-3, clip 0.2 both sides, lr 1e-6 after 20 warm-up steps, T=1.0,
    # token-mean loss; 5000-token chunks, 1024-token memory, MemAgent's own prompt order. For GPUs.
    "memagent": dict(
        lora_r=0,
        template_set="memagent",
        chunk_tokens=5000,
        memory_tokens=1024,
        answer_tokens=1024,
        learning_rate=1e-6,
        warmup_steps=20,
        group_size=16,
        samples_per_step=16,
        temperature=1.0,
        scale_advantage_by_std=False,
        eps_low=0.2,
        eps_high=0.2,
        kl_coef=1e-3,
        reward_rule="exact_match",
        rl_steps=400,
        micro_batch_tokens=65536,
        data=dict(curriculum=[(28_000, 1_000_000)]),
    ),
    # The embedded default: SmolLM2-135M with LoRA on two CPU cores. Sized so that a step takes
    # minutes, not hours: 512-token chunks (served with 1024 since 2026-11-27: README), short documents first.
    "small": dict(),
}


def load_config(path: Path | str) -> TrainConfig:
    """A TOML file (optionally `preset = NAME` plus overrides), a JSON file of the same keys (a run
    folder's config.json, as the training worker runs it) or a preset name."""
    if str(path) in PRESETS:
        return make_config({"preset": str(path)})
    path = Path(path)
    try:
        text = path.read_text()
        raw = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file (or a preset: {', '.join(PRESETS)})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a config is an object of settings, not {type(raw).__name__}")
    return make_config(raw, where=str(path))


def make_config(raw: dict, where: str = "config") -> TrainConfig:
    raw = dict(raw)
    preset = raw.pop("preset", None)
    if preset is not None and preset not in PRESETS:
        raise ConfigError(f"{where}: unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    merged = {**PRESETS.get(preset, {}), **raw}
    if isinstance(PRESETS.get(preset, {}).get("data"), dict) and isinstance(raw.get("data"), dict):
        merged["data"] = {**PRESETS[preset]["data"], **raw["data"]}
    try:
        return TrainConfig(**merged)
    except ValidationError as exc:
        lines = [f"{where}: {len(exc.errors())} setting(s) to fix:"]
        for e in exc.errors():
            field = ".".join(str(p) for p in e["loc"]) or "config"
            lines.append(f"  {field}: {e['msg']}" + (f" (got {e['input']!r:.60})" if "input" in e and e["loc"] else ""))
        raise ConfigError("\n".join(lines)) from None


class ConfigError(ValueError):
    """A config that cannot run; the message lists every field to change."""


def describe(config: TrainConfig) -> str:
    """The config as TOML-ish lines with each field's help, for logs and the run folder."""
    out = []
    for name, field in type(config).model_fields.items():
        if name != "data":
            out.append(f"{name} = {getattr(config, name)!r}  # {field.description}")
    for name, field in DataConfig.model_fields.items():
        out.append(f"data.{name} = {getattr(config.data, name)!r}  # {field.description}")
    return "\n".join(out)
