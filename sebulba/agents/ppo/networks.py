"""PPO's actor-critic: a torso (or one per head) with a policy head (categorical logits, one
categorical per dimension of a MultiDiscrete space, or a Gaussian) and a value head, initialised
as CleanRL's PPO: orthogonal weights, gain sqrt(2) in the MLP torsos, 0.01 for the policy's
output (a near-uniform first policy) and 1 for the value's."""

from __future__ import annotations

import math

import flax.linen as nn
import gymnasium as gym
import jax

from sebulba.agents.ppo.config import PPOConfig
from sebulba.distributions import Categorical, Distribution, MultiCategorical
from sebulba.networks import GaussianHead, MLPTorso, torso_for


class PPONet(nn.Module):
    torso: nn.Module
    critic_torso: nn.Module | None  # None: the value head shares the policy's torso
    num_outputs: int  # actions of a Discrete space, dims of a Box one, or sum(nvec) of a MultiDiscrete one
    continuous: bool
    log_std_init: float = 0.0
    nvec: tuple[int, ...] | None = None  # a MultiDiscrete space's: the logits split per dimension

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[Distribution, jax.Array]:
        """obs [B, ...] (normalised if the agent normalises) -> (policy [B], values [B])."""
        h = self.torso(obs)
        hv = h if self.critic_torso is None else self.critic_torso(obs)
        small = nn.initializers.orthogonal(0.01)
        if self.continuous:
            policy = GaussianHead(self.num_outputs, self.log_std_init, small, name="policy")(h)
        else:
            logits = nn.Dense(self.num_outputs, kernel_init=small, name="policy")(h)
            policy = Categorical(logits) if self.nvec is None else MultiCategorical.from_flat(logits, self.nvec)
        value = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0), name="value")(hv)[:, 0]
        return policy, value


def make_network(observation_space: gym.spaces.Space, action_space: gym.spaces.Space, config: PPOConfig) -> PPONet:
    torso = torso_for(observation_space, config.torso)
    if isinstance(torso, MLPTorso):
        activation = {"tanh": nn.tanh, "relu": nn.relu}[config.activation]
        torso = torso.clone(hidden_sizes=config.hidden_sizes, activation=activation,
                            kernel_init=nn.initializers.orthogonal(math.sqrt(2.0)))
    critic = torso.clone() if config.separate_critic else None
    continuous = isinstance(action_space, gym.spaces.Box)
    nvec = tuple(map(int, action_space.nvec)) if isinstance(action_space, gym.spaces.MultiDiscrete) else None
    outputs = action_space.shape[0] if continuous else sum(nvec) if nvec else int(action_space.n)
    return PPONet(torso, critic, outputs, continuous, config.log_std_init, nvec)
