"""The replay settings every transition-replay agent shares (DQN, SAC, TD3 and a user's own):
the base of their configs. `sebulba.off_policy.OffPolicyAgent` reads them."""

from __future__ import annotations

import dataclasses

from sebulba.networks import TORSO_KINDS


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig:
    """Replay, replay ratio and warm-up.

    replay_ratio is gradient updates per env step: one optimizer step of `batch_size` transitions
    (per learner device) for every 1 / replay_ratio env steps of all envs together, so each
    inserted transition is sampled replay_ratio x batch_size x learner devices times on average.
    A loop cycle of N envs x T steps therefore gets replay_ratio x N x T optimizer steps, which
    must be a whole number (the error says which values fit). CleanRL's SAC and TD3 (one env, one
    update per step) are replay_ratio 1.

    learning_starts counts env steps of all envs: no optimizer step (and no target update) runs
    before the replays of all learner devices together hold that many transitions, and until the
    first optimizer step reaches the actors they act uniformly at random (CleanRL's and SB3's
    warm-up)."""

    replay_capacity: int = 1_000_000  # transitions per learner device
    batch_size: int = 256  # transitions per optimizer step, per learner device
    replay_ratio: float = 1.0  # gradient updates per env step (all envs)
    learning_starts: int = 5_000  # env steps (all envs) before the first update
    n_step: int = 1  # n of the n-step bootstrapped targets
    discount: float = 0.99
    priority_exponent: float = 0.0  # 0: uniform sampling; > 0: prioritized by |TD| ** this
    importance_sampling_exponent: float = 0.4  # prioritized replay's correction (unused when uniform)

    def __post_init__(self) -> None:
        for name in ("replay_capacity", "batch_size", "n_step"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.replay_ratio > 0:
            raise ValueError(f"replay_ratio (gradient updates per env step) must be > 0, got {self.replay_ratio}")
        if self.learning_starts < 0:
            raise ValueError(f"learning_starts must be >= 0 env steps, got {self.learning_starts}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        if self.priority_exponent < 0:
            raise ValueError(f"priority_exponent must be >= 0 (0: uniform), got {self.priority_exponent}")
        if not 0.0 <= self.importance_sampling_exponent <= 1.0:
            raise ValueError(f"importance_sampling_exponent must be in [0, 1], got {self.importance_sampling_exponent}")

    @property
    def prioritized(self) -> bool:
        return self.priority_exponent > 0


@dataclasses.dataclass(frozen=True)
class ActorCriticConfig(OffPolicyConfig):
    """What SAC's and TD3's configs add in common: the networks' shape and the targets' Polyak rate."""

    torso: str = "auto"  # sebulba.networks.torso_for: the encoder before each MLP
    hidden_sizes: tuple[int, ...] = (256, 256)  # the actor's and each critic's MLP
    tau: float = 0.005  # Polyak: target <- tau * online + (1 - tau) * target

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        if self.torso not in TORSO_KINDS:
            raise ValueError(f"torso must be one of {TORSO_KINDS}, got {self.torso!r}")
        if not self.hidden_sizes or any(not isinstance(h, int) or h < 1 for h in self.hidden_sizes):
            raise ValueError(f"hidden_sizes must be positive ints, got {self.hidden_sizes}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
