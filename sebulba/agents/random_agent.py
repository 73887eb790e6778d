"""RandomAgent: uniform random actions, no learning. The smallest Agent, and a loop probe."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

from sebulba.agent import Agent
from sebulba.types import EnvStep, Metrics, Trajectory


class RandomAgent(Agent[tuple, tuple, tuple, jax.Array]):
    """Step state: one RNG key per env, so each env's actions depend only on its own key."""

    def init_networks(self, key: jax.Array) -> tuple:
        return ()

    def optimizer(self) -> optax.GradientTransformation:
        return optax.identity()

    def init_step_state(self, networks: tuple, num_envs: int, key: jax.Array) -> jax.Array:
        return jax.random.split(key, num_envs)

    def step(self, networks: tuple, step_state: jax.Array, env_step: EnvStep) -> tuple[jax.Array, jax.Array]:
        keys = jax.vmap(jax.random.split)(step_state)
        space = self.env_spec.action_space
        if isinstance(space, gym.spaces.Discrete):
            sample = lambda k: jax.random.randint(k, (), space.start, space.start + space.n)
        elif isinstance(space, gym.spaces.MultiDiscrete):
            sample = lambda k: jax.random.randint(k, space.shape, space.start, space.start + space.nvec)
        else:
            sample = lambda k: jax.random.uniform(k, space.shape, jnp.float32, space.low, space.high)
        return jax.vmap(sample)(keys[:, 1]), keys[:, 0]

    def update_experience(self, experience: tuple, initial_step_state, final_step_state, trajectory: Trajectory) -> tuple:
        return ()

    def loss(self, networks: tuple, experience: tuple, key: jax.Array) -> tuple[jax.Array, Metrics]:
        return jnp.zeros(()), {}
