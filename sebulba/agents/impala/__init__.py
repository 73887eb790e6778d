"""IMPALA: config, networks, V-trace and losses, agent."""

from sebulba.agents.impala.agent import Impala
from sebulba.agents.impala.config import ImpalaConfig

__all__ = ["Impala", "ImpalaConfig"]
