"""TD3's hyperparameters (Fujimoto et al. 2018), defaulting to CleanRL's
`td3_continuous_action.py`; the replay's (batch 256, capacity 1e6, one update per env step) are
the base's, `OffPolicyConfig`, with the paper's 25,000 random steps first."""

from __future__ import annotations

import dataclasses

from sebulba.off_policy_config import ActorCriticConfig


@dataclasses.dataclass(frozen=True)
class TD3Config(ActorCriticConfig):
    """The noises are standard deviations (clip: a bound) in units of the action scale,
    (high - low) / 2, as CleanRL's: exploration N(0, 0.1 scale) on the actor's action, target
    smoothing N(0, 0.2 scale) clipped to +-0.5 scale. policy_delay d: the actor takes one Adam step
    every d critic steps, and the targets (actor and critics) follow by Polyak on those steps only
    (the paper's and CleanRL's delayed updates; `make_optimizer`, `follow_targets`)."""

    learning_starts: int = 25_000
    learning_rate: float = 3e-4  # actor and critics
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    exploration_noise: float = 0.1
    policy_delay: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        for name in ("policy_noise", "noise_clip", "exploration_noise"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (in units of the action scale), got {getattr(self, name)}")
        if not isinstance(self.policy_delay, int) or isinstance(self.policy_delay, bool) or self.policy_delay < 1:
            raise ValueError(f"policy_delay must be an int >= 1, got {self.policy_delay!r}")
