"""AlphaZero's value targets: each position's game outcome for the player who saw it, read off a
cycle's rows (pure; rows are an env's players, so a row's rewards are its player's).

For row r at step t (the observation `env_step[t]`), the outcome is the sum of the row's rewards
from step t + 1 to the end of its episode, known when the episode terminates within the cycle.
An episode cut short (truncated) or still running at the cycle's end has no known outcome: those
positions are no samples. Neither is a step whose observation ends an episode (the pool's
auto-reset step follows it: its action is discarded).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Outcomes(NamedTuple):
    value: jax.Array  # float32 [T, R]: the row's return from t + 1 to its episode's end
    known: jax.Array  # bool [T, R]: the episode terminated within the cycle, and step t was not its end


def outcomes(reward: jax.Array, terminated: jax.Array, truncated: jax.Array) -> Outcomes:
    """From a cycle's env steps [T + 1, R] (reward, terminated, truncated of `env_step`), each
    step's outcome (see the module docstring)."""

    def back(carry, x):
        later, known = carry  # step t + 1's outcome and whether it is known
        r, term, trunc = x  # what step t + 1 brought
        end = term | trunc
        value = r + jnp.where(end, 0.0, later)
        known = jnp.where(term, True, jnp.where(trunc, False, known))
        return (value, known), (value, known)

    R = reward.shape[1]
    init = (jnp.zeros(R, jnp.float32), jnp.zeros(R, bool))
    _, (value, known) = jax.lax.scan(back, init, (reward[1:], terminated[1:], truncated[1:]), reverse=True)
    ends_here = terminated[:-1] | truncated[:-1]
    return Outcomes(value, known & ~ends_here)
