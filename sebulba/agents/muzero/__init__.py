"""MuZero (Schrittwieser et al. 2020) with Gumbel MuZero's search (Danihelka et al. 2022): the
actors plan with the learned model in their jitted step; see agent.py."""

from sebulba.agents.muzero.agent import MuZero
from sebulba.agents.muzero.config import MuZeroConfig

__all__ = ["MuZero", "MuZeroConfig"]
