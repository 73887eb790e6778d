"""IMPALA's network: a torso (MLP, Nature CNN or IMPALA ResNet) with policy and baseline heads."""

from __future__ import annotations

import flax.linen as nn
import gymnasium as gym
import jax

from sebulba.agents.impala.config import ImpalaConfig
from sebulba.distributions import DiagGaussian, MultiCategorical
from sebulba.networks import GaussianHead, MLPTorso, torso_for


class ImpalaNet(nn.Module):
    """A torso with policy and baseline heads; with `value_torso`, the baseline has its own torso
    (large baseline gradients on unscaled returns then cannot disturb the policy's features).
    The policy: logits of a Discrete space's actions; for a MultiDiscrete one (`nvec`) a
    `MultiCategorical` over its sum(nvec) logits; or for a Box (`continuous`) a Gaussian over its
    `num_actions` dims with a state-independent log std and its mean kept inside `bounds`."""

    torso: nn.Module
    num_actions: int
    value_torso: nn.Module | None = None
    continuous: bool = False
    log_std_init: float = 0.0
    bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None  # the Box's, for the Gaussian's mean
    nvec: tuple[int, ...] | None = None  # a MultiDiscrete space's: the logits split per dimension

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array | DiagGaussian | MultiCategorical, jax.Array]:
        """obs [B, ...] -> (policy logits [B, A], a DiagGaussian [B, D] or a MultiCategorical [B, D, K],
        baseline values [B])."""
        h = self.torso(obs)
        hv = h if self.value_torso is None else self.value_torso(obs)
        if self.continuous:
            policy = GaussianHead(self.num_actions, self.log_std_init, bounds=self.bounds, name="policy")(h)
        else:
            policy = nn.Dense(self.num_actions, name="policy")(h)
            if self.nvec is not None:
                policy = MultiCategorical.from_flat(policy, self.nvec)
        return policy, nn.Dense(1, name="baseline")(hv)[:, 0]


def make_network(observation_space: gym.spaces.Space, action_space: gym.spaces.Space, config: ImpalaConfig) -> ImpalaNet:
    torso = torso_for(observation_space, config.torso)
    if isinstance(torso, MLPTorso):
        torso = torso.clone(hidden_sizes=config.hidden_sizes)
    value_torso = torso.clone() if config.separate_value_torso else None
    continuous = isinstance(action_space, gym.spaces.Box)
    nvec = tuple(map(int, action_space.nvec)) if isinstance(action_space, gym.spaces.MultiDiscrete) else None
    size = action_space.shape[0] if continuous else sum(nvec) if nvec else int(action_space.n)
    # V-trace's policy gradient on clipped actions drifted the Gaussian's mean far outside the
    # bounds (Pendulum: |mean| 10-40, every action clipped, learning stalled): IMPALA keeps it in.
    bounds = (tuple(map(float, action_space.low)), tuple(map(float, action_space.high))) if continuous else None
    return ImpalaNet(torso, size, value_torso, continuous, config.log_std_init, bounds, nvec)
