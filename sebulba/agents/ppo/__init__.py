"""PPO: config, networks, GAE and losses, agent."""

from sebulba.agents.ppo.agent import PPO
from sebulba.agents.ppo.config import PPOConfig

__all__ = ["PPO", "PPOConfig"]
