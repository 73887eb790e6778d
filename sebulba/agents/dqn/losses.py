"""DQN's targets and losses, pure and batched over transitions: the scalar TD loss, C51's
categorical projection and cross-entropy, QR-DQN's quantile Huber loss."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def q_learning_target(reward: jax.Array, discount: jax.Array, q_next_online: jax.Array, q_next_target: jax.Array,
                      double: bool = True) -> jax.Array:
    """[b]: reward + discount * Q_target(next, a*), with a* = argmax Q_online(next) (double
    Q-learning, van Hasselt et al. 2016) or argmax Q_target(next) (DQN). reward and discount are
    the replay's n-step ones; q_next_* [b, A]."""
    best = bootstrap_action(q_next_online, q_next_target, double)
    return reward + discount * jnp.take_along_axis(q_next_target, best[:, None], -1)[:, 0]


def bootstrap_action(q_next_online: jax.Array, q_next_target: jax.Array, double: bool) -> jax.Array:
    """int [b]: the action a target bootstraps from, argmax of the online network's Q-values [b, A]
    (double Q-learning) or of the target network's (DQN)."""
    return jnp.argmax(q_next_online if double else q_next_target, -1)


def td_loss(td: jax.Array, huber_delta: float | None) -> jax.Array:
    """Per transition: Huber(td) with delta (quadratic within it, linear beyond), or 0.5 td^2."""
    if huber_delta is None:
        return 0.5 * td**2
    abs_td = jnp.abs(td)
    quadratic = jnp.minimum(abs_td, huber_delta)
    return 0.5 * quadratic**2 + huber_delta * (abs_td - quadratic)


def categorical_projection(atoms: jax.Array, reward: jax.Array, discount: jax.Array, probs: jax.Array) -> jax.Array:
    """[b, N]: the distribution of reward + discount * Z, Z on `atoms` [N] (evenly spaced, ascending)
    with `probs` [b, N], projected back onto the atoms (C51, Bellemare et al. 2017, Algorithm 1).
    Each shifted atom, clipped to [atoms[0], atoms[-1]], splits its probability between the two
    support atoms around it in proportion to its closeness to each (all of it to an atom it lands
    on). reward, discount [b]: the replay's n-step ones."""
    dz = (atoms[-1] - atoms[0]) / (atoms.shape[0] - 1)
    shifted = jnp.clip(reward[:, None] + discount[:, None] * atoms, atoms[0], atoms[-1])  # [b, N_j]
    # weight[b, i, j]: the share of shifted atom j that support atom i takes (a hat of width 2 dz)
    weight = jnp.clip(1.0 - jnp.abs(shifted[:, None, :] - atoms[None, :, None]) / dz, 0.0, 1.0)
    return jnp.einsum("bij,bj->bi", weight, probs)


def categorical_loss(logits: jax.Array, target_probs: jax.Array) -> jax.Array:
    """[b]: the cross-entropy of the target distribution [b, N] against softmax(logits [b, N])."""
    return -jnp.sum(target_probs * jax.nn.log_softmax(logits), -1)


def quantile_fractions(num_quantiles: int) -> jax.Array:
    """[N]: the quantile midpoints tau_i = (2 i + 1) / 2N that QR-DQN's N outputs estimate."""
    return (2.0 * jnp.arange(num_quantiles, dtype=jnp.float32) + 1.0) / (2.0 * num_quantiles)


def quantile_huber_loss(quantiles: jax.Array, targets: jax.Array, huber_delta: float | None) -> jax.Array:
    """[b]: QR-DQN's loss (Dabney et al. 2018, eq. 10) of quantiles [b, N] (at `quantile_fractions`)
    against target samples [b, M]: for u = target_j - quantile_i, |tau_i - 1{u < 0}| x Huber(u) /
    delta (with delta None: |u|), the mean over the targets j, summed over the quantiles i."""
    taus = quantile_fractions(quantiles.shape[-1])
    u = targets[:, None, :] - quantiles[:, :, None]  # [b, N, M]
    scale = jnp.abs(u) if huber_delta is None else td_loss(u, huber_delta) / huber_delta
    weight = jnp.abs(taus[None, :, None] - (u < 0).astype(u.dtype))
    return jnp.sum(jnp.mean(weight * scale, -1), -1)
