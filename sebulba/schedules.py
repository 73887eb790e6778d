"""The learning-rate schedule of every agent that decays its learning rate (IMPALA, PPO, R2D2), and
MuZero's decaying entropy bonus (`MuZeroConfig.entropy_decay_steps`).

An agent's config holds `learning_rate` and `lr_decay_steps`; the experiment recipe
(sebulba.experiment.recipe) sets lr_decay_steps to the optimizer steps the run's budget takes, and
the agent's `optimizer()` passes both to `linear_decay`.
"""

from __future__ import annotations

import optax


def linear_decay(learning_rate: float, decay_steps: int | None) -> float | optax.Schedule:
    """`learning_rate` decayed linearly to 0 over `decay_steps` optimizer steps (and 0 after them),
    as an optax schedule of the optimizer's step count; with decay_steps None, the constant
    learning_rate."""
    check_decay_steps(decay_steps)
    if decay_steps is None:
        return learning_rate
    return optax.linear_schedule(learning_rate, 0.0, decay_steps)


def check_decay_steps(decay_steps: int | None) -> None:
    """A config's `lr_decay_steps`: None (constant) or at least 1."""
    if decay_steps is not None and decay_steps < 1:
        raise ValueError(f"lr_decay_steps must be >= 1 or None, got {decay_steps}")
