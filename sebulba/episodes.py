"""Episode returns and lengths from env steps: one rule, used on a cycle's trajectory (a scan on
the actor device) and step by step on the host (evaluation).

An observation marked `first` starts an episode (return 0, length 0); every other step adds its
reward and 1. An episode's return and length are read at its last observation (terminated or
truncated): the first final step after a step that was not final. In a single-player pool a final
step is always followed by the reset; in a multi-player pool a player that left the episode keeps
its final flag up until its env resets (envs/players.py), and its episode is read once.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sebulba.types import EnvStep


def advance(running_return: Any, running_length: Any, reward: Any, first: Any, xp: Any = jnp) -> tuple[Any, Any]:
    """The running return and length after one env step; xp: jax.numpy or numpy."""
    return xp.where(first, 0.0, running_return + reward), xp.where(first, 0, running_length + 1)


def transitions(terminated: Any, truncated: Any, discount: float, dtype: Any = jnp.float32) -> tuple[Any, Any, Any]:
    """A trajectory's env-step flags (terminated, truncated: [T + 1, ...], marking x_t's kind) as
    its T transitions' (x_s -> x_{s+1}): (discounts: gamma, 0 into a terminal state; continues: 0
    where x_{s+1} ends its episode, so what follows it belongs to another; valid: False for a step
    out of a final state, the pool's auto-reset, whose action was discarded). A truncated
    episode's last observation is a transition's x_{s+1} like any other: it bootstraps."""
    final = terminated | truncated
    discounts = discount * (1.0 - terminated[1:].astype(dtype))
    return discounts, 1.0 - final[1:].astype(dtype), ~final[:-1]


def ends(final: Any, was_final: Any) -> Any:
    """Where an episode ends: a final step (terminated or truncated) after a step that was not."""
    return final & ~was_final


def episode_stats(env_step: EnvStep, running_return: jax.Array, running_length: jax.Array):
    """Returns and lengths of the episodes that end in env_step[1:] (NaN and 0 elsewhere),
    carrying running sums over cycles: (returns [T, B], lengths [T, B], return, length).
    env_step[0] was already counted in the previous cycle."""
    final = env_step.terminated | env_step.truncated

    def body(carry, x):
        es, done = x
        ret, length = advance(*carry, es.reward, es.first)
        return (ret, length), (jnp.where(done, ret, jnp.nan), jnp.where(done, length, 0))

    rest = jax.tree.map(lambda x: x[1:], env_step)
    done = ends(final[1:], final[:-1])
    (ret, length), (ep_ret, ep_len) = jax.lax.scan(body, (running_return, running_length), (rest, done))
    return ep_ret, ep_len.astype(jnp.int32), ret, length
