"""IMPALA's loss terms over one unbatched trajectory of length T.

Every term is a SUM over the trajectory's valid steps (mask 1), so a caller that vmaps over the
batch divides by the batch's total valid count (a mean over real transitions, whatever the
number of episode boundaries in each trajectory). The mask is 0 for a transition out of a final
state (DESIGN.md: the env pool's auto-reset step discards the action): for a time-major
Trajectory, mask_tm1 = ~(env_step.terminated[:-1] | env_step.truncated[:-1]).

Usage from an agent's `loss` (time-major [T, B] data, hyperparameters bound with partial so
vmap maps only the arrays):

    fn = functools.partial(impala_loss, lambda_=c.lambda_, baseline_cost=c.baseline_cost, ...)
    total, metrics, count = jax.vmap(fn, in_axes=1)(
        logits, behaviour_logits, actions, values, rewards, discounts, mask)
    n = jnp.maximum(count.sum(), 1)
    loss = total.sum() / n
    metrics = jax.tree.map(lambda m: m.sum() / n, metrics)
"""

from __future__ import annotations

from typing import Union

import chex
import jax
import jax.numpy as jnp

from sebulba.agents.impala.vtrace import vtrace_td_error_and_advantage
from sebulba.distributions import Categorical, Distribution, as_distribution

Array = jax.Array
Policy = Union[Array, Distribution]  # categorical logits, or a distribution (continuous IMPALA)
Numeric = chex.Numeric


def _steps(policy: Policy) -> int:
    """T of a policy over one trajectory: logits [T, A] or a distribution of [T, ...] leaves
    (a Gaussian's [T, D], a MultiCategorical's logits [T, D, K])."""
    leaves = jax.tree.leaves(policy)
    chex.assert_rank(leaves, {2, 3})
    chex.assert_equal_shape_prefix(leaves, 1)
    return leaves[0].shape[0]


def policy_gradient_loss(logits_tm1: Policy, a_tm1: Array, adv_tm1: Array, mask_tm1: Array) -> Array:
    """-sum_s mask_s log pi(a_s | x_s) stop_gradient(adv_s). logits [T, A] (or a distribution,
    e.g. a Gaussian's mean and log std [T, D] with actions [T, D], a MultiCategorical's logits
    [T, D, K] with int actions [T, D]: log pi summed over the D dims), the rest [T]."""
    chex.assert_rank([adv_tm1, mask_tm1], [1, 1])
    chex.assert_equal_shape([adv_tm1, mask_tm1])
    chex.assert_axis_dimension(a_tm1, 0, _steps(logits_tm1))
    logp = as_distribution(logits_tm1).log_prob(a_tm1)
    return -jnp.sum(mask_tm1 * logp * jax.lax.stop_gradient(adv_tm1))


def entropy_loss(logits_tm1: Policy, mask_tm1: Array) -> Array:
    """-sum_s mask_s H(pi(. | x_s)): minimizing it maximizes the entropy. logits [T, A] (or a
    distribution), mask [T]."""
    chex.assert_rank(mask_tm1, 1)
    chex.assert_axis_dimension(mask_tm1, 0, _steps(logits_tm1))
    return -jnp.sum(mask_tm1 * as_distribution(logits_tm1).entropy())


def baseline_loss(errors: Array, mask: Array) -> Array:
    """0.5 * sum_s mask_s errors_s^2; with v-trace errors (targets stopped) its gradient with
    respect to the values is -mask * errors."""
    chex.assert_rank([errors, mask], [1, 1])
    chex.assert_equal_shape([errors, mask])
    return 0.5 * jnp.sum(mask * jnp.square(errors))


