"""SAC's losses (Haarnoja et al. 2018; CleanRL's `sac_continuous_action.py`) as pure functions,
per transition [b], and `sac_loss`, what an agent's `batch_loss` returns.

Where the gradients go. The three terms are summed into one loss and differentiated once with
respect to `networks.online`; each reaches only its own part of the networks because
- the critic loss's target is held fixed (`soft_q_target` stops its gradient: the next action's
  sample, its log-probability, the target critics and alpha get none from it);
- the actor loss evaluates the critics with stop_gradient'ed parameters (the gradient reaches the
  actor through the sampled action, not the critics) and holds alpha fixed;
- the temperature loss holds the log-probability fixed (the actor gets nothing from it).
So the sum's gradient is, part by part, each term's own (tests/test_sac.py checks it). The actor
and temperature terms are computed on the steps they learn only (every policy_frequency-th:
`sebulba.optim.on_due_steps`), zeros between.
Unlike CleanRL, which updates the critics, then the actor, then alpha, one after the other, all
three are computed from the same networks and stepped together (one gradient per step).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sebulba.agents.continuous_q import twin_q_loss
from sebulba.agents.sac.config import SACConfig
from sebulba.agents.sac.networks import SACNetworks
from sebulba.optim import on_due_steps
from sebulba.replay.transitions import Transitions
from sebulba.target_networks import TargetNetworks
from sebulba.types import Metrics

Array = jax.Array
sg = jax.lax.stop_gradient


def soft_q_target(reward: Array, discount: Array, next_q_min: Array, next_log_prob: Array, alpha: Array) -> Array:
    """y = r + discount * (min_i Q_target_i(s', a') - alpha log pi(a'|s')), a' ~ pi(.|s') sampled
    fresh from the online actor; discount is the batch's (gamma^n, 0 after a termination). All
    [b] (alpha a scalar); held fixed: no gradient flows into any input."""
    return sg(reward + discount * (next_q_min - alpha * next_log_prob))


def actor_loss(log_prob: Array, q_min: Array, alpha: Array) -> Array:
    """alpha log pi(a|s) - min_i Q_i(s, a), a ~ pi(.|s) reparameterised: [b]. alpha is held
    fixed; the caller evaluates q_min with the critics' parameters stop_gradient'ed."""
    return sg(alpha) * log_prob - q_min


def temperature_loss(log_alpha: Array, log_prob: Array, target_entropy: float) -> Array:
    """-alpha (log pi(a|s) + target entropy) with alpha = exp(log_alpha) (CleanRL's form): [b].
    Only log_alpha learns: alpha grows while the policy's entropy (-log pi) is below the target."""
    return -jnp.exp(log_alpha) * sg(log_prob + target_entropy)


class SACTerms(NamedTuple):
    critic: Array  # [b] twin_q_loss
    actor: Array  # [b]
    temperature: Array  # [b]; zeros when the temperature is fixed
    td_abs: Array  # [b] mean over the critics of |Q_i - y|, for priorities
    metrics: Metrics  # batch means


def sac_terms(nets: SACNetworks, networks: TargetNetworks, batch: Transitions, key: Array,
              config: SACConfig) -> SACTerms:
    """Each loss term of one batch; `networks.online` and `.target` are `SACParams`."""
    online, target = networks.online, networks.target
    k_next, k_now = jax.random.split(key)
    alpha = jnp.exp(online.log_alpha)
    next_action, next_log_prob = nets.policy(online.actor, batch.next_obs).sample_and_log_prob(k_next)
    next_q = nets.q(target.critic, batch.next_obs, next_action)
    y = soft_q_target(batch.reward, batch.discount, jnp.min(next_q, 0), next_log_prob, alpha)
    q = nets.q(online.critic, batch.obs, batch.action)
    critic, td_abs = twin_q_loss(q, y)

    def policy_terms() -> tuple[tuple[Array, Array], Metrics]:
        action, log_prob = nets.policy(online.actor, batch.obs).sample_and_log_prob(k_now)
        q_pi = jnp.min(nets.q(sg(online.critic), batch.obs, action), 0)
        actor = actor_loss(log_prob, q_pi, alpha)
        if config.autotune:
            temperature = temperature_loss(online.log_alpha, log_prob, config.entropy_target(nets.actor.action_dim))
        else:
            temperature = jnp.zeros_like(actor)
        return (actor, temperature), {"actor_loss": jnp.mean(actor), "alpha_loss": jnp.mean(temperature),
                                      "entropy": -jnp.mean(log_prob)}

    # The actor and the temperature learn every policy_frequency-th step: computed on those only.
    (actor, temperature), policy_metrics = on_due_steps(networks.updates, config.policy_frequency, policy_terms)
    metrics = {"q_loss": jnp.mean(critic), **policy_metrics, "alpha": alpha, "q": jnp.mean(q)}
    return SACTerms(critic, actor, temperature, td_abs, jax.tree.map(sg, metrics))


def sac_loss(nets: SACNetworks, networks: TargetNetworks, batch: Transitions, key: Array,
             config: SACConfig) -> tuple[Array, Metrics, Array]:
    """(per-transition loss [b]: critic + actor + temperature, metrics, |TD| [b]): the shape of
    an off-policy agent's `batch_loss`."""
    terms = sac_terms(nets, networks, batch, key, config)
    return terms.critic + terms.actor + terms.temperature, terms.metrics, terms.td_abs
