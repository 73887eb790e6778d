"""AlphaZero's hyperparameters (Silver et al. 2018; the search is Gumbel AlphaZero's, Danihelka et
al. 2022), scaled to small board games on a small host."""

from __future__ import annotations

import dataclasses

from sebulba.schedules import check_decay_steps
from sebulba.search import GumbelKnobs, SearchConfig


@dataclasses.dataclass(frozen=True)
class AlphaZeroConfig(GumbelKnobs):  # the search's knobs (num_simulations, ...: sebulba.search.GumbelKnobs) first
    torso: str = "auto"  # the network's torso over the board: see sebulba.networks.torso_for
    hidden_sizes: tuple[int, ...] = (128, 128)
    eval_simulations: int | None = None  # the evaluation policy's search (None: num_simulations)
    # Self-play's first plies of each game are uniformly random legal moves (their positions still
    # searched and learned): diverse games, where a peaked policy would replay one game in every env
    random_opening_plies: int = 0
    # the learner: positions from self-play, replayed uniformly
    learning_rate: float = 1e-3
    lr_decay_steps: int | None = None
    max_grad_norm: float | None = 1.0
    value_loss_weight: float = 1.0
    batch_size: int = 256  # positions per optimizer step, per learner device
    optims_per_cycle: int = 4
    replay_capacity: int = 100_000  # positions per learner device
    min_replay_size: int = 1_000

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        for name in ("learning_rate", "batch_size", "optims_per_cycle", "replay_capacity", "min_replay_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.random_opening_plies < 0:
            raise ValueError(f"random_opening_plies must be >= 0, got {self.random_opening_plies}")
        if self.eval_simulations is not None and self.eval_simulations < 1:
            raise ValueError(f"eval_simulations must be >= 1 or None, got {self.eval_simulations}")
        if self.value_loss_weight < 0:
            raise ValueError(f"value_loss_weight must be >= 0, got {self.value_loss_weight}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be > 0 or None, got {self.max_grad_norm}")
        check_decay_steps(self.lr_decay_steps)
        if self.min_replay_size > self.replay_capacity:
            raise ValueError(f"min_replay_size must be <= replay_capacity={self.replay_capacity}, got {self.min_replay_size}")
        self.search()  # the search's own rules, each with its own error

    def search(self, evaluation: bool = False) -> SearchConfig:
        """Self-play's search; in evaluation without Gumbel noise (deterministic), with
        eval_simulations."""
        return self.gumbel_search(evaluation, self.eval_simulations if evaluation else None)
