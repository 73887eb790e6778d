"""PQN's hyperparameters (Gallici et al. 2024), defaulting to purejaxql's `pqn_minatar.yaml`
(128 envs x 32 steps in its runs, 2 epochs of 32 minibatches, RAdam 5e-4 decayed, gamma 0.99,
lambda 0.65, epsilon 1 -> 0.05 over the first 10% of the run, LayerNorm after every hidden
layer); the experiment presets change them per kind of task (experiments/pqn.py)."""

from __future__ import annotations

import dataclasses

from sebulba.cores import check_core
from sebulba.networks import TORSO_KINDS
from sebulba.schedules import check_decay_steps


@dataclasses.dataclass(frozen=True)
class PQNConfig:
    torso: str = "auto"  # see sebulba.networks.torso_for
    hidden_sizes: tuple[int, ...] = (128, 128)  # MLP torsos
    # LayerNorm after each hidden layer's Dense, before its relu: what stabilises Q-learning here
    # without a target network (the paper's point); False: the plain torso.
    layer_norm: bool = True
    discount: float = 0.99
    q_lambda: float = 0.65  # the Q(lambda) targets' lambda (0: one-step targets)
    learning_rate: float = 5e-4
    lr_decay_steps: int | None = None  # linear decay to 0 over this many optimizer steps; None: constant
    max_grad_norm: float = 10.0
    num_epochs: int = 2  # passes over each rollout
    num_minibatches: int = 32  # per epoch: each takes steps_per_cycle * envs / num_minibatches steps
    reward_scale: float = 1.0  # rewards are multiplied by it before the targets (purejaxql's CartPole: 0.1)
    # Epsilon-greedy acting: epsilon_start decayed linearly to epsilon_finish over the first
    # epsilon_decay_updates learner updates. The experiment recipe sets epsilon_decay_updates to
    # exploration_fraction of the run's updates.
    epsilon_start: float = 1.0
    epsilon_finish: float = 0.05
    exploration_fraction: float = 0.1
    epsilon_decay_updates: int = 1
    evaluation_epsilon: float = 0.0  # evaluation acts greedily (purejaxql's EPS_TEST)
    # A recurrent core between the torso and the head (sebulba/cores.py): "lstm", "gru", or "none"
    # (no memory). With one (the paper's PQN-RNN) the actors carry its state, the learner re-unrolls
    # it over the rollout, and minibatches take whole envs' sequences.
    core: str = "none"
    core_size: int = 128

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        if self.torso not in TORSO_KINDS:
            raise ValueError(f"torso must be one of {TORSO_KINDS}, got {self.torso!r}")
        if not self.hidden_sizes or any(not isinstance(h, int) or h < 1 for h in self.hidden_sizes):
            raise ValueError(f"hidden_sizes must be positive ints, got {self.hidden_sizes}")
        for name in ("num_epochs", "num_minibatches", "epsilon_decay_updates"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        for name in ("discount", "q_lambda", "epsilon_start", "epsilon_finish", "evaluation_epsilon"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not 0.0 < self.exploration_fraction <= 1.0:
            raise ValueError(f"exploration_fraction must be in (0, 1], got {self.exploration_fraction}")
        for name in ("learning_rate", "max_grad_norm", "reward_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        check_decay_steps(self.lr_decay_steps)
        check_core(self.core, self.core_size)
