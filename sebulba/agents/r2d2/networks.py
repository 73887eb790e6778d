"""R2D2's recurrent Q-network: torso, then a core fed with the previous action and reward, then a
dueling head. The core is an LSTM, or (for the memory ablation) a Dense layer with no state."""

from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp

from sebulba.agents.r2d2.config import R2D2Config
from sebulba.networks import MLPTorso, torso_for


class CoreState(NamedTuple):
    h: jax.Array  # [B, core_size]
    c: jax.Array  # [B, core_size]


class R2D2Net(nn.Module):
    torso: nn.Module
    num_actions: int
    core: str
    core_size: int

    @nn.compact
    def __call__(self, obs, prev_action, prev_reward, state: CoreState) -> tuple[jax.Array, CoreState]:
        """One step for a batch: obs [B, ...], prev_action [B] int, prev_reward [B] -> (Q [B, A], state)."""
        x = jnp.concatenate(
            [self.torso(obs), jax.nn.one_hot(prev_action, self.num_actions), prev_reward[:, None].astype(jnp.float32)], -1
        )
        if self.core == "lstm":
            (c, h), x = nn.OptimizedLSTMCell(self.core_size, name="lstm")((state.c, state.h), x)
            state = CoreState(h, c)
        else:
            x = nn.relu(nn.Dense(self.core_size, name="core")(x))
        value = nn.Dense(1, name="value")(x)
        advantage = nn.Dense(self.num_actions, name="advantage")(x)
        return value + advantage - advantage.mean(-1, keepdims=True), state

    def initial_state(self, batch: int) -> CoreState:
        shape = (batch, self.core_size)
        return CoreState(jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32))


def make_network(observation_space: gym.spaces.Space, num_actions: int, config: R2D2Config) -> R2D2Net:
    torso = torso_for(observation_space, config.torso)
    if isinstance(torso, MLPTorso):
        torso = torso.clone(hidden_sizes=config.hidden_sizes)
    return R2D2Net(torso, num_actions, config.core, config.core_size)


def unroll(net: R2D2Net, params, obs, prev_action, prev_reward, first, state: CoreState) -> tuple[jax.Array, CoreState]:
    """Q-values along a sequence [T, B, ...] from `state`; the state (and previous action and reward)
    is reset to zero where `first` marks an episode start, exactly as the actor does."""

    def body(state, x):
        o, a, r, f = x
        keep = (~f)[:, None]
        state = CoreState(state.h * keep, state.c * keep)
        q, state = net.apply(params, o, jnp.where(f, 0, a), jnp.where(f, 0.0, r), state)
        return state, q

    state, q = jax.lax.scan(body, state, (obs, prev_action, prev_reward, first))
    return q, state
