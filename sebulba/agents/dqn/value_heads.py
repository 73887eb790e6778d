"""DQN's value heads: what the Q-network outputs for each action, the Q-values acting reads from
it, and the loss of a batch of transitions. `scalar`: one Q-value (DQN); `c51`: a categorical
distribution over fixed atoms (Bellemare et al. 2017); `qr`: quantiles at fixed fractions
(QR-DQN, Dabney et al. 2018). A head's `loss` returns (loss per transition [b], priority [b] for a
prioritized replay, metrics); its inputs are the network's outputs for the actions taken [b, ...]
and for every action at the next observations, online [b, A, ...] and target [b, A, ...]."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sebulba.agents.dqn.config import DQNConfig
from sebulba.agents.dqn.losses import (
    bootstrap_action,
    categorical_loss,
    categorical_projection,
    q_learning_target,
    quantile_huber_loss,
    td_loss,
)
from sebulba.types import Metrics


def at(values: jax.Array, action: jax.Array) -> jax.Array:
    """values [b, A, ...] at the actions [b]: [b, ...] (the outputs for the actions taken)."""
    return values[jnp.arange(values.shape[0]), action.astype(jnp.int32)]


class ScalarHead(NamedTuple):
    """One Q-value an action; the (Huber) TD loss, |TD| as the priority."""

    huber_delta: float | None

    def q_values(self, out: jax.Array) -> jax.Array:
        return out

    def loss(self, taken, next_online, next_target, reward, discount, double: bool
             ) -> tuple[jax.Array, jax.Array, Metrics]:
        target = jax.lax.stop_gradient(q_learning_target(reward, discount, next_online, next_target, double))
        td = target - taken
        metrics = {"q_mean": jnp.mean(taken), "td_abs_mean": jnp.mean(jnp.abs(td))}
        return td_loss(td, self.huber_delta), jnp.abs(td), metrics


class CategoricalHead(NamedTuple):
    """C51: logits over `atoms` an action; the cross-entropy against the projected target
    distribution, which is also the priority (Rainbow's)."""

    atoms: jax.Array  # [N], evenly spaced from v_min to v_max

    def q_values(self, out: jax.Array) -> jax.Array:
        return jnp.sum(jax.nn.softmax(out) * self.atoms, -1)

    def loss(self, taken, next_online, next_target, reward, discount, double: bool
             ) -> tuple[jax.Array, jax.Array, Metrics]:
        best = bootstrap_action(self.q_values(next_online), self.q_values(next_target), double)
        probs = jax.nn.softmax(at(next_target, best))
        target = jax.lax.stop_gradient(categorical_projection(self.atoms, reward, discount, probs))
        loss = categorical_loss(taken, target)
        return loss, jax.lax.stop_gradient(loss), {"q_mean": jnp.mean(self.q_values(taken))}


class QuantileHead(NamedTuple):
    """QR-DQN: quantiles an action (at `losses.quantile_fractions`); the quantile Huber loss against
    the target's quantiles shifted by the n-step reward, which is also the priority."""

    huber_delta: float | None  # the quantile Huber loss's kappa; None: the plain quantile loss

    def q_values(self, out: jax.Array) -> jax.Array:
        return jnp.mean(out, -1)

    def loss(self, taken, next_online, next_target, reward, discount, double: bool
             ) -> tuple[jax.Array, jax.Array, Metrics]:
        best = bootstrap_action(self.q_values(next_online), self.q_values(next_target), double)
        target = reward[:, None] + discount[:, None] * at(next_target, best)
        loss = quantile_huber_loss(taken, jax.lax.stop_gradient(target), self.huber_delta)
        return loss, jax.lax.stop_gradient(loss), {"q_mean": jnp.mean(self.q_values(taken))}


ValueHead = ScalarHead | CategoricalHead | QuantileHead


def make_value_head(config: DQNConfig) -> ValueHead:
    if config.value_head == "c51":
        return CategoricalHead(jnp.linspace(config.v_min, config.v_max, config.num_atoms, dtype=jnp.float32))
    if config.value_head == "qr":
        return QuantileHead(config.huber_delta)
    return ScalarHead(config.huber_delta)