def impala_loss(
    target_logits: Array,
    behaviour_logits: Array,
    actions: Array,
    values: Array,
    rewards: Array,
    discounts: Array,
    mask: Array,
    *,
    lambda_: Numeric = 1.0,
    clip_rho_threshold: Numeric | None = 1.0,
    clip_c_threshold: Numeric | None = 1.0,
    clip_pg_rho_threshold: Numeric | None = 1.0,
    baseline_cost: float = 0.5,
    entropy_cost: float = 0.01,
) -> tuple[Array, dict[str, Array], Array]:
    """The IMPALA loss of one trajectory, as sums over its valid steps.

    Args:
      target_logits: [T + 1, A] or [T, A] the learner's policy logits (a last row, the bootstrap
        observation's, is ignored); or a distribution (`sebulba.distributions`, e.g. a Gaussian's
        mean and log std [T (+ 1), D]) for continuous actions.
      behaviour_logits: [T, A] the acting policy's logits (or distribution), recorded by the actor.
      actions: [T] int, the actions taken; [T, D] for a Gaussian (the unclipped samples) or a
        MultiCategorical (int, 0-based per dimension).
      values: [T + 1] the learner's values V(x_0..x_T); V(x_T) bootstraps.
      rewards: [T] r_{s+1} (env_step.reward[1:]).
      discounts: [T] gamma * (1 - terminated at x_{s+1}) (the discount is folded in here).
      mask: [T] 1 for real transitions, 0 for transitions out of a final state (bool or float).
      lambda_, clip_*: v-trace's (see vtrace.py); baseline_cost, entropy_cost: the weights.

    rho_s = exp(log pi(a_s|x_s) - log mu(a_s|x_s)) (stop_gradient'ed), set to 0 where the mask is 0,
    which cuts the trace at episode boundaries (vtrace.py's docstring). For a distribution over
    several dims (Gaussian, MultiCategorical) the log-probs are the joint's, summed over the dims,
    so rho is the joint ratio, the product of the dims' ratios, clipped once.

    Returns:
      (total, metrics, count): total = pg + baseline_cost * baseline + entropy_cost * entropy_loss
      (a sum); metrics, all sums over valid steps (divide by the total count for means):
      pg_loss, baseline_loss, entropy_loss, entropy, rho, rho_clipped (steps with
      rho > clip_rho_threshold), advantage, value; count = number of valid steps (float32 scalar).
    """
    T = rewards.shape[0]
    chex.assert_rank([values, rewards, discounts, mask], 1)
    chex.assert_shape(values, (T + 1,))
    chex.assert_equal_shape([rewards, discounts, mask])
    chex.assert_axis_dimension(actions, 0, T)
    chex.assert_rank(actions, 1 if isinstance(as_distribution(behaviour_logits), Categorical) else 2)
    if _steps(behaviour_logits) != T:
        raise ValueError(f"behaviour policy of {_steps(behaviour_logits)} steps for {T} rewards")
    if _steps(target_logits) == T + 1:
        target_logits = jax.tree.map(lambda x: x[:-1], target_logits)
    chex.assert_trees_all_equal_shapes(target_logits, behaviour_logits)
    target, behaviour = as_distribution(target_logits), as_distribution(behaviour_logits)

    valid = mask.astype(bool)
    maskf = valid.astype(values.dtype)
    log_rho = jax.lax.stop_gradient(target.log_prob(actions) - behaviour.log_prob(actions))
    # where-before-exp: a masked step's logits may be arbitrary; no inf * 0 = NaN there.
    rho = jnp.where(valid, jnp.exp(jnp.where(valid, log_rho, 0.0)), 0.0).astype(values.dtype)

    vt = vtrace_td_error_and_advantage(
        values[:-1],
        values[1:],
        rewards.astype(values.dtype),
        discounts.astype(values.dtype),
        rho,
        lambda_=lambda_,
        clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold,
        clip_c_threshold=clip_c_threshold,
    )
    pg = policy_gradient_loss(target_logits, actions, vt.pg_advantage, maskf)
    baseline = baseline_loss(vt.errors, maskf)
    ent_loss = entropy_loss(target_logits, maskf)
    total = pg + baseline_cost * baseline + entropy_cost * ent_loss

    rho_clipped = jnp.zeros_like(rho) if clip_rho_threshold is None else (rho > clip_rho_threshold)
    sg = jax.lax.stop_gradient
    metrics = {
        "pg_loss": sg(pg),
        "baseline_loss": sg(baseline),
        "entropy_loss": sg(ent_loss),
        "entropy": -sg(ent_loss),
        "rho": jnp.sum(maskf * rho),
        "rho_clipped": jnp.sum(maskf * rho_clipped),
        "advantage": jnp.sum(maskf * vt.pg_advantage),
        "value": sg(jnp.sum(maskf * values[:-1])),
    }
    return total, metrics, jnp.sum(maskf).astype(jnp.float32)
