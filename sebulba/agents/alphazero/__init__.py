"""AlphaZero (Silver et al. 2018) with Gumbel AlphaZero's search (Danihelka et al. 2022): self-play
with the env's true model, on turn-based JAX games in the Anakin loop."""

from sebulba.agents.alphazero.agent import AlphaZero
from sebulba.agents.alphazero.config import AlphaZeroConfig

__all__ = ["AlphaZero", "AlphaZeroConfig"]
