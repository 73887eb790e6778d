"""SAC's networks (CleanRL's `sac_continuous_action.py`): a squashed-Gaussian actor, twin Q
critics (`sebulba.agents.continuous_q`, shared with TD3) and a learned log temperature, all in
one `SACParams` pytree: what the agent puts in `TargetNetworks.of` (only the critics' target is
read; the actor's and log alpha's copies follow unused)."""

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
from sebulba.agents.sac.config import SACConfig
from sebulba.distributions import TanhGaussian, squash
from sebulba.networks import MLPTorso

Array = jax.Array


class SquashedGaussianActor(nn.Module):
    """obs [B, ...] -> TanhGaussian over [B, D] in the Box's bounds: encoder, MLP (relu), a mean
    head and a log std head, the log std squashed into [log_std_min, log_std_max] by a tanh
    (CleanRL's: min + (max - min) (tanh(x) + 1) / 2)."""

    encoder: nn.Module
    hidden_sizes: Sequence[int]
    action_dim: int
    bounds: Bounds
    log_std_min: float = -5.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, obs: Any) -> TanhGaussian:
        h = MLPTorso(tuple(self.hidden_sizes), name="mlp")(self.encoder(obs))
        mean = nn.Dense(self.action_dim, name="mean")(h)
        log_std = squash(nn.Dense(self.action_dim, name="log_std")(h), self.log_std_min, self.log_std_max)
        low, high = (jnp.asarray(b, jnp.float32) for b in self.bounds)
        return TanhGaussian(mean, log_std, low, high)


class SACParams(NamedTuple):
    actor: Any
    critic: Any  # the twin critics' parameters, every leaf with a leading axis of 2
    log_alpha: Array  # float32 []: the temperature's log


@dataclasses.dataclass(frozen=True)
class SACNetworks:
    """The modules and how to call them on an `SACParams`' parts."""

    actor: SquashedGaussianActor
    critic: nn.Module  # TwinQ
    initial_log_alpha: float

    def init(self, key: Array, obs: Any) -> SACParams:
        """Parameters from a sample batch of observations (`sebulba.observations.zeros(space)`)."""
        k_actor, k_critic = jax.random.split(key)
        action = jnp.zeros((jax.tree.leaves(obs)[0].shape[0], self.actor.action_dim), jnp.float32)
        return SACParams(self.actor.init(k_actor, obs), self.critic.init(k_critic, obs, action),
                         jnp.asarray(self.initial_log_alpha, jnp.float32))

    def policy(self, actor_params: Any, obs: Any) -> TanhGaussian:
        return self.actor.apply(actor_params, obs)

    def q(self, critic_params: Any, obs: Any, action: Array) -> Array:
        """Both critics' Q(obs, action): [2, B]."""
        return self.critic.apply(critic_params, obs, action)


def make_networks(observation_space: gym.spaces.Space, action_space: gym.spaces.Space,
                  config: SACConfig) -> SACNetworks:
    bounds = box_bounds(action_space, "SAC")
    actor = SquashedGaussianActor(encoder_for(observation_space, config.torso), config.hidden_sizes,
                                  int(np.prod(action_space.shape)), bounds, config.log_std_min, config.log_std_max)
    critic = TwinQ(encoder_for(observation_space, config.torso), config.hidden_sizes)
    return SACNetworks(actor, critic, config.initial_log_alpha)
