"""Multi-conversation GRPO/DAPO as pure functions on tensors (no model, no data, no I/O).

A rollout is one whole reading of one sample: K chunk conversations and the final one. Only the
final answer is scored; that one reward becomes one advantage (relative to the other rollouts of
the same sample) and applies to every generated token of every conversation of the rollout.
The trainer flattens all conversations into rows of tokens; these functions work per token.
"""

from __future__ import annotations

import torch

Tensor = torch.Tensor


def group_advantages(rewards: Tensor, scale_by_std: bool = False, eps: float = 1e-6) -> Tensor:
    """Advantage of each rollout within its group: reward − group mean (optionally ÷ group std).

    `rewards` is [groups, rollouts per group]; MemAgent's recipe does not divide by the std.

    >>> group_advantages(torch.tensor([[1., 0., 0., 1.]]))
    tensor([[ 0.5000, -0.5000, -0.5000,  0.5000]])
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [groups, rollouts], got shape {tuple(rewards.shape)}")
    advantages = rewards - rewards.mean(dim=1, keepdim=True)
    if scale_by_std:
        advantages = advantages / (rewards.std(dim=1, keepdim=True) + eps)
    return advantages


def informative_groups(rewards: Tensor) -> Tensor:
    """Groups whose rollouts did not all earn the same reward: the others have zero advantage
    everywhere and carry no signal (DAPO's dynamic sampling filters them out).

    >>> informative_groups(torch.tensor([[1., 1.], [0., 1.], [0., 0.]]))
    tensor([False,  True, False])
    """
    return (rewards != rewards[:, :1]).any(dim=1)


def token_log_probs(logits: Tensor, targets: Tensor) -> Tensor:
    """log p(target token) at each position; `logits` [..., T, V] already aligned with `targets` [..., T]."""
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def clipped_policy_loss(
    log_probs: Tensor, old_log_probs: Tensor, advantages: Tensor, eps_low: float, eps_high: float
) -> tuple[Tensor, Tensor]:
    """PPO's clipped surrogate per token, with DAPO's asymmetric range [1 − ε_low, 1 + ε_high].

    Returns (loss per token, whether the clipped branch was taken per token). With
    `old_log_probs == log_probs.detach()` (one update per batch of rollouts) the ratio is 1, the
    loss is −advantage and nothing clips, but the gradient is the policy gradient.
    """
    ratio = torch.exp(log_probs - old_log_probs)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    return torch.maximum(unclipped, clipped), clipped > unclipped


def k3_kl(log_probs: Tensor, ref_log_probs: Tensor, clamp: float = 10.0) -> Tensor:
    """The k3 estimator of KL(policy ‖ reference) per token (verl's `low_var_kl`):
    exp(ref − logp) − (ref − logp) − 1, always ≥ 0, clamped for stability.

    >>> k3_kl(torch.tensor([0.0]), torch.tensor([0.0]))
    tensor([0.])
    """
    delta = (ref_log_probs - log_probs).clamp(-20.0, 20.0)
    return (torch.exp(delta) - delta - 1.0).clamp(max=clamp)


def masked_sum(values: Tensor, mask: Tensor) -> Tensor:
    return (values * mask).sum()
