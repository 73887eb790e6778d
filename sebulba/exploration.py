"""Exploration shared by the value-based agents (R2D2, DQN) and the off-policy base."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np


def apex_epsilons(num_envs: int, base: float, alpha: float) -> jax.Array:
    """Ape-X (Horgan et al. 2018): env i of N explores with epsilon base ** (1 + alpha * i / (N - 1))."""
    i = jnp.arange(num_envs, dtype=jnp.float32)
    return base ** (1.0 + alpha * i / max(num_envs - 1, 1))


def epsilon_greedy(q: jax.Array, epsilon: jax.Array, k_explore: jax.Array, k_random: jax.Array) -> jax.Array:
    """int32 [B]: argmax of q [B, A], or with probability epsilon [B] (drawn with k_explore) a
    uniformly random action (drawn with k_random)."""
    explore = jax.random.uniform(k_explore, epsilon.shape) < epsilon
    random = jax.random.randint(k_random, epsilon.shape, 0, q.shape[-1])
    return jnp.where(explore, random, jnp.argmax(q, -1)).astype(jnp.int32)


def uniform_actions(space: gym.spaces.Space, key: jax.Array, num_envs: int) -> jax.Array:
    """Uniformly random actions [num_envs, ...]: 0-based indices of a Discrete space, or float32
    values in a Box's bounds."""
    if isinstance(space, gym.spaces.Discrete):
        return jax.random.randint(key, (num_envs,), 0, int(space.n), jnp.int32)
    low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
    return jax.random.uniform(key, (num_envs, *space.shape), jnp.float32, low, high)
