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

from collections.abc import Callable
from typing import TypeVar

import jax
import jax.numpy as jnp
import optax

T = TypeVar("T")


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


def on_due_steps(updates: jax.Array, n: int, terms: Callable[[], tuple[T, dict[str, jax.Array]]],
                 ) -> tuple[T, dict[str, jax.Array]]:
    """`terms()` -> (losses, metrics) of a part that `every_nth(., n)` delays, computed only on the
    optimizer steps it learns (`updates`, the steps taken so far, % n == 0: a `lax.cond`, so the
    skipped steps cost nothing, forward or backward), zeros on the others, whose gradients
    `every_nth` would mask anyway. The metrics come back x n on the steps that learn, so that their
    mean over a whole multiple of n steps (a learner step's scan) is their mean over those steps."""
    if n == 1:
        return terms()

    def due() -> tuple[T, dict[str, jax.Array]]:
        losses, metrics = terms()
        return losses, {k: v * n for k, v in metrics.items()}

    def idle() -> tuple[T, dict[str, jax.Array]]:
        return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(due))

    return jax.lax.cond(updates % n == 0, due, idle)
