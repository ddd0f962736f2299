"""The trainer on the real bundled SmolLM2 (in-process, CPU), on tasks small enough for a test:
RL raises the reward of a tiny task, and an interrupted run resumes to the same weights."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from training.config import make_config
from training.policy import run_precision
from training.tasks import ABSENT, NO_EVIDENCE_MEMORY, NOT_IN_DOCUMENT, Task
from training.tracking import read_scalars
from training.trainer import Trainer
from training.verifier import reward

pytestmark = pytest.mark.model

WORDS = ["amber", "violet", "copper", "indigo", "scarlet", "silver", "olive", "teal"]


def tiny_tasks(step: int, n: int, salt: str = "train") -> list[Task]:
    """One sentence, one chunk: the password is a colour word. The untrained model names it in
    part of its sampled answers, which is what gives GRPO groups with unequal rewards."""
    rng = random.Random(f"{salt}:{step}")
    tasks = []
    for i in range(n):
        word = rng.choice(WORDS)
        doc = f"Note for the guard: the password for tonight is {word}."
        tasks.append(Task(f"tiny-{step}-{i}", doc, "What is the password for tonight?", (word,), (doc,), "tiny", 16))
    return tasks


def tiny_config(**overrides):
    base = dict(
        preset="small",
        chunk_tokens=64,
        memory_tokens=32,
        answer_tokens=16,
        samples_per_step=4,
        group_size=8,
        learning_rate=1e-3,
        warmup_steps=0,
        reward_rule="sub_em",
        save_every=2,
        seed=3,
        threads=2,
        micro_batch_tokens=1024,
        # as the recipes: bfloat16 forward passes where the CPU computes them natively, float32 where it would
        # emulate them (run_precision); 1.5x faster on an AVX-512 BF16 CPU
        precision="bfloat16",
        data=dict(contracts=False),
    )
    return make_config({**base, **overrides})


def mean_reward(trainer: Trainer, tasks: list[Task]) -> float:
    """Sampled answers (T=1, G per task, fixed seed) scored like the training reward."""
    groups = trainer.rollouts(tasks)
    scores = [
        reward(t.answer.output, task.answers, trainer.config.reward_rule)
        for task, group in zip(tasks, groups)
        for t in group
    ]
    return sum(scores) / len(scores)


def test_grpo_raises_the_reward_of_a_tiny_task(model_path: Path, tmp_path: Path) -> None:
    # 2 steps of 2 groups at twice the rate: 3 steps of 4 groups took 510 s of CI's 90 minutes
    config = tiny_config(rl_steps=2, samples_per_step=2, learning_rate=2e-3)
    trainer = Trainer(config, tmp_path, model_path, tiny_tasks)
    held_out = tiny_tasks(0, 4, salt="eval")
    trainer.step = 10_000  # seeds the evaluation's sampling apart from every training step
    before = mean_reward(trainer, held_out)
    trainer.step = 0
    trainer.run()
    trainer.step = 10_000
    after = mean_reward(trainer, held_out)
    metrics = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    print(f"reward before {before:.3f}, after {after:.3f}; per step {[m['reward'] for m in metrics]}")
    assert after >= before + 0.2, (before, after)
    assert [m["step"] for m in metrics] == [1, 2]
    assert {"reward", "accuracy", "loss", "kl", "clip_fraction", "tokens_per_s", "eta_s"} <= metrics[0].keys()
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    assert (tmp_path / "curve.png").stat().st_size > 10_000
    tracked = read_scalars(trainer.tracking_dir)  # the experiment tracker has every step, as metrics.jsonl
    assert [s for s, _ in tracked["rl/reward"]] == [1, 2]
    assert [v for _, v in tracked["rl/reward"]] == pytest.approx([m["reward"] for m in metrics])


def test_an_interrupted_run_resumes_to_the_same_weights(model_path: Path, tmp_path: Path) -> None:
    config = tiny_config(
        sft_steps=3, rl_steps=1, save_every=1, sft_samples_per_step=2, samples_per_step=2, group_size=4
    )
    whole = Trainer(config, tmp_path / "whole", model_path, tiny_tasks)
    whole.run()

    first = Trainer(config, tmp_path / "pieces", model_path, tiny_tasks)
    first.run(max_steps=2)
    del first  # the process that ran the first piece is gone; only its folder remains
    second = Trainer(config, tmp_path / "pieces", model_path, tiny_tasks)
    second.resume()
    assert second.step == 2
    second.run()

    trained = [n for n, p in whole.model.named_parameters() if p.requires_grad]
    a, b = dict(whole.model.named_parameters()), dict(second.model.named_parameters())
    assert trained and all(torch.allclose(a[n], b[n], atol=1e-6) for n in trained)
    assert not all(torch.equal(a[n], torch.zeros_like(a[n])) for n in trained if "lora_B" in n)
    steps = [json.loads(line)["step"] for line in (tmp_path / "pieces" / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]


def test_bfloat16_forward_passes_train_float32_weights_to_nearly_the_same_loss(
    model_path: Path, tmp_path: Path
) -> None:
    losses = {}
    for precision in ("float32", "bfloat16"):
        trainer = Trainer(
            tiny_config(sft_steps=1, rl_steps=0, precision=precision, sft_samples_per_step=1),
            tmp_path / precision,
            model_path,
            tiny_tasks,
        )
        # a run takes bfloat16 only where it is native (test_a_runs_precision_follows_the_cpu) ...
        assert trainer.precision == run_precision(precision, "cpu")
        # ... and autocast is checked on any CPU: one sample, as it is emulated, and slow, without AVX-512 BF16
        trainer.precision = precision
        losses[precision] = trainer.sft_step().metrics["loss"]
        assert trainer.params and all(
            p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in trainer.params
        )
    print(losses)
    assert losses["bfloat16"] != losses["float32"]  # autocast took effect
    assert abs(losses["bfloat16"] - losses["float32"]) < 0.03 * losses["float32"]


def test_the_anchor_holds_the_memory_updates_that_are_not_taught(model_path: Path, tmp_path: Path) -> None:
    # answers taught at a high rate; each sample's one memory update anchored to the starting model, weakly or strongly
    kl = {}
    for weight in (1e-3, 10.0):
        config = tiny_config(
            sft_steps=3,
            rl_steps=0,
            sft_samples_per_step=4,
            sft_learning_rate=1e-2,
            sft_updates="none",
            sft_anchor=weight,
        )
        trainer = Trainer(config, tmp_path / str(weight), model_path, tiny_tasks)
        assert [r.anchor for r in trainer.sft_rows(tiny_tasks(0, 2))] == [True, False, True, False]
        start = {n: p.detach().clone() for n, p in trainer.anchor.named_parameters()}
        kl[weight] = [trainer.sft_step().metrics["anchor_kl"] for _ in range(3)]
        assert all(torch.equal(p, start[n]) for n, p in trainer.anchor.named_parameters())  # it stays frozen
    print(kl)
    # The policy starts as the anchor: 0.0 in float32; in bfloat16 the two models' passes round apart (0.00029 on a
    # 2-core AMX Xeon, 2026-12-07), against the 1.2 one taught step makes.
    assert kl[1e-3][0] == kl[10.0][0] == pytest.approx(0.0, abs=1e-3)
    assert kl[1e-3][-1] > 0.01 and kl[10.0][-1] < kl[1e-3][-1] / 2  # the answers taught move the updates, unless held


def test_sft_rows_carry_evidence_and_take_a_feedback_answer_as_evidence(model_path: Path, tmp_path: Path) -> None:
    fact = "The vault code of Ada Brill is 4417."
    filler = [f"Sentence number {i} says nothing of any vault." for i in range(40)]
    doc = " ".join(filler[:5] + [fact] + filler[5:])
    planted = Task("planted", doc, "What is the vault code of Ada Brill?", ("4417",), (fact,), "single-needle", 0)
    # feedback: no evidence, the answer in the document (kept) or not (left out)
    judged = Task("fb", doc, "What is the vault code of Ada Brill?", ("4417",), kind="feedback")
    unfound = Task("fb-2", doc, "Who wrote it?", ("Nobody Known",), kind="feedback")
    config = tiny_config(sft_steps=1, rl_steps=0, chunk_tokens=48)
    trainer = Trainer(config, tmp_path, model_path, tiny_tasks)
    chunks = len(trainer.agent.chunks(doc))
    assert chunks >= 6
    decode = trainer.tokenizer.decode

    def targets(rows):
        return [decode(r.completion_ids, skip_special_tokens=True).strip() for r in rows]

    plain = targets(trainer.sft_rows([planted]))  # one gain, one keep drawn at random, the answer
    kept = next(t for t in plain if fact in t)  # the fact's sentence, as the oracle memory holds it
    assert len(plain) == 3 and plain[-1] == r"\boxed{4417}"
    trainer.config.sft_carry = 3
    carried = targets(trainer.sft_rows([planted]))
    assert len(carried) == 6 and carried.count(kept) >= 4  # the gain and the three carries keep the fact
    trainer.config.sft_carry, trainer.config.sft_keeps = 0, 3
    keeps = targets(trainer.sft_rows([planted]))
    assert len(keeps) == 5 and keeps[-1] == r"\boxed{4417}"  # the gain, 3 keeps, the answer
    assert kept in keeps and set(keeps[:-1]) <= {kept, NO_EVIDENCE_MEMORY}
    trainer.config.sft_carry, trainer.config.sft_keeps = 3, 1
    assert targets(trainer.sft_rows([judged, unfound])) == targets(trainer.sft_rows([judged]))
    assert kept in targets(trainer.sft_rows([judged]))

    # a memory that keeps sentences writes nothing to teach: one conversation, the answer from the final memory its
    # capture keeps (the fact's sentence, verbatim), and none for a task whose memory kept nothing
    trainer.config.memory_policy = "extractive"
    (answer,) = trainer.sft_rows([planted, Task("none", "Nothing here.", "Who won the 1913 Tour?", ("X",))])
    assert targets([answer]) == [r"\boxed{4417}"] and fact in decode(answer.prompt_ids)
    unheld = replace(planted, id="unheld", answers=("9999",))  # its memory keeps the fact, not this answer
    assert trainer.sft_rows([unheld]) == []
    trainer.config.sft_answers_supported = False  # round 1's way: every answer taught from what the capture kept
    assert targets(trainer.sft_rows([unheld])) == [r"\boxed{9999}"]
    trainer.config.sft_answers_supported = True
    trainer.config.memory_policy = "generative"

    # the policy echoed the question on every chunk: corrections go from its memory to the oracle's, up to
    # the chunk that holds the fact, never past it (its echo no longer holds what the oracle would keep)
    echo = "Ada Brill's vault code."
    late = Task("late", " ".join(filler[:20] + [fact] + filler[20:]), planted.question, ("4417",), (fact,))
    chunks = len(trainer.agent.chunks(late.document))
    trainer.config.sft_carry, trainer.config.sft_corrections = 0, 20
    rows = trainer.sft_rows([late], {"late": [echo] * chunks})
    fixes = [(decode(r.prompt_ids), t) for r, t in zip(rows[2:-1], targets(rows[2:-1]))]
    assert fixes and all(echo in prompt for prompt, _ in fixes[1:])  # the first chunk has no memory yet
    assert [t for _, t in fixes[:-1]] == [NO_EVIDENCE_MEMORY] * (len(fixes) - 1) and fixes[-1][1].startswith(fact)
    assert len(fixes) > 1 and fact in fixes[-1][0] and len(fixes) < chunks
    trainer.config.sft_corrections = 2  # over the limit: the missed capture, then the first mistake
    assert targets(trainer.sft_rows([late], {"late": [echo] * chunks}))[2:-1] == [NO_EVIDENCE_MEMORY, fixes[-1][1]]

    # sft_echoes: the same lesson from the question's echo, without a reading: dropped before the fact, replaced at it
    trainer.config.sft_corrections, trainer.config.sft_keeps, trainer.config.sft_echoes = 0, 0, 3
    rows = trainer.sft_rows([late])
    restated = "<memory>\nThe vault code of Ada Brill.\n</memory>"  # question_echo's, in the prompt
    echoed = [(decode(r.prompt_ids), t) for r, t in zip(rows, targets(rows)) if restated in decode(r.prompt_ids)]
    assert [t for _, t in echoed[:-1]] == [NO_EVIDENCE_MEMORY] * 2 and echoed[-1][1].startswith(fact)
    assert (
        fact in echoed[-1][0] and len(rows) == 1 + 2 + 1 + 1
    )  # the gain, 2 echoes before it, the echo at it, the answer

    # the answer step alone: no memory update is taught; the answer from the oracle's memory and from the
    # fact's passage as the reader keeps it (from its sentence on, to the memory's cap)
    trainer.config.sft_echoes, trainer.config.sft_updates, trainer.config.sft_passage_answers = 0, "none", True
    rows = trainer.sft_rows([planted])
    prompts = [decode(r.prompt_ids) for r in rows]
    assert targets(rows) == [r"\boxed{4417}"] * 2 and all("<section>" not in p for p in prompts)
    assert f"<memory>\n{kept}\n</memory>" in prompts[0] and f"<memory>\n{fact} {filler[5]}" in prompts[1]
    trainer.config.sft_updates = "planted"  # a planted fact's updates are rehearsed, a contract's are not
    assert len(trainer.sft_rows([planted])) == 3 and len(trainer.sft_rows([replace(planted, kind="contract:X")])) == 2
    trainer.config.sft_updates, trainer.config.sft_passage_answers = "all", False

    # a fact the document does not hold: keeps of the empty memory (no echoes: nothing replaces them), and the
    # answer that the document does not say; no answer sentence is looked for
    absent = Task("absent", doc, "What is the vault code of Cy Marl?", (NOT_IN_DOCUMENT,), kind=ABSENT)
    trainer.config.sft_keeps = 2
    assert targets(trainer.sft_rows([absent])) == [NO_EVIDENCE_MEMORY] * 2 + [rf"\boxed{{{NOT_IN_DOCUMENT}}}"]
