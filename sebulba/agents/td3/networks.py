"""TD3's networks (CleanRL's `td3_continuous_action.py`): a deterministic actor tanh-squashed into
the Box's bounds and twin Q critics (`sebulba.agents.continuous_q`, shared with SAC), in one
`TD3Params` pytree: what the agent puts in `TargetNetworks.of` (both targets are read: the target
actor's action, smoothed, is what the target critics evaluate)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from sebulba.agents.continuous_q import Bounds, TwinQ, box_bounds, encoder_for
from sebulba.agents.td3.config import TD3Config
from sebulba.distributions import squash
from sebulba.networks import MLPTorso

Array = jax.Array


class DeterministicActor(nn.Module):
    """obs [B, ...] -> action [B, D] in the Box's bounds: encoder, MLP (relu), Dense, squashed
    (mid + half * tanh, CleanRL's action_scale and action_bias)."""

    encoder: nn.Module
    hidden_sizes: Sequence[int]
    action_dim: int
    bounds: Bounds

    @nn.compact
    def __call__(self, obs: Any) -> Array:
        h = MLPTorso(tuple(self.hidden_sizes), name="mlp")(self.encoder(obs))
        low, high = (jnp.asarray(b, jnp.float32) for b in self.bounds)
        return squash(nn.Dense(self.action_dim, name="action")(h), low, high)


class TD3Params(NamedTuple):
    actor: Any
    critic: Any  # the twin critics' parameters, every leaf with a leading axis of 2


@dataclasses.dataclass(frozen=True)
class TD3Networks:
    """The modules and how to call them on a `TD3Params`' parts."""

    actor: DeterministicActor
    critic: nn.Module  # TwinQ

    def init(self, key: Array, obs: Any) -> TD3Params:
        """Parameters from a sample batch of observations (`sebulba.observations.zeros(space)`)."""
        k_actor, k_critic = jax.random.split(key)
        action = jnp.zeros((jax.tree.leaves(obs)[0].shape[0], self.actor.action_dim), jnp.float32)
        return TD3Params(self.actor.init(k_actor, obs), self.critic.init(k_critic, obs, action))

    def policy(self, actor_params: Any, obs: Any) -> Array:
        return self.actor.apply(actor_params, obs)

    def q(self, critic_params: Any, obs: Any, action: Array) -> Array:
        """Both critics' Q(obs, action): [2, B]."""
        return self.critic.apply(critic_params, obs, action)

    @property
    def bounds(self) -> tuple[Array, Array]:
        """The action space's (low, high) as float32 arrays [D]."""
        return tuple(jnp.asarray(b, jnp.float32) for b in self.actor.bounds)


def make_networks(observation_space: gym.spaces.Space, action_space: gym.spaces.Space,
                  config: TD3Config) -> TD3Networks:
    bounds = box_bounds(action_space, "TD3")
    actor = DeterministicActor(encoder_for(observation_space, config.torso), config.hidden_sizes,
                               int(np.prod(action_space.shape)), bounds)
    return TD3Networks(actor, TwinQ(encoder_for(observation_space, config.torso), config.hidden_sizes))
