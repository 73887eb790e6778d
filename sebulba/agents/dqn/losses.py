"""DQN's targets and TD loss, pure and batched over transitions."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def q_learning_target(reward: jax.Array, discount: jax.Array, q_next_online: jax.Array, q_next_target: jax.Array,
                      double: bool = True) -> jax.Array:
    """[b]: reward + discount * Q_target(next, a*), with a* = argmax Q_online(next) (double
    Q-learning, van Hasselt et al. 2016) or argmax Q_target(next) (DQN). reward and discount are
    the replay's n-step ones; q_next_* [b, A]."""
    chooser = q_next_online if double else q_next_target
    best = jnp.argmax(chooser, -1)
    return reward + discount * jnp.take_along_axis(q_next_target, best[:, None], -1)[:, 0]


def td_loss(td: jax.Array, huber_delta: float | None) -> jax.Array:
    """Per transition: Huber(td) with delta (quadratic within it, linear beyond), or 0.5 td^2."""
    if huber_delta is None:
        return 0.5 * td**2
    abs_td = jnp.abs(td)
    quadratic = jnp.minimum(abs_td, huber_delta)
    return 0.5 * quadratic**2 + huber_delta * (abs_td - quadratic)
