"""R2D2's returns (Kapturowski et al. 2019) over one unbatched sequence, plus replay helpers.

rlax style: pure functions over ONE sequence (time only, no batch axis); the agent `jax.vmap`s
them over the batch (for our time-major trajectories, `in_axes=1`).

Value rescaling (Pohlen et al. 2018): the networks predict Q in the rescaled space
h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x; returns are summed in the raw space h^-1(q).

Sequence convention (see DESIGN.md, "The Sebulba core"). A sequence has m + 1 env steps
(index 0..m) and m actions: action t was chosen from env step t, and env step t + 1 carries its
reward (`reward_t[t + 1]`) and end flags. `reward_t[0]` belongs to the previous transition and is
never used. After an episode's final env step (terminated or truncated) the env pool's next step
is a reset that discards the action, so the transition out of a final env step is not a real
transition: the caller masks it with `~(terminated_t[:-1] | truncated_t[:-1])`.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

Array = jax.Array
Numeric = chex.Numeric


def signed_hyperbolic(x: Array, eps: Numeric = 1e-3) -> Array:
    """h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x (Pohlen et al. 2018, the R2D2 value rescaling).

    Computed as x / (sqrt(|x| + 1) + 1) + eps x, an exact rewrite (sqrt(a + 1) - 1 = a / (sqrt(a + 1)
    + 1)) without the cancellation near 0 and with the right gradient (1/2 + eps) at 0.
    """
    x = jnp.asarray(x)
    chex.assert_type(x, float)
    return x / (jnp.sqrt(jnp.abs(x) + 1.0) + 1.0) + eps * x


def signed_parabolic(x: Array, eps: Numeric = 1e-3) -> Array:
    """The exact inverse of `signed_hyperbolic`: h^-1(h(x)) = x and h(h^-1(x)) = x.

    The closed form (Pohlen et al. 2018, rlax) is
      h^-1(x) = sign(x) * (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1).
    Writing u = (sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps) = 1 + w, w solves
    eps w^2 + (1 + 2 eps) w - |x| = 0, so
      w = 2 |x| / ((1 + 2 eps) + sqrt((1 + 2 eps)^2 + 4 eps |x|)),  h^-1(x) = sign(x) w (w + 2),
    the same function without the float32 cancellation of the closed form near 0 (which gives
    h^-1(1e-3) = 2.0015e-3 instead of 1.9970e-3), valid for eps = 0 too
    (h^-1(x) = sign(x)((|x| + 1)^2 - 1)).
    """
    x = jnp.asarray(x)
    chex.assert_type(x, float)
    b = 1.0 + 2.0 * eps
    denominator = b + jnp.sqrt(b * b + 4.0 * eps * jnp.abs(x))
    w = 2.0 * jnp.abs(x) / denominator
    return (2.0 * x / denominator) * (w + 2.0)  # sign(x) w (w + 2), smooth at 0


def n_step_double_q_targets(
    q_online_t: Array,
    q_target_t: Array,
    reward_t: Array,
    terminated_t: Array,
    truncated_t: Array,
    discount: Numeric,
    n: int,
    eps: Numeric = 1e-3,
) -> Array:
    """R2D2's n-step double-Q targets, in the rescaled space, for the m actions of one sequence.

    For action t in [0, m):
      target_t = h( sum_{k=0}^{j-1} discount^k r_{t+k+1}
                    + [env step t + j not terminated] discount^j h^-1(q_target[t+j, a*_{t+j}]) ),
      a*_s = argmax_a q_online[s, a]   (double Q: online argmax, target value),
      j = min(n, first k >= 1 such that env step t + k is final, m - t).
    The window stops at the first final env step after t or at the sequence end. It bootstraps
    from env step t + j's own value unless that step is terminated: a truncated step, or the
    sequence's last step, bootstraps (a step both terminated and truncated counts as terminated).

    Transitions out of a final env step (env step t itself terminated or truncated) are not real
    transitions; their target is some finite number (the same formula, whose window runs into
    the next episode) that the caller must mask out. All targets are `stop_gradient`'ed.

    Built without a loop over t: an [m, n] table of the env steps t + k, a cumulative product
    of "no final step yet" gives the window, O(m n) work.

    Args:
      q_online_t: [m + 1, A] online-network Q-values (rescaled space) at every env step.
      q_target_t: [m + 1, A] target-network Q-values (rescaled space) at every env step.
      reward_t: [m + 1] reward_t[k] arrived with env step k (reward_t[0] is unused).
      terminated_t: [m + 1] bool (or 0/1) flags of env steps.
      truncated_t: [m + 1] bool (or 0/1) flags of env steps.
      discount: scalar gamma.
      n: static Python int >= 1, the number of steps.
      eps: the rescaling's eps.

    Returns:
      [m] targets (rescaled space, dtype of q_target_t).
    """
    chex.assert_rank([q_online_t, q_target_t, reward_t, terminated_t, truncated_t, discount], [2, 2, 1, 1, 1, 0])
    chex.assert_type([q_online_t, q_target_t, reward_t], float)
    chex.assert_equal_shape([q_online_t, q_target_t])
    chex.assert_equal_shape([reward_t, terminated_t, truncated_t])
    chex.assert_equal_shape_prefix([q_online_t, reward_t], 1)
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a Python int >= 1, got {n!r}")

    m = q_online_t.shape[0] - 1
    dtype = q_target_t.dtype
    terminated = jnp.asarray(terminated_t).astype(bool)
    final = terminated | jnp.asarray(truncated_t).astype(bool)
    reward = reward_t.astype(dtype)

    # Raw-space bootstrap value of each env step (double Q), 0 at terminated steps.
    a_star = jnp.argmax(q_online_t, axis=-1)
    q_star = jnp.take_along_axis(q_target_t, a_star[:, None], axis=-1)[:, 0]
    value = jnp.where(terminated, jnp.zeros((), dtype), signed_parabolic(q_star, eps))

    # [m, n] table of the env steps t + k, k = 1..n.
    step = jnp.arange(m)[:, None] + jnp.arange(1, n + 1)[None, :]
    step_c = jnp.minimum(step, m)
    stops = final[step_c] | (step >= m)  # the window ends at t + k (final step or sequence end)
    # reward r_{t+k} is in the window iff no stop at t+1..t+k-1.
    open_before = jnp.cumprod(~stops[:, :-1], axis=1, dtype=jnp.int32)
    included = jnp.concatenate([jnp.ones((m, 1), jnp.int32), open_before], axis=1).astype(bool)
    j = jnp.sum(included, axis=1)  # [m], in 1..min(n, m - t)

    discounts = jnp.asarray(discount, dtype) ** jnp.arange(n + 1, dtype=dtype)  # gamma^0..gamma^n
    rewards = jnp.where(included, reward[step_c], jnp.zeros((), dtype))
    returns = jnp.sum(rewards * discounts[None, :n], axis=1)
    bootstrap = discounts[j] * value[jnp.arange(m) + j]
    return jax.lax.stop_gradient(signed_hyperbolic(returns + bootstrap, eps))


def sequence_priority(abs_td_errors: Array, mask: Array, eta: Numeric = 0.9) -> Array:
    """R2D2's sequence priority: eta max_i |delta_i| + (1 - eta) mean_i |delta_i| over valid steps.

    Args:
      abs_td_errors: [m] absolute TD errors (>= 0).
      mask: [m] bool (or 0/1): the valid (real) transitions.
      eta: the max/mean mixing.

    Returns:
      A scalar; 0 when no entry is valid.
    """
    chex.assert_rank([abs_td_errors, mask], 1)
    chex.assert_type(abs_td_errors, float)
    chex.assert_equal_shape([abs_td_errors, mask])
    valid = jnp.asarray(mask).astype(bool)
    errors = jnp.where(valid, abs_td_errors, jnp.zeros((), abs_td_errors.dtype))
    count = jnp.sum(valid)
    mean = jnp.sum(errors) / jnp.maximum(count, 1).astype(errors.dtype)
    priority = eta * jnp.max(errors, initial=0.0) + (1.0 - eta) * mean
    return jnp.where(count > 0, priority, jnp.zeros((), errors.dtype))
