"""PPO's loss terms (Schulman et al. 2017) on a flat batch of samples, as pure functions.

Every term is a SUM over the batch's valid samples (mask 1; a transition out of a final state is
masked), so the caller divides by the valid count of the whole minibatch, over every learner
device, and the result does not depend on how the minibatch is split over devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sebulba.types import Metrics

Array = jax.Array


def normalize_advantages(advantages: Array, mask: Array, axis_name: str | None = None, eps: float = 1e-8) -> Array:
    """(A - mean) / (std + eps) over the valid samples (std with Bessel's correction, as CleanRL's
    torch `.std()`); with `axis_name`, the statistics are over every device's samples along that
    mapped axis (a per-device normalisation would change the algorithm with the device count)."""
    m = mask.astype(advantages.dtype)
    n, total = jnp.sum(m), jnp.sum(m * advantages)
    if axis_name is not None:
        n, total = jax.lax.psum((n, total), axis_name)
    mean = total / jnp.maximum(n, 1.0)
    sq = jnp.sum(m * jnp.square(advantages - mean))
    if axis_name is not None:
        sq = jax.lax.psum(sq, axis_name)
    std = jnp.sqrt(sq / jnp.maximum(n - 1.0, 1.0))
    return jnp.where(mask, (advantages - mean) / (std + eps), 0.0)


def clipped_surrogate(log_prob: Array, behaviour_log_prob: Array, advantages: Array, clip_coef: float) -> tuple[Array, Array]:
    """Per sample: (max(-A r, -A clip(r, 1 - eps, 1 + eps)), r) with r = pi(a|s) / mu(a|s), mu the
    behaviour policy that acted (its log-prob recorded by the actor, as Cleanba does: with policy
    lag the ratio is against the networks that really acted)."""
    ratio = jnp.exp(log_prob - behaviour_log_prob)
    loss = jnp.maximum(-advantages * ratio, -advantages * jnp.clip(ratio, 1.0 - clip_coef, 1.0 + clip_coef))
    return loss, ratio


def value_loss(values: Array, old_values: Array, returns: Array, clip_coef: float | None) -> Array:
    """Per sample: 0.5 (V - R)^2, or with `clip_coef` 0.5 max((V - R)^2, (V_clip - R)^2) where
    V_clip = V_old + clip(V - V_old, -eps, eps) (CleanRL's clip_vloss)."""
    unclipped = jnp.square(values - returns)
    if clip_coef is None:
        return 0.5 * unclipped
    clipped = old_values + jnp.clip(values - old_values, -clip_coef, clip_coef)
    return 0.5 * jnp.maximum(unclipped, jnp.square(clipped - returns))


def ppo_loss(log_prob: Array, behaviour_log_prob: Array, advantages: Array, values: Array, old_values: Array,
             returns: Array, entropy: Array, mask: Array, *, clip_coef: float, clip_value_loss: bool,
             value_cost: float, entropy_cost: float) -> tuple[Array, Metrics]:
    """The sum over valid samples of pg + value_cost * value - entropy_cost * entropy, and metric
    sums: pg_loss, value_loss, entropy, approx_kl ((r - 1) - log r, Schulman's estimator), clipfrac
    (samples with |r - 1| > clip_coef), ratio. All inputs are [N]; advantages as learned
    (normalised or not)."""
    m = mask.astype(values.dtype)
    log_prob = jnp.where(mask, log_prob, behaviour_log_prob)  # a masked step's ratio is 1, never inf
    pg, ratio = clipped_surrogate(log_prob, behaviour_log_prob, advantages, clip_coef)
    v = value_loss(values, old_values, returns, clip_coef if clip_value_loss else None)
    total = jnp.sum(m * (pg + value_cost * v - entropy_cost * entropy))
    sg = jax.lax.stop_gradient
    log_ratio = sg(log_prob - behaviour_log_prob)
    metrics = {
        "pg_loss": sg(jnp.sum(m * pg)),
        "value_loss": sg(jnp.sum(m * v)),
        "entropy": sg(jnp.sum(m * entropy)),
        "approx_kl": jnp.sum(m * (jnp.exp(log_ratio) - 1.0 - log_ratio)),
        "clipfrac": jnp.sum(m * (jnp.abs(sg(ratio) - 1.0) > clip_coef)),
        "ratio": jnp.sum(m * sg(ratio)),
    }
    return total, metrics
