"""Q(lambda) targets (Peng and Williams 1996) over one unbatched trajectory: what PQN regresses
its Q-values on (Gallici et al. 2024, purejaxql's `_get_target`).

rlax style: rank-1 inputs (time only); callers `jax.vmap` over the batch (`in_axes=1` for our
time-major trajectories). `episode_q_lambda` takes a trajectory as the env pool gives it, as
`sebulba.agents.ppo.gae.episode_gae` does: a terminated episode's last state is worth 0; a
truncated one's last observation arrives at env_step[t + 1] and its max Q-value is the bootstrap;
the step after either is the pool's auto-reset, whose action is discarded: it is masked, and no
return accumulates across it.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from sebulba.episodes import transitions

Array = jax.Array


def q_lambda(max_q: Array, rewards: Array, discounts: Array, continues: Array, lambda_: chex.Numeric) -> Array:
    """Targets G_s = r_s + discounts_s * ((1 - lambda * c_s) * m_{s+1} + lambda * c_s * G_{s+1}),
    c_s = continues_s, with G_T = m_T: each step bootstraps from the greedy value m = max_a Q of
    the next state, mixed with the return that follows it.

    Args:
      max_q: [T + 1] max_a Q(x_0, a) ... max_a Q(x_T, a) (m_T bootstraps the last step).
      rewards: [T] the reward of transition s (r_{s+1}).
      discounts: [T] gamma, or 0 where x_{s+1} is terminal.
      continues: [T] 1, or 0 where x_{s+1} ends its episode (terminated or truncated): G_{s+1}
        belongs to another episode then.
      lambda_: the trace's lambda (0: one-step Q-learning targets; 1: discounted returns
        bootstrapped at the rollout's end).
    """
    chex.assert_rank([max_q, rewards, discounts, continues], 1)
    chex.assert_equal_shape([rewards, discounts, continues])
    chex.assert_shape(max_q, (rewards.shape[0] + 1,))

    def back(g_next, x):
        reward, discount, cont, m_next = x
        mix = lambda_ * cont
        g = reward + discount * ((1.0 - mix) * m_next + mix * g_next)
        return g, g

    _, targets = jax.lax.scan(back, max_q[-1], (rewards, discounts, continues, max_q[1:]), reverse=True)
    return jax.lax.stop_gradient(targets)


def episode_q_lambda(max_q: Array, rewards: Array, terminated: Array, truncated: Array, discount: float,
                     lambda_: chex.Numeric) -> tuple[Array, Array]:
    """Q(lambda) targets for a trajectory indexed by env step: max_q, rewards (rewards[t] arrived
    with env step t), terminated and truncated are [T + 1]. Returns (targets [T], 0 where masked;
    valid [T]: False for a transition out of a final state, the auto-reset)."""
    chex.assert_rank([max_q, rewards, terminated, truncated], 1)
    chex.assert_equal_shape([max_q, rewards, terminated, truncated])
    discounts, continues, valid = transitions(terminated, truncated, discount, max_q.dtype)
    targets = q_lambda(max_q, rewards[1:].astype(max_q.dtype), discounts, continues, lambda_)
    return jnp.where(valid, targets, 0.0), valid
