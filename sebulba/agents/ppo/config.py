"""PPO's hyperparameters (Schulman et al. 2017), defaulting to CleanRL's `ppo.py` / Cleanba's
`cleanba_ppo.py` values; the experiment presets change them per kind of task."""

from __future__ import annotations

import dataclasses

from sebulba.cores import check_core
from sebulba.networks import TORSO_KINDS
from sebulba.schedules import check_decay_steps


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    torso: str = "auto"  # one of TORSO_KINDS (sebulba.networks.torso_for)
    hidden_sizes: tuple[int, ...] = (64, 64)  # MLP torsos
    activation: str = "tanh"  # MLP torsos (and heads): CleanRL's PPO uses tanh
    # Hidden layers of each head of its own (the policy's and the value's, after the torso and the
    # core): () for linear heads (CleanRL's); PureJaxRL's ppo_rnn.py and Craftax's PPO-RNN: (128,).
    head_sizes: tuple[int, ...] = ()
    # Separate actor and critic torsos (CleanRL's MLP PPO); False shares one (its Atari PPO, a CNN).
    separate_critic: bool = True
    discount: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2  # the surrogate's ratio clip epsilon
    clip_value_loss: bool = True  # clip the value's change to clip_coef around its value before the update
    value_cost: float = 0.5
    entropy_cost: float = 0.01
    normalize_advantages: bool = True  # per minibatch, over every learner device's share of it
    learning_rate: float = 2.5e-4
    lr_decay_steps: int | None = None  # linear decay to 0 over this many optimizer steps; None: constant
    adam_eps: float = 1e-5  # CleanRL's (PyTorch's default 1e-8 is less stable here)
    max_grad_norm: float = 0.5
    num_epochs: int = 4  # passes over each rollout (update_epochs)
    # Minibatches per epoch: each takes steps_per_cycle / num_minibatches of every env's steps.
    num_minibatches: int = 4
    # Running mean/variance of observations (vector observations), clipped to +-10 after
    # normalising, as CleanRL's MuJoCo PPO (gymnasium's NormalizeObservation + clip).
    normalize_observations: bool = False
    # Rewards divided by the running std of each env's discounted return, clipped to +-10
    # (gymnasium's NormalizeReward, CleanRL's MuJoCo PPO).
    scale_rewards: bool = False
    log_std_init: float = 0.0  # Gaussian policies: the initial (state-independent) log std
    # MAPPO: a centralised critic. The observation is a Dict {"obs": the player's, "state": the
    # env's global state} (a PettingZoo pool's global_state=True); the policy reads "obs", the
    # critic (a torso of its own) both. Execution stays decentralised: acting needs "obs" only.
    critic_state: bool = False
    # Mask the policy with the observation's "action_mask" where it has one (PettingZoo's classic
    # games: a Dict observation whose "action_mask" marks the legal moves of a Discrete space).
    action_mask: bool = True
    # A recurrent core between each torso and the heads (sebulba/cores.py): "lstm", "gru", or "none"
    # (no memory, the feed-forward network). With one, minibatches take whole envs' sequences, so
    # num_minibatches must divide each learner device's envs, and the learner re-unrolls the core
    # from the state each trajectory starts with.
    core: str = "none"
    core_size: int = 128  # the core's units (CleanRL's LSTM PPO and PureJaxRL's GRU PPO: 128)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        object.__setattr__(self, "head_sizes", tuple(self.head_sizes))
        if self.torso not in TORSO_KINDS:
            raise ValueError(f"torso must be one of {TORSO_KINDS}, got {self.torso!r}")
        if self.activation not in ("tanh", "relu"):
            raise ValueError(f"activation must be 'tanh' or 'relu', got {self.activation!r}")
        if not self.hidden_sizes or any(not isinstance(h, int) or h < 1 for h in self.hidden_sizes):
            raise ValueError(f"hidden_sizes must be positive ints, got {self.hidden_sizes}")
        if any(not isinstance(h, int) or h < 1 for h in self.head_sizes):
            raise ValueError(f"head_sizes must be positive ints (or none: linear heads), got {self.head_sizes}")
        for name in ("num_epochs", "num_minibatches"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        for name in ("discount", "gae_lambda"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("clip_coef", "learning_rate", "adam_eps", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("value_cost", "entropy_cost"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        check_decay_steps(self.lr_decay_steps)
        check_core(self.core, self.core_size)
