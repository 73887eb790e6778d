"""Transition replay: one learner device's shard (WIP: the sampled batch type first)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax


class Transitions(NamedTuple):
    """A batch of n-step transitions [b, ...], what an off-policy loss learns from:
    target = reward + discount * V(next_obs)."""

    obs: Any  # [b, ...] (a pytree for Dict spaces)
    action: jax.Array  # [b, ...] the action taken at obs
    reward: jax.Array  # float32 [b]: sum_{k < n'} gamma^k r_{t+k+1}, n' <= n steps (fewer where the episode ended)
    discount: jax.Array  # float32 [b]: gamma^n' to bootstrap with, 0 where the episode terminated within them
    next_obs: Any  # [b, ...] the observation n' steps later (a truncated episode's last observation)
