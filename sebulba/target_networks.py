"""Target networks: where an agent keeps one, and how it follows the learned networks.

An agent with a target network returns `TargetNetworks.of(params)` from `init_networks`. The
framework then
- builds the optimizer state for `online` only (`Agent.init_optimizer_state`);
- in its optimizer step (`sebulba.agent.gradient_step`: the default `Agent.optimize`'s,
  `OffPolicyAgent`'s and R2D2's), takes the gradient of the loss with respect to `online` only
  (the loss gets the whole `TargetNetworks`: bootstrap from `networks.target`), counts the step
  in `updates` and calls `Agent.update_target`, which by default copies `online` into `target`
  every `Agent.target_update_period` optimizer steps, or averages them (Polyak) with
  `Agent.target_update_tau` after every step;
- acts, evaluates and checkpoints with the whole `TargetNetworks` (`Agent.step` reads
  `networks.online`).
An agent that overrides `update_target` (TD3's) may use `periodic_copy` or `polyak` for its parts.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class TargetNetworks(NamedTuple):
    """An agent's networks with a target copy: `online` is learned, `target` follows it."""

    online: Any  # learned by gradient
    target: Any  # follows online; never learned
    updates: jax.Array  # int32 []: optimizer steps taken on online

    @staticmethod
    def of(params: Any) -> TargetNetworks:
        """Online and target networks both `params`, no step taken."""
        return TargetNetworks(params, jax.tree.map(jnp.copy, params), jnp.zeros((), jnp.int32))


def periodic_copy(networks: TargetNetworks, period: int) -> TargetNetworks:
    """The target a copy of online when `updates` is a multiple of `period`, else as it was."""
    copy = networks.updates % period == 0
    return networks._replace(target=jax.tree.map(lambda t, o: jnp.where(copy, o, t), networks.target, networks.online))


def polyak(networks: TargetNetworks, tau: float) -> TargetNetworks:
    """target <- tau * online + (1 - tau) * target."""
    return networks._replace(target=jax.tree.map(lambda t, o: tau * o + (1.0 - tau) * t, networks.target,
                                                 networks.online))
