"""Optimizer pieces the off-policy agents share: delayed updates (TD3's actor every policy_delay
critic steps, SAC's actor and temperature every policy_frequency).

A delayed part of the networks takes its inner transformation's step only on every n-th optimizer
step; on the others its update is zero and its inner state (Adam's moments and step count) is left
as it was, so n optimizer steps are one inner step. This is optax's own
`optax.transforms.conditionally_mask` (optax >= 0.2.3), not `optax.MultiSteps`, which averages the
gradients of the n steps into one update. Combine with `optax.partition` (one transformation per
part of the networks, by a prefix tree of labels) to give each part its own learning rate and delay.
"""

from __future__ import annotations

import jax
import optax


def every_nth(inner: optax.GradientTransformation, n: int) -> optax.GradientTransformation:
    """`inner` applied on optimizer steps 0, n, 2n, ... (the first step included, as CleanRL's
    `global_step % policy_frequency == 0` from an even learning_starts); zero updates and the inner
    state unchanged on the others. n = 1 is `inner` itself."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"every_nth takes a period n >= 1, got {n!r}")
    if n == 1:
        return inner

    def due(step: jax.Array) -> jax.Array:
        return step % n == 0

    return optax.transforms.conditionally_mask(inner, due)
