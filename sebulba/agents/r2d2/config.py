"""R2D2's hyperparameters (Kapturowski et al. 2019, table 2) as defaults."""

from __future__ import annotations

import dataclasses

from sebulba.schedules import check_decay_steps


@dataclasses.dataclass(frozen=True)
class R2D2Config:
    core: str = "lstm"  # "lstm" | "mlp": the memory ablation replaces the LSTM with a Dense layer
    torso: str = "auto"  # see sebulba.networks.torso_for
    hidden_sizes: tuple[int, ...] = (64,)  # MLP torso
    core_size: int = 512  # LSTM units (or the MLP core's width)
    sequence_length: int = 80  # m; the loop's cycles are m / 2 steps, so sequences overlap by m / 2
    burn_in: int = 40  # l: steps that only warm up the recurrent state (no gradients)
    n_step: int = 5
    discount: float = 0.997
    rescaling_eps: float = 1e-3  # h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x
    learning_rate: float = 1e-4
    lr_decay_steps: int | None = None  # linear decay to 0 over this many learner steps; None: constant (the paper)
    adam_eps: float = 1e-3
    max_grad_norm: float | None = None  # the paper does not clip
    # A sequence's loss over its valid steps after burn-in: "sum" (acme's R2D2, which the paper's
    # Adam epsilon 1e-3 assumes; m - l = 40 steps give gradients 40x a mean's) or "mean".
    td_reduction: str = "mean"
    batch_size: int = 64  # sequences per optimizer step, per learner device
    optims_per_cycle: int = 1  # learner steps per actor cycle
    target_update_period: int = 2500  # learner steps between target-network copies
    replay_capacity: int = 10_000  # sequences per learner device
    min_replay_size: int = 100  # sequences per learner device before learning starts
    priority_exponent: float = 0.9
    importance_sampling_exponent: float = 0.6
    priority_eta: float = 0.9  # priority = eta * max|td| + (1 - eta) * mean|td| over a sequence
    epsilon_base: float = 0.4  # Ape-X: env i of N acts with epsilon_base ** (1 + epsilon_alpha * i / (N - 1))
    epsilon_alpha: float = 7.0
    eval_epsilon: float = 0.001  # the evaluation policy's epsilon (the paper's)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        if self.core not in ("lstm", "mlp"):
            raise ValueError(f"core must be 'lstm' or 'mlp', got {self.core!r}")
        if self.td_reduction not in ("mean", "sum"):
            raise ValueError(f"td_reduction must be 'mean' or 'sum', got {self.td_reduction!r}")
        if self.sequence_length < 2 or self.sequence_length % 2:
            raise ValueError(f"sequence_length must be even and >= 2 (cycles are half a sequence), got {self.sequence_length}")
        if not 0 <= self.burn_in < self.sequence_length:
            raise ValueError(f"burn_in must be in [0, sequence_length={self.sequence_length}), got {self.burn_in}")
        if self.n_step < 1:
            raise ValueError(f"n_step must be >= 1, got {self.n_step}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        for name in ("learning_rate", "adam_eps", "rescaling_eps", "core_size", "batch_size", "optims_per_cycle",
                     "target_update_period", "replay_capacity"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        check_decay_steps(self.lr_decay_steps)
        if not 1 <= self.min_replay_size <= self.replay_capacity:
            raise ValueError(f"min_replay_size must be in [1, replay_capacity={self.replay_capacity}], got {self.min_replay_size}")
        if not 0.0 <= self.priority_eta <= 1.0:
            raise ValueError(f"priority_eta must be in [0, 1], got {self.priority_eta}")
        if not 0.0 <= self.eval_epsilon <= 1.0:
            raise ValueError(f"eval_epsilon must be in [0, 1], got {self.eval_epsilon}")
        if not 0.0 < self.epsilon_base <= 1.0 or self.epsilon_alpha < 0:
            raise ValueError("epsilon_base must be in (0, 1] and epsilon_alpha >= 0")

    @property
    def cycle_length(self) -> int:
        """The loop's steps_per_cycle for this config."""
        return self.sequence_length // 2
