"""Generalized advantage estimation (Schulman et al. 2016) over one unbatched trajectory.

rlax style: rank-1 inputs (time only); callers `jax.vmap` over the batch (`in_axes=1` for our
time-major trajectories). `episode_gae` takes a trajectory as the env pool gives it (flags per env
step, DESIGN.md "The Sebulba core"): a terminated episode's last state is worth 0; a truncated
one's last observation arrives at env_step[t + 1] and its value is the bootstrap; the step after
either is the pool's auto-reset, whose action is discarded: it is masked, and nothing accumulates
across it, so two episodes never mix.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from sebulba.episodes import transitions

Array = jax.Array


def gae(values: Array, rewards: Array, discounts: Array, continues: Array, lambda_: chex.Numeric) -> Array:
    """Advantages A_s = delta_s + discounts_s * lambda * continues_s * A_{s+1}, A_T = 0, with
    delta_s = rewards_s + discounts_s * values_{s+1} - values_s.

    Args:
      values: [T + 1] V(x_0) ... V(x_T) (V(x_T) bootstraps the last step).
      rewards: [T] the reward of transition s (r_{s+1}).
      discounts: [T] gamma, or 0 where x_{s+1} is terminal.
      continues: [T] 1, or 0 where x_{s+1} ends its episode (terminated or truncated): A_{s+1}
        belongs to another episode then.
      lambda_: GAE's lambda.
    """
    chex.assert_rank([values, rewards, discounts, continues], 1)
    chex.assert_equal_shape([rewards, discounts, continues])
    chex.assert_shape(values, (rewards.shape[0] + 1,))
    deltas = rewards + discounts * values[1:] - values[:-1]
    factors = discounts * lambda_ * continues

    def back(acc, x):
        delta, factor = x
        acc = delta + factor * acc
        return acc, acc

    _, advantages = jax.lax.scan(back, jnp.zeros_like(deltas[0]), (deltas, factors), reverse=True)
    return jax.lax.stop_gradient(advantages)


def episode_gae(values: Array, rewards: Array, terminated: Array, truncated: Array, discount: float,
                lambda_: chex.Numeric) -> tuple[Array, Array]:
    """GAE for a trajectory indexed by env step: values, rewards (rewards[t] arrived with env step
    t), terminated and truncated are [T + 1]. Returns (advantages [T], 0 where masked; valid [T]:
    False for a transition out of a final state, the auto-reset)."""
    chex.assert_rank([values, rewards, terminated, truncated], 1)
    chex.assert_equal_shape([values, rewards, terminated, truncated])
    discounts, continues, valid = transitions(terminated, truncated, discount, values.dtype)
    advantages = gae(values, rewards[1:].astype(values.dtype), discounts, continues, lambda_)
    return jnp.where(valid, advantages, 0.0), valid
