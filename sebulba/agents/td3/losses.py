"""TD3's losses (Fujimoto et al. 2018; CleanRL's `td3_continuous_action.py`) as pure functions, per
transition [b], the actor's exploration noise, and `td3_loss`, what an agent's `batch_loss` returns.

Where the gradients go: the critic loss's target is held fixed (`td3_target`); the actor loss
evaluates critic 1 with stop_gradient'ed parameters, so the summed loss's gradient reaches the
critics from the critic loss only and the actor from the actor loss only. The actor loss is
computed on every policy_delay-th step only (`sebulba.optim.on_due_steps`: zeros between), the
steps on which the optimizer (`make_optimizer`) applies the actor's gradient.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sebulba.agents.continuous_q import twin_q_loss
from sebulba.agents.td3.config import TD3Config
from sebulba.agents.td3.networks import TD3Networks
from sebulba.optim import on_due_steps
from sebulba.replay.transitions import Transitions
from sebulba.target_networks import TargetNetworks
from sebulba.types import Metrics

Array = jax.Array
sg = jax.lax.stop_gradient


def exploration_action(action: Array, key: Array, low: Array, high: Array, noise: float) -> Array:
    """The actor's step: action + N(0, (noise * scale)^2), scale = (high - low) / 2, clipped to
    [low, high] (CleanRL's exploration_noise)."""
    scale = (high - low) / 2
    return jnp.clip(action + noise * scale * jax.random.normal(key, action.shape, action.dtype), low, high)


def smoothed_target_action(target_action: Array, key: Array, low: Array, high: Array, policy_noise: float,
                           noise_clip: float) -> Array:
    """Target policy smoothing: the target actor's action + clip(N(0, policy_noise^2), +-noise_clip)
    * scale, clipped to [low, high]."""
    scale = (high - low) / 2
    noise = jnp.clip(policy_noise * jax.random.normal(key, target_action.shape, target_action.dtype),
                     -noise_clip, noise_clip)
    return jnp.clip(target_action + noise * scale, low, high)


def td3_target(reward: Array, discount: Array, next_q_min: Array) -> Array:
    """y = r + discount * min_i Q_target_i(s', smoothed a'), [b]; held fixed (no gradient)."""
    return sg(reward + discount * next_q_min)


def actor_loss(q1: Array) -> Array:
    """-Q_1(s, pi(s)) [b]: the caller evaluates Q_1 with the critics' parameters stop_gradient'ed."""
    return -q1


class TD3Terms(NamedTuple):
    critic: Array  # [b] twin_q_loss
    actor: Array  # [b]
    td_abs: Array  # [b] mean over the critics of |Q_i - y|, for priorities
    metrics: Metrics  # batch means


def td3_terms(nets: TD3Networks, networks: TargetNetworks, batch: Transitions, key: Array,
              config: TD3Config) -> TD3Terms:
    """Each loss term of one batch; `networks.online` and `.target` are `TD3Params`."""
    online, target = networks.online, networks.target
    low, high = nets.bounds
    next_action = smoothed_target_action(nets.policy(target.actor, batch.next_obs), key, low, high,
                                         config.policy_noise, config.noise_clip)
    y = td3_target(batch.reward, batch.discount, jnp.min(nets.q(target.critic, batch.next_obs, next_action), 0))
    q = nets.q(online.critic, batch.obs, batch.action)
    critic, td_abs = twin_q_loss(q, y)
    def policy_terms() -> tuple[Array, Metrics]:
        actor = actor_loss(nets.q(sg(online.critic), batch.obs, nets.policy(online.actor, batch.obs))[0])
        return actor, {"actor_loss": jnp.mean(actor)}

    actor, policy_metrics = on_due_steps(networks.updates, config.policy_delay, policy_terms)
    metrics = {"q_loss": jnp.mean(critic), **policy_metrics, "q": jnp.mean(q)}
    return TD3Terms(critic, actor, td_abs, jax.tree.map(sg, metrics))


def td3_loss(nets: TD3Networks, networks: TargetNetworks, batch: Transitions, key: Array,
             config: TD3Config) -> tuple[Array, Metrics, Array]:
    """(per-transition loss [b]: critic + actor, metrics, |TD| [b]): the shape of an off-policy
    agent's `batch_loss`."""
    terms = td3_terms(nets, networks, batch, key, config)
    return terms.critic + terms.actor, terms.metrics, terms.td_abs
