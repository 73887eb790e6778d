"""DQN (Mnih et al. 2015) with double Q-learning, n-step targets, Ape-X epsilons, an optional
dueling head and NoisyNet layers, and a scalar, categorical (C51) or quantile (QR-DQN) value head,
on the shared transition replay (sebulba.off_policy): Rainbow is a configuration of it."""

from sebulba.agents.dqn.agent import DQN
from sebulba.agents.dqn.config import VALUE_HEADS, DQNConfig

__all__ = ["DQN", "DQNConfig", "VALUE_HEADS"]
