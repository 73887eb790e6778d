"""DQN (Mnih et al. 2015) with double Q-learning, n-step targets, Ape-X epsilons and an optional
dueling head, on the shared transition replay (sebulba.off_policy)."""

from sebulba.agents.dqn.agent import DQN
from sebulba.agents.dqn.config import DQNConfig

__all__ = ["DQN", "DQNConfig"]
