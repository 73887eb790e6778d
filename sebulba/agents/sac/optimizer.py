"""SAC's optimizer over `SACParams`: an Adam per part, each with its own learning rate
(`optax.partition`), the actor and the temperature delayed by policy_frequency (SACConfig says how
that stands for CleanRL's k actor steps)."""

from __future__ import annotations

import optax

from sebulba.agents.sac.config import SACConfig
from sebulba.agents.sac.networks import SACParams
from sebulba.optim import every_nth


def make_optimizer(config: SACConfig) -> optax.GradientTransformation:
    """critic: Adam(q_lr) every step; actor: Adam(policy_lr * k) and, when autotuned, log alpha:
    Adam(q_lr * k), every k = policy_frequency steps; a fixed temperature never moves."""
    k = config.policy_frequency

    def delayed(learning_rate: float) -> optax.GradientTransformation:
        return every_nth(optax.adam(learning_rate * k), k)

    return optax.partition(
        {"actor": delayed(config.policy_lr), "critic": optax.adam(config.q_lr),
         "alpha": delayed(config.q_lr) if config.autotune else optax.set_to_zero()},
        SACParams(actor="actor", critic="critic", log_alpha="alpha"))
