"""SAC's hyperparameters (Haarnoja et al. 2018, with a learned temperature), defaulting to
CleanRL's `sac_continuous_action.py`; the replay's (batch 256, learning_starts 5,000, capacity 1e6,
one update per env step) are the base's, `OffPolicyConfig`."""

from __future__ import annotations

import dataclasses
import math

from sebulba.off_policy_config import ActorCriticConfig


@dataclasses.dataclass(frozen=True)
class SACConfig(ActorCriticConfig):
    """policy_frequency k: CleanRL updates the critics every step and, every k-th step, the actor
    and the temperature k times in a row on the same batch (the delay compensated). Here every
    optimizer step is one gradient of one batch (a fixed shape), so on every k-th step the actor
    and the temperature take ONE Adam step at k times their learning rate, and none on the others
    (`sebulba.optim.every_nth`): Adam's step barely depends on the gradient's scale, so k steps
    of lr on nearly the same gradient move about as far as one of k * lr, and the critics get the
    same k steps between actor updates. policy_frequency 1 updates all three every step (SB3's SAC).

    The temperature: learned (autotune) from alpha 1 (log alpha 0, CleanRL's start) towards the
    target entropy (None: -dim(A), the paper's), with q_lr (CleanRL's); or, with autotune False,
    fixed at `alpha`."""

    policy_lr: float = 3e-4
    q_lr: float = 1e-3  # the critics' and the temperature's
    policy_frequency: int = 2  # actor and temperature: one step (at k x their lr) every k critic steps
    autotune: bool = True
    alpha: float = 0.2  # the temperature when autotune is False
    target_entropy: float | None = None  # autotune's; None: -dim(A)
    log_std_min: float = -5.0  # the policy's log std, squashed into [min, max] by a tanh
    log_std_max: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("policy_lr", "q_lr", "alpha"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not isinstance(self.policy_frequency, int) or isinstance(self.policy_frequency, bool) \
                or self.policy_frequency < 1:
            raise ValueError(f"policy_frequency must be an int >= 1, got {self.policy_frequency!r}")
        if not self.log_std_min < self.log_std_max:
            raise ValueError(f"log_std_min must be < log_std_max, got ({self.log_std_min}, {self.log_std_max})")

    @property
    def initial_log_alpha(self) -> float:
        """log alpha at the start: 0 (alpha 1) when learned, log(alpha) when fixed."""
        return 0.0 if self.autotune else math.log(self.alpha)

    def entropy_target(self, action_dim: int) -> float:
        """The temperature's target entropy for actions of action_dim dims."""
        return -float(action_dim) if self.target_entropy is None else float(self.target_entropy)
