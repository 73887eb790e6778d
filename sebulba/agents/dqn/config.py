"""DQN's hyperparameters. Defaults: Dopamine's DQN on Atari with Adam (lr 6.25e-5, eps 1.5e-4,
batch 32, one update per 4 env steps, 20k warm-up steps, target copied every 8,000 updates) with
double Q-learning, and Ape-X's per-env epsilons in place of an annealed one."""

from __future__ import annotations

import dataclasses

from sebulba.off_policy_config import OffPolicyConfig
from sebulba.schedules import check_decay_steps

VALUE_HEADS = ("scalar", "c51", "qr")  # sebulba.agents.dqn.value_heads


@dataclasses.dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    torso: str = "auto"  # see sebulba.networks.torso_for
    hidden_sizes: tuple[int, ...] = (64, 64)  # MLP torso
    dueling: bool = False  # value + advantage heads (Wang et al. 2016)
    double: bool = True  # the online network picks the bootstrap action, the target evaluates it
    huber_delta: float | None = 1.0  # the TD loss: Huber with this delta, None: 0.5 td^2 (qr: its kappa)
    value_head: str = "scalar"  # one of VALUE_HEADS: a Q-value, C51's distribution or QR-DQN's quantiles
    num_atoms: int = 51  # c51's atoms (C51's 51) or qr's quantiles (QR-DQN used 200 on Atari)
    v_min: float = -10.0  # c51's support: num_atoms evenly spaced from v_min to v_max (C51 on Atari)
    v_max: float = 10.0
    noisy: bool = False  # NoisyNet heads (Fortunato et al. 2018): learned, factorised Gaussian weight noise
    learning_rate: float = 6.25e-5
    lr_decay_steps: int | None = None  # linear decay to 0 over this many optimizer steps; None: constant
    adam_eps: float = 1.5e-4
    max_grad_norm: float | None = 10.0
    target_update_period: int = 8_000  # optimizer steps between copies of online into target
    epsilon_base: float = 0.4  # Ape-X: env i of N acts with epsilon_base ** (1 + epsilon_alpha * i / (N - 1))
    epsilon_alpha: float = 7.0
    # OffPolicyConfig's fields, with DQN's values:
    replay_capacity: int = 1_000_000
    batch_size: int = 32
    replay_ratio: float = 0.25
    learning_starts: int = 20_000

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        for name in ("learning_rate", "adam_eps", "target_update_period"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("huber_delta", "max_grad_norm"):
            if getattr(self, name) is not None and not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 or None, got {getattr(self, name)}")
        check_decay_steps(self.lr_decay_steps)
        if not 0.0 <= self.epsilon_base <= 1.0 or self.epsilon_alpha < 0:
            raise ValueError(f"epsilon_base must be in [0, 1] and epsilon_alpha >= 0, got {self.epsilon_base}, "
                             f"{self.epsilon_alpha}")
        if self.value_head not in VALUE_HEADS:
            raise ValueError(f"value_head must be one of {', '.join(VALUE_HEADS)}, got {self.value_head!r}")
        if self.num_atoms < 2:
            raise ValueError(f"num_atoms (c51's atoms, qr's quantiles) must be >= 2, got {self.num_atoms}")
        if not self.v_min < self.v_max:
            raise ValueError(f"c51's support needs v_min < v_max, got {self.v_min}, {self.v_max}")
