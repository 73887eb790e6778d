"""DQN's Q-network: a torso (MLP or CNN by observation space) and a linear or dueling head."""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import gymnasium as gym
import jax

from sebulba.agents.dqn.config import DQNConfig
from sebulba.networks import MLPTorso, torso_for


class QNetwork(nn.Module):
    torso: nn.Module
    num_actions: int
    dueling: bool
    kernel_init: Callable[..., jax.Array] = nn.initializers.lecun_normal()  # the heads' (flax's Dense default)

    @nn.compact
    def __call__(self, obs) -> jax.Array:
        """Q-values [B, A] for a batch of observations."""
        x = self.torso(obs)
        if not self.dueling:
            return nn.Dense(self.num_actions, kernel_init=self.kernel_init, name="q")(x)
        value = nn.Dense(1, kernel_init=self.kernel_init, name="value")(x)
        advantage = nn.Dense(self.num_actions, kernel_init=self.kernel_init, name="advantage")(x)
        return value + advantage - advantage.mean(-1, keepdims=True)


def make_network(observation_space: gym.spaces.Space, num_actions: int, config: DQNConfig) -> QNetwork:
    torso = torso_for(observation_space, config.torso)
    if isinstance(torso, MLPTorso):
        torso = torso.clone(hidden_sizes=config.hidden_sizes)
    return QNetwork(torso, num_actions, config.dueling)
