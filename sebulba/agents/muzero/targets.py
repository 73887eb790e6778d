"""MuZero's training targets over one unbatched sequence of env steps: for each start position t
and unroll step k = 0..K, the value z, reward u and search policy pi that the representation,
dynamics and prediction networks are trained on (Schrittwieser et al. 2020, Appendix G), with
the masks that say which of them are real.

rlax style: time-major, one sequence (callers `jax.vmap` over the batch). A sequence is L + 1
env steps as the env pool gives them (env_step[0..L], each marking x_s's kind: terminated,
truncated) and the L actions taken at steps 0..L-1; rewards[s] arrived with env step s.

The rules, for start t (valid when x_t is not final: the step out of a final state is the pool's
auto-reset, whose action was discarded) and s = t + k:
- inside t's episode (s up to its last step e, the first final step after t, and s <= L):
  value z_s = 0 if x_s is terminated, else the n-step return
  r_{s+1} + g r_{s+2} + ... + g^{j-1} r_{s+j} + g^j [x_{s+j} not terminated] v_{s+j},
  j = min(n, e - s, L - s) (the window stops at the episode's end and at the sequence's end,
  where it bootstraps; a truncated episode's last observation bootstraps like any other), masked
  where j = 0 and x_s is not terminated (a target that is its own bootstrap says nothing); reward
  u_s = rewards[s] for k >= 1; policy pi_s, masked at the final step e (its action was discarded)
  and at s = L (the search there belongs to the next sequence: policies are the L searches whose
  actions the sequence holds);
- past a terminated episode's end: the absorbing state, value 0 and reward 0 (both real),
  policy masked (MuZero's "uniform policy" there, which we do not train on);
- past a truncated episode's end or past the sequence (s > L): nothing is known, all masked.
The actions the dynamics unroll are a_{t..t+K-1} as taken; past the episode's end they belong to
another episode or to nobody (the masks above make their predictions untrained, but for the
absorbing terminated case, where any action leads to the absorbing state).

With a Q(lambda) value target (`q_lambda`; the agent's `value_target="q_lambda"`) the bootstrap
values are greedy ones, m_s = max_a Q(x_s, a), and the value target of x_s is Peng's Q(lambda)
return of the action taken there, z_s = r_{s+1} + g ((1 - lambda) m_{s+1} + lambda z_{s+1}),
cut as the n-step window is (0 past a terminated end, m at a truncated end and at x_L), known
where x_s is not final (and at a terminated x_s, 0): lambda = 0 is the one-step target, lambda = 1
the return to the sequence's end. Built without loops over t or k: gathers over [L, K + 1] tables of s = t + k, an [L + 1, n]
table for the n-step window (as `sebulba.agents.r2d2.returns.n_step_double_q_targets`).
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from sebulba.agents.pqn.returns import episode_q_lambda

Array = jax.Array


class UnrollTargets(NamedTuple):
    """Targets of every start position t = 0..L-1 of a sequence, for unroll steps k = 0..K."""

    actions: Array  # [L, K] int: a_{t+k}, the actions the dynamics unroll (0 past the sequence)
    values: Array  # [L, K + 1] z_{t+k} inside t's episode, else 0
    rewards: Array  # [L, K + 1] u_{t+k} inside t's episode (k = 0: unused), else 0
    policies: Array  # [L, K + 1, A] pi_{t+k} (pi_{L-1} past the sequence: masked)
    value_mask: Array  # [L, K + 1] bool
    reward_mask: Array  # [L, K + 1] bool (k = 0: False)
    policy_mask: Array  # [L, K + 1] bool
    observed: Array  # [L, K + 1] bool: x_{t+k} is an observation of t's episode (up to its last step, within the
    # sequence): what the unrolled latent at k stands for (the consistency loss's targets)
    valid: Array  # [L] bool: x_t is not final (a real start); every mask is False where it is not


def n_step_values(values: Array, rewards: Array, terminated: Array, truncated: Array, discount: chex.Numeric,
                  n: int) -> tuple[Array, Array]:
    """The n-step value target of every env step s = 0..L (module docstring) and where it says
    something: (z [L + 1], known [L + 1] bool). values: [L + 1] the bootstrap value of each x_s
    (a target network's, or the search's root value); rewards, terminated, truncated: [L + 1]."""
    chex.assert_rank([values, rewards, terminated, truncated], 1)
    chex.assert_equal_shape([values, rewards, terminated, truncated])
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a Python int >= 1, got {n!r}")
    length = values.shape[0] - 1
    dtype = values.dtype
    terminated = jnp.asarray(terminated).astype(bool)
    final = terminated | jnp.asarray(truncated).astype(bool)
    steps = jnp.arange(length + 1)
    step = steps[:, None] + jnp.arange(1, n + 1)[None, :]  # [L + 1, n]: s + i, i = 1..n
    inside = step <= length
    clipped = jnp.minimum(step, length)
    # r_{s+i} is in the window iff s + i <= L and no step s+1..s+i-1 is final, and x_s itself is not final
    open_before = jnp.cumprod(~(final[clipped] | ~inside)[:, :-1], axis=1, dtype=jnp.int32).astype(bool)
    included = jnp.concatenate([jnp.ones((length + 1, 1), bool), open_before], axis=1) & inside & ~final[:, None]
    j = jnp.sum(included, axis=1)  # [L + 1] in 0..n
    powers = jnp.asarray(discount, dtype) ** jnp.arange(n + 1, dtype=dtype)
    returns = jnp.sum(jnp.where(included, rewards.astype(dtype)[clipped], 0) * powers[None, :n], axis=1)
    end = jnp.minimum(steps + j, length)
    bootstrap = jnp.where(terminated[end], 0, values[end])
    z = jnp.where(terminated, 0, returns + powers[j] * bootstrap)
    return jax.lax.stop_gradient(z.astype(dtype)), (j > 0) | terminated


def q_lambda_values(max_q: Array, rewards: Array, terminated: Array, truncated: Array, discount: chex.Numeric,
                    lambda_: chex.Numeric) -> tuple[Array, Array]:
    """The Q(lambda) value target of every env step s = 0..L (module docstring) and where it says
    something: (z [L + 1], known [L + 1] bool). max_q: [L + 1] the greedy value m_s of each x_s;
    rewards, terminated, truncated: [L + 1]."""
    chex.assert_rank([max_q, rewards, terminated, truncated], 1)
    chex.assert_equal_shape([max_q, rewards, terminated, truncated])
    terminated = jnp.asarray(terminated).astype(bool)
    returns, valid = episode_q_lambda(max_q, rewards, terminated, truncated, discount, lambda_)  # [L]: out of x_0..x_{L-1}
    z = jnp.where(terminated, 0, jnp.concatenate([returns, jnp.zeros(1, max_q.dtype)]))
    known = jnp.concatenate([valid, jnp.zeros(1, bool)]) | terminated
    return jax.lax.stop_gradient(z.astype(max_q.dtype)), known


def unroll_targets(values: Array, rewards: Array, terminated: Array, truncated: Array, actions: Array,
                   policies: Array, discount: chex.Numeric, n: int, unroll_steps: int,
                   q_lambda: chex.Numeric | None = None) -> UnrollTargets:
    """MuZero's targets for every start t = 0..L-1 of one sequence (module docstring).

    Args:
      values: [L + 1] bootstrap values of x_0..x_L (with q_lambda: their greedy values m_s).
      rewards: [L + 1] rewards[s] arrived with env step s (rewards[0] unused).
      terminated, truncated: [L + 1] flags of env steps.
      actions: [L] int, the action taken at env step s.
      policies: [L, A] the search policy at x_s, whose action is actions[s].
      discount: gamma.
      n: the value target's steps (static int >= 1).
      unroll_steps: K (static int >= 1).
      q_lambda: None for the n-step value targets; else lambda of the Q(lambda) ones (n unused).
    """
    chex.assert_rank([values, rewards, terminated, truncated, actions, policies], [1, 1, 1, 1, 1, 2])
    chex.assert_equal_shape([values, rewards, terminated, truncated])
    length = actions.shape[0]
    chex.assert_shape(values, (length + 1,))
    chex.assert_shape(policies, (length, None))
    if not isinstance(unroll_steps, int) or unroll_steps < 1:
        raise ValueError(f"unroll_steps must be a Python int >= 1, got {unroll_steps!r}")
    big_k = unroll_steps
    terminated = jnp.asarray(terminated).astype(bool)
    final = terminated | jnp.asarray(truncated).astype(bool)
    if q_lambda is None:
        z, known = n_step_values(values, rewards, terminated, truncated, discount, n)
    else:
        z, known = q_lambda_values(values, rewards, terminated, truncated, discount, q_lambda)

    t = jnp.arange(length)
    k = jnp.arange(big_k + 1)
    s = t[:, None] + k[None, :]  # [L, K + 1]
    in_sequence = s <= length
    sc = jnp.minimum(s, length)
    # the episode's last step e = t + k_e: the first final step after t within the table
    final_after = (final[sc] & in_sequence)[:, 1:]
    has_end = final_after.any(axis=1)
    k_e = jnp.argmax(final_after, axis=1) + 1
    end_terminated = has_end & terminated[jnp.minimum(t + k_e, length)]
    valid = ~final[:-1]
    inside = valid[:, None] & in_sequence & (~has_end[:, None] | (k[None, :] <= k_e[:, None]))
    absorbing = valid[:, None] & end_terminated[:, None] & (k[None, :] > k_e[:, None])  # past a terminated end

    zero = jnp.zeros((), values.dtype)
    value_t = jnp.where(inside, z[sc], zero)
    value_mask = (inside & known[sc]) | absorbing
    reward_t = jnp.where(inside & (k[None, :] > 0), rewards.astype(values.dtype)[sc], zero)
    reward_mask = (inside | absorbing).at[:, 0].set(False)
    policy_t = policies[jnp.minimum(s, length - 1)]
    policy_mask = inside & ~final[sc] & (s < length)
    a = jnp.where(s[:, :big_k] < length, actions[jnp.minimum(s[:, :big_k], length - 1)], 0)
    return UnrollTargets(
        actions=a.astype(actions.dtype), values=jax.lax.stop_gradient(value_t), rewards=reward_t, policies=policy_t,
        value_mask=value_mask, reward_mask=reward_mask, policy_mask=policy_mask, observed=inside, valid=valid,
    )
