"""MuZero's hyperparameters (Schrittwieser et al. 2020; the search is Gumbel MuZero's, Danihelka
et al. 2022), scaled to state-based tasks on a small host."""

from __future__ import annotations

import dataclasses

from sebulba.schedules import check_decay_steps
from sebulba.search import GumbelKnobs, SearchConfig


VALUE_TARGETS = ("network", "search", "q_lambda")


@dataclasses.dataclass(frozen=True)
class MuZeroConfig(GumbelKnobs):  # the search's knobs (num_simulations, ...: sebulba.search.GumbelKnobs) first
    torso: str = "auto"  # the representation's encoder: see sebulba.networks.torso_for
    hidden_sizes: tuple[int, ...] = (64,)  # the encoder's and each function's MLP layers
    latent_size: int = 64
    sequence_length: int = 20  # replayed sequences; the loop's cycles are half of one
    unroll_steps: int = 5  # K
    td_steps: int = 10  # n of the value targets
    # what the n-step value targets bootstrap from: "network", the target network's value of the replayed
    # observation, recomputed at each update (MuZero Reanalyse's fresh values); "search", the root value the
    # actor's search had when it acted there (the paper's non-reanalysed MuZero; stored beside its policy);
    # "q_lambda", Peng's Q(lambda) returns of the actions taken, each step bootstrapping from the target network's
    # greedy one-step lookahead max_a r(x, a) + gamma v(g(h(x), a)) (td_steps unused): the values of the greedy
    # policy the evaluation plays, not of the exploring one the actors play
    value_target: str = "network"
    value_lambda: float = 0.65  # lambda of the "q_lambda" value target (PQN's MinAtar lambda)
    discount: float = 0.997
    rescaling_eps: float = 1e-3  # values and rewards are predicted in h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x
    # S: the value and reward heads categorical over the integers -S..S of that space (two-hot targets,
    # cross-entropy: the paper's heads, its Atari S = 300); 0: scalar heads learned by squared error
    support_size: int = 0
    # the learner
    learning_rate: float = 1e-3
    lr_decay_steps: int | None = None
    max_grad_norm: float | None = 5.0
    value_loss_weight: float = 0.25  # MuZero Reanalyse's weight of the value loss
    entropy_cost: float = 0.0  # a bonus on the policy's entropy: keeps self-play exploring where the improved policy turns greedy
    # the bonus decayed linearly to 0 over this many optimizer steps (None: constant): exploring while the
    # model learns what the other actions do, then a policy whose values are its own
    entropy_decay_steps: int | None = None
    # EfficientZero's self-supervised consistency (Ye et al. 2021; 0: none, their weight 2): each unrolled latent
    # g^k(h(x_t), a_t..a_{t+k-1}), through a projection and a predictor head, is drawn to the projection of
    # h(x_{t+k}) (stop-gradient; negative cosine similarity), so the dynamics learn what an action does to the
    # observation, not only to the value, reward and policy heads of the actions taken
    consistency_weight: float = 0.0
    # an exploration floor under the search's action (0: none): env i of N acts uniformly at random with
    # probability epsilon_base ** (1 + epsilon_alpha * i / (N - 1)) (Ape-X's spread, as DQN's and R2D2's)
    epsilon_base: float = 0.0
    epsilon_alpha: float = 7.0
    batch_size: int = 16  # sequences per optimizer step, per learner device
    optims_per_cycle: int = 4
    target_update_period: int = 100  # learner steps between copies of the target network (value bootstraps)
    replay_capacity: int = 5_000  # sequences per learner device
    min_replay_size: int = 50
    priority_exponent: float = 1.0  # MuZero's alpha
    importance_sampling_exponent: float = 1.0  # and beta
    priority_eta: float = 0.9  # a sequence's priority: eta max + (1 - eta) mean of its |value errors|

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        if self.sequence_length < 2 or self.sequence_length % 2:
            raise ValueError(f"sequence_length must be even and >= 2 (cycles are half a sequence), got {self.sequence_length}")
        for name in ("latent_size", "unroll_steps", "td_steps", "learning_rate", "rescaling_eps", "batch_size",
                     "optims_per_cycle", "target_update_period", "replay_capacity"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.value_target not in VALUE_TARGETS:
            raise ValueError(f"value_target must be one of {VALUE_TARGETS}, got {self.value_target!r}")
        if not 0.0 <= self.value_lambda <= 1.0:
            raise ValueError(f"value_lambda must be in [0, 1], got {self.value_lambda}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        if not 0.0 <= self.epsilon_base <= 1.0 or self.epsilon_alpha < 0:
            raise ValueError(f"epsilon_base must be in [0, 1] and epsilon_alpha >= 0, got {self.epsilon_base}, "
                             f"{self.epsilon_alpha}")
        for name in ("value_loss_weight", "entropy_cost", "consistency_weight", "support_size"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be > 0 or None, got {self.max_grad_norm}")
        check_decay_steps(self.lr_decay_steps)
        if self.entropy_decay_steps is not None and self.entropy_decay_steps < 1:
            raise ValueError(f"entropy_decay_steps must be >= 1 or None, got {self.entropy_decay_steps}")
        if not 1 <= self.min_replay_size <= self.replay_capacity:
            raise ValueError(f"min_replay_size must be in [1, replay_capacity={self.replay_capacity}], got {self.min_replay_size}")
        if not 0.0 <= self.priority_eta <= 1.0:
            raise ValueError(f"priority_eta must be in [0, 1], got {self.priority_eta}")
        self.search()  # the search's own rules, each with its own error

    @property
    def cycle_length(self) -> int:
        """The loop's steps_per_cycle for this config."""
        return self.sequence_length // 2

    def search(self, evaluation: bool = False) -> SearchConfig:
        """The actors' search; in evaluation without Gumbel noise (deterministic)."""
        return self.gumbel_search(evaluation)
