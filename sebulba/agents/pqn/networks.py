"""PQN's Q-network: DQN's (a torso by observation space, a linear head of one Q-value per action)
with the paper's MLP (or MinAtar's CNN, or the Nature CNN): a LayerNorm after every hidden layer
(`PQNConfig.layer_norm`), and CleanRL's orthogonal initialisation (the MLP's and MinAtar's)."""

from __future__ import annotations

import math

from collections.abc import Callable

import flax.linen as nn
import gymnasium as gym
import jax

from sebulba import observations
from sebulba.agents.dqn.networks import QNetwork
from sebulba.agents.pqn.config import PQNConfig
from sebulba.cores import initial_states, through_cores
from sebulba.networks import MinAtarCNN, MLPTorso, NatureCNN, torso_for


class RecurrentQNetwork(nn.Module):
    """PQN-RNN's network: the torso, a recurrent core (sebulba/cores.py), a linear head of one
    Q-value per action. `apply(params, obs, state, first)` -> (Q [B, A], state after it) for one
    step; with `sequence`, obs and first are [T, B, ...] (time-major), the core is unrolled from
    `state` over them (resets at `first` included) and Q is [T, B, A]."""

    torso: nn.Module
    num_actions: int
    core: str
    core_size: int
    kernel_init: Callable[..., jax.Array]

    def initial_state(self, batch: int):
        """The state an episode starts from, [batch, ...] per leaf (no parameters needed)."""
        return initial_states(self.core, self.core_size, batch)

    @nn.compact
    def __call__(self, obs, state, first: jax.Array, sequence: bool = False):
        lead = jax.tree.leaves(obs)[0].shape[:2] if sequence else None
        rows = observations.merge_leading(obs) if sequence else obs
        state, (features,) = through_cores(self.core, self.core_size, state, (self.torso(rows),), first, lead,
                                           names=("core",))
        q = nn.Dense(self.num_actions, kernel_init=self.kernel_init, name="q")(features)
        return (q.reshape(*lead, -1) if sequence else q), state


def make_network(observation_space: gym.spaces.Space, num_actions: int,
                 config: PQNConfig) -> QNetwork | RecurrentQNetwork:
    # CleanRL's layer_init (orthogonal, gain sqrt 2, every layer): with flax's default (LeCun normal)
    # the CartPole preset's seed 0 ended at 309, with it at 500 (2026-11-29).
    init = nn.initializers.orthogonal(math.sqrt(2))
    torso = torso_for(observation_space, config.torso)
    if isinstance(torso, MLPTorso):
        torso = torso.clone(hidden_sizes=config.hidden_sizes, layer_norm=config.layer_norm, kernel_init=init)
    elif isinstance(torso, MinAtarCNN):
        torso = torso.clone(layer_norm=config.layer_norm, kernel_init=init)
    elif isinstance(torso, NatureCNN):
        torso = torso.clone(layer_norm=config.layer_norm)
    if config.core != "none":
        return RecurrentQNetwork(torso, num_actions, config.core, config.core_size, kernel_init=init)
    return QNetwork(torso, num_actions, dueling=False, kernel_init=init)
