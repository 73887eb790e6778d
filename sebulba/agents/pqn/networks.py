"""PQN's Q-network: DQN's (a torso by observation space, a linear head of one Q-value per action)
with the paper's MLP (or MinAtar's CNN, or the Nature CNN): a LayerNorm after every hidden layer
(`PQNConfig.layer_norm`), and CleanRL's orthogonal initialisation (the MLP's and MinAtar's)."""

from __future__ import annotations

import math

import flax.linen as nn
import gymnasium as gym

from sebulba.agents.dqn.networks import QNetwork
from sebulba.agents.pqn.config import PQNConfig
from sebulba.networks import MinAtarCNN, MLPTorso, NatureCNN, torso_for


def make_network(observation_space: gym.spaces.Space, num_actions: int, config: PQNConfig) -> QNetwork:
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
    return QNetwork(torso, num_actions, dueling=False, kernel_init=init)
