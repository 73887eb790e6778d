"""What R2D2 and MuZero share: one optimizer step on a prioritized batch of replayed sequences."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from sebulba.agent import Agent, gradient_step, when_ready
from sebulba.replay import sequences as rp
from sebulba.replay.priorities import importance_weights
from sebulba.sharding import LEARNER_AXIS


def prioritized_sequence_step(agent: Agent, sequence_loss: Callable, networks: Any, opt_state: Any,
                              replay: rp.SequenceReplay, key: jax.Array, config: Any):
    """One `gradient_step` of `sequence_loss(online, target, seqs, weights) -> (loss, (metrics,
    priorities))` on a batch of config.batch_size sequences drawn by priority (importance weights
    from config.importance_sampling_exponent); the new priorities go back to the replay and the
    agent's `update_target` moves the target network. Nothing is computed (`when_ready`) until every
    learner device's replay holds config.min_replay_size sequences. Returns (networks, opt_state,
    replay, metrics)."""
    ready = jax.lax.pmin(replay.size, LEARNER_AXIS) >= config.min_replay_size

    def step(networks, opt_state, replay):
        seqs, idx, probs = rp.sample(replay, key, config.batch_size, config.priority_exponent)
        weights = importance_weights(probs, replay.size, config.importance_sampling_exponent)
        networks, opt_state, (metrics, priorities), step_metrics = gradient_step(
            agent.tx, lambda nets: sequence_loss(nets.online, nets.target, seqs, weights), networks, opt_state,
            agent.update_target)
        return networks, opt_state, rp.update_priorities(replay, idx, priorities), {**metrics, **step_metrics}

    networks, opt_state, replay, metrics = when_ready(ready, step, networks, opt_state, replay)
    metrics = {**metrics, "replay_size": replay.size.astype(jnp.float32), "learning": ready.astype(jnp.float32)}
    return networks, opt_state, replay, metrics
