"""R2D2: config, networks, returns (value rescaling, n-step double Q), sequence replay, agent."""

from sebulba.agents.r2d2.agent import R2D2
from sebulba.agents.r2d2.config import R2D2Config

__all__ = ["R2D2", "R2D2Config"]
