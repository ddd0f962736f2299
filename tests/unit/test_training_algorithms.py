"""Advantage, loss and KL against values computed by hand; doctests of training/ (the verifier: test_verifier.py)."""

from __future__ import annotations

import doctest
import importlib
import math
import random

import pytest
import torch

from training.algorithms import clipped_policy_loss, group_advantages, informative_groups, k3_kl, token_log_probs
from training.policy import Row, fewer_anchors, run_precision


@pytest.mark.parametrize(
    "module",
    [
        "training.algorithms",
        "training.verifier",
        "training.data",
        "training.evidence_tasks",
        "training.tasks.contracts",
        "training.tasks.feedback",
        "training.tasks.oracle",
        "training.rollout_server",
        "training.interpolate",
        "training.policy",
        "inference.dates",  # the verifier's dates, which the agent's answers use too
        "inference.contract_review",  # the verifier's normalize and first yes/no, which the review reads too
    ],
)
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


def test_advantage_is_reward_minus_group_mean() -> None:
    rewards = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    assert torch.allclose(
        group_advantages(rewards), torch.tensor([[0.75, -0.25, -0.25, -0.25], [0.5, 0.5, -0.5, -0.5]])
    )


def test_advantage_divided_by_group_std() -> None:
    # std of (1, 0, 0, 0) with Bessel's correction: sqrt((0.75² + 3·0.25²) / 3) = 0.5
    a = group_advantages(torch.tensor([[1.0, 0.0, 0.0, 0.0]]), scale_by_std=True, eps=0.0)
    assert torch.allclose(a, torch.tensor([[1.5, -0.5, -0.5, -0.5]]))


def test_equal_groups_carry_no_signal() -> None:
    rewards = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    assert informative_groups(rewards).tolist() == [False, False, True]
    assert group_advantages(rewards)[:2].abs().sum() == 0


def test_clipped_loss_by_hand() -> None:
    # ratios 1.5, 1.5, 0.5, 0.5 with advantages +1, -1, +1, -1; range [0.8, 1.28]
    log_probs = torch.log(torch.tensor([1.5, 1.5, 0.5, 0.5]))
    old = torch.zeros(4)
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0])
    loss, clipped = clipped_policy_loss(log_probs, old, adv, eps_low=0.2, eps_high=0.28)
    # +1 and ratio 1.5: min gain capped at 1.28; -1 and 1.5: full penalty 1.5;
    # +1 and 0.5: unclipped -0.5 is the larger loss; -1 and 0.5: capped at 0.8
    assert torch.allclose(loss, torch.tensor([-1.28, 1.5, -0.5, 0.8]))
    assert clipped.tolist() == [True, False, False, True]


def test_on_policy_gradient_is_advantage_times_score() -> None:
    # ratio 1 (old = current, detached): d loss / d logp = -advantage, and nothing clips
    log_probs = torch.tensor([-0.3, -2.0], requires_grad=True)
    loss, clipped = clipped_policy_loss(log_probs, log_probs.detach(), torch.tensor([0.5, -0.25]), 0.2, 0.28)
    loss.sum().backward()
    assert torch.allclose(log_probs.grad, torch.tensor([-0.5, 0.25]))
    assert not clipped.any()


def test_k3_kl_by_hand() -> None:
    # p = 0.5, ref = 0.25: delta = log(0.25/0.5) = -ln 2; k3 = 0.5 + ln 2 - 1
    kl = k3_kl(torch.log(torch.tensor([0.5, 0.3])), torch.log(torch.tensor([0.25, 0.3])))
    assert kl[0].item() == pytest.approx(0.5 + math.log(2) - 1, abs=1e-6)
    assert kl[1].item() == pytest.approx(0.0, abs=1e-7)


def test_token_log_probs_by_hand() -> None:
    logits = torch.tensor([[0.0, math.log(3.0)], [math.log(3.0), 0.0]])
    lp = token_log_probs(logits, torch.tensor([1, 1]))
    assert torch.allclose(lp, torch.log(torch.tensor([0.75, 0.25])))


def test_a_step_keeps_every_taught_row_and_at_most_so_many_anchored_ones() -> None:
    rows = [Row([1], [i], anchor=i % 3 != 0) for i in range(12)]  # 4 taught, 8 anchored
    kept = fewer_anchors(rows, 3, random.Random(0))
    assert [r.completion_ids for r in kept if not r.anchor] == [[0], [3], [6], [9]]
    assert sum(r.anchor for r in kept) == 3
    assert [r.completion_ids[0] for r in kept] == sorted(r.completion_ids[0] for r in kept)  # in their order
    assert fewer_anchors(rows, 8, random.Random(0)) == rows


@pytest.mark.parametrize(
    ("flags", "device", "asked", "runs"),
    [
        ("fpu avx avx2 fma", "cpu", "bfloat16", "float32"),  # AVX2 only: bfloat16 would be emulated, >5x slower
        ("fpu avx2 avx512f avx512bw", "cpu", "bfloat16", "float32"),  # AVX-512 without its BF16 extension
        ("fpu avx2 avx512f avx512_bf16", "cpu", "bfloat16", "bfloat16"),
        ("fpu avx2 amx_bf16 amx_tile", "cpu", "bfloat16", "bfloat16"),
        ("fpu avx avx2 fma", "cuda", "bfloat16", "bfloat16"),  # a GPU computes it natively, whatever the CPU
        ("fpu avx2 avx512f avx512_bf16", "cpu", "float32", "float32"),  # float32 is never changed
    ],
)
def test_a_runs_precision_follows_the_cpu(flags: str, device: str, asked: str, runs: str) -> None:
    assert run_precision(asked, device, f"processor\t: 0\nflags\t\t: {flags}\n") == runs
