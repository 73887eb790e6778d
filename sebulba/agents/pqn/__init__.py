"""PQN (Gallici et al. 2024): Q(lambda) targets over the rollouts of many parallel envs, no replay,
no target network, LayerNorm for stability, epsilon-greedy actors."""

from sebulba.agents.pqn.agent import PQN
from sebulba.agents.pqn.config import PQNConfig

__all__ = ["PQN", "PQNConfig"]
