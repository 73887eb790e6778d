"""IMPALA's hyperparameters (Espeholt et al. 2018), with the paper's values as defaults."""

from __future__ import annotations

import dataclasses

from sebulba.cores import check_core
from sebulba.networks import TORSO_KINDS
from sebulba.schedules import check_decay_steps


@dataclasses.dataclass(frozen=True)
class ImpalaConfig:
    torso: str = "auto"  # one of TORSO_KINDS (sebulba.networks.torso_for)
    hidden_sizes: tuple[int, ...] = (64, 64)  # MLP torso
    separate_value_torso: bool = False  # a second torso for the baseline (the paper shares one)
    discount: float = 0.99
    lambda_: float = 1.0  # V-trace's lambda (c_i = lambda * min(c_bar, rho_i))
    clip_rho_threshold: float = 1.0  # rho bar
    clip_c_threshold: float = 1.0  # c bar
    clip_pg_rho_threshold: float = 1.0
    baseline_cost: float = 0.5
    entropy_cost: float = 0.01
    learning_rate: float = 6e-4
    lr_decay_steps: int | None = None  # linear decay to 0 over this many optimizer steps; None: constant
    rmsprop_decay: float = 0.99
    rmsprop_eps: float = 0.01
    rmsprop_momentum: float = 0.0
    # True: epsilon inside the square root, g / sqrt(nu + eps), as the paper's TensorFlow RMSProp.
    # False: g / (sqrt(nu) + eps), PyTorch's RMSProp, which the Cleanba peer uses (same 0.01).
    rmsprop_eps_in_sqrt: bool = True
    max_grad_norm: float = 40.0
    # "mean": the loss is a mean over the batch's valid steps. "sum": their sum over the whole
    # batch, as in the paper's code: its learning rate, RMSProp epsilon (0.01, inside the square
    # root) and gradient clip (40) assume summed gradients. With "mean" and those values RMSProp's
    # epsilon dwarfs the (T x B)-times smaller gradients, and the policy barely moves on Atari.
    loss_reduction: str = "mean"
    # Learn each trajectory as this many minibatches of its envs, one optimizer step each (the
    # Cleanba peer's num_minibatches): 64 envs as 2 minibatches keep the paper's batch of 32.
    num_minibatches: int = 1
    log_std_init: float = 0.0  # Box action spaces: the Gaussian policy's initial (state-independent) log std
    # Rewards are multiplied by this in the loss: keeps returns (and the baseline's targets) near
    # unit scale on tasks with large dense rewards (Pendulum's are -16..0 per step).
    reward_scale: float = 1.0
    # A recurrent core between the torso and the heads (sebulba/cores.py): "lstm", "gru", or "none"
    # (no memory). The learner re-unrolls it over each trajectory from the state it started from;
    # minibatches take whole envs' sequences, as they always do here.
    core: str = "none"
    core_size: int = 128  # the core's units

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        if self.torso not in TORSO_KINDS:
            raise ValueError(f"torso must be one of {TORSO_KINDS}, got {self.torso!r}")
        if self.loss_reduction not in ("mean", "sum"):
            raise ValueError(f"loss_reduction must be 'mean' or 'sum', got {self.loss_reduction!r}")
        if not isinstance(self.num_minibatches, int) or self.num_minibatches < 1:
            raise ValueError(f"num_minibatches must be a positive int, got {self.num_minibatches!r}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        if not 0.0 <= self.lambda_ <= 1.0:
            raise ValueError(f"lambda_ must be in [0, 1], got {self.lambda_}")
        for name in ("clip_rho_threshold", "clip_c_threshold", "clip_pg_rho_threshold", "learning_rate", "max_grad_norm",
                     "rmsprop_eps", "reward_scale"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("baseline_cost", "entropy_cost", "rmsprop_momentum"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 < self.rmsprop_decay < 1.0:
            raise ValueError(f"rmsprop_decay must be in (0, 1), got {self.rmsprop_decay}")
        check_decay_steps(self.lr_decay_steps)
        check_core(self.core, self.core_size)
