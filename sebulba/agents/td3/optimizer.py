"""TD3's optimizer over `TD3Params` and how its targets follow: Adam(learning_rate) for the critics
every step and for the actor every policy_delay-th step (`optax.partition`,
`sebulba.optim.every_nth`), the targets (actor and critics) by Polyak on those same steps only
(the paper's and CleanRL's delayed updates)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from sebulba.agents.td3.config import TD3Config
from sebulba.agents.td3.networks import TD3Params
from sebulba.optim import every_nth
from sebulba.target_networks import TargetNetworks, polyak


def make_optimizer(config: TD3Config) -> optax.GradientTransformation:
    return optax.partition(
        {"actor": every_nth(optax.adam(config.learning_rate), config.policy_delay),
         "critic": optax.adam(config.learning_rate)},
        TD3Params(actor="actor", critic="critic"))


def follow_targets(networks: TargetNetworks, config: TD3Config) -> TargetNetworks:
    """The agent's `update_target`: Polyak with tau on the steps the actor learned, else the
    targets as they were. `networks.updates` has counted the step just taken (the default
    `Agent.optimize` passes updates + 1), and every_nth applied the actor on its 0-based step s
    with s % policy_delay == 0, so the step is due when (updates - 1) % policy_delay == 0."""
    due = (networks.updates - 1) % config.policy_delay == 0
    followed = polyak(networks, config.tau).target
    return networks._replace(target=jax.tree.map(lambda new, old: jnp.where(due, new, old), followed,
                                                 networks.target))
