"""IMPALA's network: a torso (MLP, Nature CNN or IMPALA ResNet) with policy and baseline heads,
and optionally a recurrent core between them (`ImpalaConfig.core`, sebulba/cores.py; the
baseline's torso, where it has one, gets a core of its own)."""

from __future__ import annotations

import flax.linen as nn
import gymnasium as gym
import jax

from sebulba import observations
from sebulba.agents.impala.config import ImpalaConfig
from sebulba.cores import initial_states, through_cores
from sebulba.distributions import DiagGaussian, MultiCategorical
from sebulba.networks import GaussianHead, MLPTorso, torso_for
from sebulba.types import PyTree


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

    core: str = "none"  # the cores' kind (sebulba.cores.CORES; "none": no memory) ...
    core_size: int = 1  # ... and units

    def initial_state(self, batch: int) -> PyTree:
        """The recurrent state an episode starts from, for `batch` rows: `()` without a core."""
        return initial_states(self.core, self.core_size, batch, 1 + (self.value_torso is not None))

    @nn.compact
    def __call__(self, obs: jax.Array, state: PyTree = (), first: jax.Array | None = None,
                 sequence: bool = False) -> tuple[jax.Array | DiagGaussian | MultiCategorical, jax.Array, PyTree]:
        """obs [B, ...], the recurrent state before it and `first` [B] (rows that start an episode)
        -> (policy logits [B, A], a DiagGaussian [B, D] or a MultiCategorical [B, D, K], baseline
        values [B], the state after it). With `sequence`, obs and first are [T, B, ...] and the
        outputs [T, B, ...]: the torsos and heads see all rows at once, the cores step in order."""
        lead = jax.tree.leaves(obs)[0].shape[:2] if sequence else None
        rows = observations.merge_leading(obs) if sequence else obs
        features = (self.torso(rows),) + (() if self.value_torso is None else (self.value_torso(rows),))
        state, features = through_cores(self.core, self.core_size, state, features, first, lead)
        h, hv = features[0], features[-1]
        if self.continuous:
            policy = GaussianHead(self.num_actions, self.log_std_init, bounds=self.bounds, name="policy")(h)
        else:
            policy = nn.Dense(self.num_actions, name="policy")(h)
            if self.nvec is not None:
                policy = MultiCategorical.from_flat(policy, self.nvec)
        value = nn.Dense(1, name="baseline")(hv)[:, 0]
        if sequence:
            policy, value = jax.tree.map(lambda x: x.reshape(*lead, *x.shape[1:]), (policy, value))
        return policy, value, state


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
    return ImpalaNet(torso, size, value_torso, continuous, config.log_std_init, bounds, nvec, config.core,
                     config.core_size)
