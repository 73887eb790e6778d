"""V-trace (Espeholt et al. 2018, "IMPALA", eq. 1) over one unbatched trajectory of length T.

rlax style: `_tm1` is the source state of a transition, `_t` its destination; inputs are rank 1
(time only) and callers `jax.vmap` over the batch (for our time-major trajectories, `in_axes=1`).

Trajectory convention. For transition s (x_s --a_s--> x_{s+1}):
  v_tm1[s] = V(x_s), v_t[s] = V(x_{s+1}), r_t[s] = r_{s+1}, discount_t[s] = gamma_s
  (gamma * (1 - terminated at x_{s+1})), rho_tm1[s] = pi(a_s | x_s) / mu(a_s | x_s).
So with values [T + 1] of a trajectory, v_tm1 = values[:-1] and v_t = values[1:].

Episode boundaries (see DESIGN.md, "The Sebulba core"). After an episode's final state the env
pool's next step is a reset that discards the action: the transition out of a final state is not
a real transition. The caller passes it with rho_tm1 = 0. Then its clipped rho (delta_s = 0) and
its trace coefficient c_s are both 0, so
  * its target is v_s = V(x_s) (and its error is 0), whatever its reward or discount;
  * nothing propagates across the boundary: the previous step's target uses v_s - V(x_s) = 0,
    i.e. it bootstraps from V(x_s) (a truncation) or, with discount 0 there, from nothing (a
    termination);
  * its pg advantage min(rho_bar_pg, 0) * (...) is 0.
The loss still has to mask that step (its log-prob and entropy terms), see `losses.py`.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

Array = jax.Array
Numeric = chex.Numeric


class VTraceOutput(NamedTuple):
    errors: Array  # [T] targets - v_tm1 (targets stopped: gradients flow into v_tm1 only)
    targets: Array  # [T] the v-trace targets v_s (stop_gradient'ed)


class VTraceReturns(NamedTuple):
    errors: Array  # [T] as VTraceOutput.errors
    pg_advantage: Array  # [T] min(rho_bar_pg, rho_s) * (q_s - V(x_s)) (stop_gradient'ed)
    q_estimate: Array  # [T] r_s + gamma_s * v_{s+1} (stop_gradient'ed)


def _clip(x: Array, threshold: Numeric | None) -> Array:
    return x if threshold is None else jnp.minimum(threshold, x)


def vtrace(
    v_tm1: Array,
    v_t: Array,
    r_t: Array,
    discount_t: Array,
    rho_tm1: Array,
    lambda_: Numeric = 1.0,
    clip_rho_threshold: Numeric | None = 1.0,
    clip_c_threshold: Numeric | None = 1.0,
) -> VTraceOutput:
    """V-trace targets for one trajectory of length T.

    v_s = V(x_s) + sum_{t >= s} (prod_{i=s}^{t-1} gamma_i c_i) delta_t, with
    delta_t = min(rho_bar, rho_t) (r_{t+1} + gamma_t V(x_{t+1}) - V(x_t)) and
    c_i = lambda * min(c_bar, rho_i); computed by the recursion
    v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1})), v_T - V(x_T) = 0 (bootstrap),
    as a reverse `lax.scan`. A threshold of None disables that clipping.

    Args:
      v_tm1: [T] V(x_s).
      v_t: [T] V(x_{s+1}) (v_t[-1] is the bootstrap value).
      r_t: [T] rewards.
      discount_t: [T] discounts (0 at terminations).
      rho_tm1: [T] importance ratios pi/mu of the taken actions; 0 for a transition out of a final
        state (the env's auto-reset step), which cuts the trace there (see module docstring).
      lambda_: scalar or [T] trace mixing.
      clip_rho_threshold: rho_bar, clips the rhos in delta.
      clip_c_threshold: c_bar, clips the rhos in the trace coefficients.

    Returns:
      VTraceOutput(errors=targets - v_tm1, targets=stop_gradient(v_s)).
    """
    chex.assert_rank([v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_], [1, 1, 1, 1, 1, {0, 1}])
    chex.assert_type([v_tm1, v_t, r_t, discount_t, rho_tm1], float)
    chex.assert_equal_shape([v_tm1, v_t, r_t, discount_t, rho_tm1])

    c_tm1 = lambda_ * _clip(rho_tm1, clip_c_threshold)
    td_errors = _clip(rho_tm1, clip_rho_threshold) * (r_t + discount_t * v_t - v_tm1)
    c_tm1, td_errors = jnp.broadcast_arrays(c_tm1, td_errors)

    def back(acc, xs):
        td_error, discount, c = xs
        acc = td_error + discount * c * acc  # v_s - V(x_s)
        return acc, acc

    _, diffs = jax.lax.scan(back, jnp.zeros_like(td_errors[0]), (td_errors, discount_t, c_tm1), reverse=True)
    targets = jax.lax.stop_gradient(v_tm1 + diffs)
    return VTraceOutput(errors=targets - v_tm1, targets=targets)


def vtrace_td_error_and_advantage(
    v_tm1: Array,
    v_t: Array,
    r_t: Array,
    discount_t: Array,
    rho_tm1: Array,
    lambda_: Numeric = 1.0,
    clip_rho_threshold: Numeric | None = 1.0,
    clip_pg_rho_threshold: Numeric | None = 1.0,
    clip_c_threshold: Numeric | None = 1.0,
) -> VTraceReturns:
    """V-trace errors for the baseline and advantages for the policy gradient (IMPALA, sec. 4.2).

    q_s = r_{s+1} + gamma_s v_{s+1}, where v_{s+1} is the v-trace target of the next step and, for
    the last step, the bootstrap value v_t[-1]; pg_advantage_s = min(rho_bar_pg, rho_s) (q_s - V(x_s)).
    As in the paper (and seed_rl), v_{s+1} is the v-trace target for any lambda (rlax instead mixes
    lambda * v_{s+1} + (1 - lambda) V(x_{s+1})); the two agree at lambda = 1.

    Args as `vtrace`, plus clip_pg_rho_threshold (rho_bar_pg). rho_tm1 = 0 marks a transition out
    of a final state: its advantage is 0 and the previous step's q bootstraps from V(x_s).

    Returns:
      VTraceReturns(errors (gradients flow into v_tm1), pg_advantage and q_estimate (both stopped)).
    """
    chex.assert_rank([v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_], [1, 1, 1, 1, 1, {0, 1}])
    chex.assert_type([v_tm1, v_t, r_t, discount_t, rho_tm1], float)
    chex.assert_equal_shape([v_tm1, v_t, r_t, discount_t, rho_tm1])

    out = vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, clip_rho_threshold, clip_c_threshold)
    v_next = jnp.concatenate([out.targets[1:], v_t[-1:]])
    q_estimate = jax.lax.stop_gradient(r_t + discount_t * v_next)
    pg_advantage = jax.lax.stop_gradient(_clip(rho_tm1, clip_pg_rho_threshold) * (q_estimate - v_tm1))
    return VTraceReturns(errors=out.errors, pg_advantage=pg_advantage, q_estimate=q_estimate)
