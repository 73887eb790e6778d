"""Agents that run on the Sebulba loop."""

from sebulba.agents.random_agent import RandomAgent
from sebulba.agents.simple_pg import SimplePolicyGradient, SPGConfig

__all__ = ["RandomAgent", "SPGConfig", "SimplePolicyGradient"]
