"""Advantage, loss, KL and verifier against values computed by hand; doctests of training/."""

from __future__ import annotations

import doctest
import importlib
import math

import pytest
import torch

from training.algorithms import clipped_policy_loss, group_advantages, informative_groups, k3_kl, token_log_probs
from training.verifier import exact_match, normalize, reward, sub_em


@pytest.mark.parametrize("module", ["training.algorithms", "training.verifier", "training.data", "training.tasks",
                                    "training.rollout_server", "training.interpolate"])
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


def test_advantage_is_reward_minus_group_mean() -> None:
    rewards = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    assert torch.allclose(group_advantages(rewards), torch.tensor([[0.75, -0.25, -0.25, -0.25], [0.5, 0.5, -0.5, -0.5]]))


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


def test_verifier_rules() -> None:
    assert normalize("The  Laws of the State of NEVADA.") == "laws of state of nevada"
    assert sub_em("laws of the State of Nevada", ["Nevada"]) and not exact_match("laws of Nevada", ["Nevada"])
    assert reward(r"memory says \boxed{Nevada}", ["nevada"], "exact_match") == 1.0
    # only the last boxed answer counts
    assert reward(r"\boxed{Nevada} no, \boxed{Texas}", ["Nevada"], "sub_em") == 0.0
    assert reward("no idea", ["Nevada"], "sub_em") == 0.0
    # a partial answer earns nothing: one of two codes, or a word of the gold (RL would learn to give them)
    assert reward(r"\boxed{9484490}", ["1635316, 9484490"], "sub_em") == 0.0
    assert reward(r"\boxed{State}", ["State of Nevada"], "sub_em") == 0.0
    with pytest.raises(ValueError, match="unknown rule"):
        reward("x", ["x"], "fuzzy")  # type: ignore[arg-type]


def test_verifier_compares_dates_as_dates() -> None:
    # the held-out contracts' answers the reader gave right in another form than CUAD's M/D/YY
    for written in ("11/19/1999", "November 19, 1999", "Nov. 19th, 1999", "19 November 1999",
                    "the 19th day of November, 1999"):
        assert reward(rf"\boxed{{{written}}}", ["11/19/99"], "exact_match") == 1.0, written
    assert reward(r"\boxed{made on 3/29/1999 by the Company}", ["3/29/99"], "sub_em") == 1.0
    assert reward(r"\boxed{made on 3/29/1999 by the Company}", ["3/29/99"], "exact_match") == 0.0
    # as text without punctuation "1/1/16" is "1116", which "11/16/2020" holds; as dates they differ
    assert reward(r"\boxed{11/16/2020}", ["1/1/16"], "sub_em") == 0.0
    assert reward(r"\boxed{19/12/18}", ["12/19/18"], "sub_em") == 0.0  # day first is no US date
    assert reward(r"\boxed{December 19, 2018}", ["[]/[]/2009"], "sub_em") == 0.0  # a partial gold stays text
