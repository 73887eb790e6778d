"""IMPALA's network: a torso (MLP, Nature CNN or IMPALA ResNet) with policy and baseline heads."""

from __future__ import annotations

import flax.linen as nn
import gymnasium as gym
import jax

from sebulba.agents.impala.config import ImpalaConfig
from sebulba.networks import MLPTorso, torso_for


class ImpalaNet(nn.Module):
    """A torso with policy and baseline heads; with `value_torso`, the baseline has its own torso
    (large baseline gradients on unscaled returns then cannot disturb the policy's features)."""

    torso: nn.Module
    num_actions: int
    value_torso: nn.Module | None = None

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """obs [B, ...] -> (policy logits [B, A], baseline values [B])."""
        h = self.torso(obs)
        hv = h if self.value_torso is None else self.value_torso(obs)
        return nn.Dense(self.num_actions, name="policy")(h), nn.Dense(1, name="baseline")(hv)[:, 0]


def make_network(observation_space: gym.spaces.Space, num_actions: int, config: ImpalaConfig) -> ImpalaNet:
    torso = torso_for(observation_space, config.torso)
    if isinstance(torso, MLPTorso):
        torso = torso.clone(hidden_sizes=config.hidden_sizes)
    value_torso = torso.clone() if config.separate_value_torso else None
    return ImpalaNet(torso, num_actions, value_torso)
