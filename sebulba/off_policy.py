"""OffPolicyAgent: the base of agents that learn from a transition replay (DQN, SAC, TD3, a user's).

The base owns what every such agent repeats: the replay as experience state (one shard per
learner device, `sebulba.replay.transitions`), the replay ratio (`OffPolicyConfig.replay_ratio`
gradient updates per env step, turned into optimizer steps per loop cycle), the learning_starts
gate, sampling (uniform or prioritized, with importance weights and priority updates), the
optimizer step on `TargetNetworks.online` and the target update after it, and uniform random
actions until the first optimizer step reaches the actors. A subclass writes four pure pieces:

    init_networks(key) -> TargetNetworks.of(params)
    optimizer() -> the optax transformation of `online`
    init_step_state(networks, num_envs, key) -> a NamedTuple with a `key` field (one typed key);
        default `KeyStepState(key)`
    act(networks, step_state, obs, key) -> actions [B]    the exploration policy
    greedy(networks, step_state, obs) -> actions [B]      the evaluation policy
    batch_loss(networks, batch: Transitions, key) -> (loss per transition [b], metrics, |TD| [b])

and sets `target_update_period` or `target_update_tau` (sebulba.agent.Agent) for its target.
Actions are what the loop records and replays: 0-based indices for Discrete spaces, values in
the Box's bounds for continuous ones.
"""

from __future__ import annotations

import abc
import math
from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp

import envs
from sebulba import observations
from sebulba.agent import Agent, gradient_step, when_ready
from sebulba.exploration import uniform_actions
from sebulba.off_policy_config import OffPolicyConfig
from sebulba.replay import transitions as tr
from sebulba.replay.transitions import Transitions
from sebulba.sharding import LEARNER_AXIS
from sebulba.target_networks import TargetNetworks
from sebulba.types import EnvStep, ExperienceLayout, Metrics, Trajectory


class Experience(NamedTuple):
    replay: tr.TransitionReplay


class KeyStepState(NamedTuple):
    """The default step state: the actors' RNG key and nothing per env (SAC's, TD3's)."""

    key: jax.Array  # one typed key


def action_row(space: gym.spaces.Space) -> jax.ShapeDtypeStruct:
    """One env's action as the replay stores it."""
    if isinstance(space, gym.spaces.Discrete):
        return jax.ShapeDtypeStruct((), jnp.int32)
    if isinstance(space, gym.spaces.Box):
        return jax.ShapeDtypeStruct(space.shape, jnp.float32)
    raise ValueError(f"off-policy agents take Discrete or Box action spaces, got {space}")


def optimizer_steps_per_cycle(replay_ratio: float, env_steps_per_cycle: int) -> int:
    """replay_ratio x the env steps a learner call takes in, which must be a whole number >= 1."""
    steps = replay_ratio * env_steps_per_cycle
    whole = round(steps)
    if whole < 1 or not math.isclose(steps, whole, rel_tol=1e-9, abs_tol=1e-9):
        ratios = sorted({k / env_steps_per_cycle for k in (1, 2, 4, 8) if k <= 8 * env_steps_per_cycle}
                        | {float(k) for k in (1, 2, 4)})
        raise ValueError(f"replay_ratio {replay_ratio} x {env_steps_per_cycle} env steps per learner call "
                         f"(num_envs x steps_per_cycle) = {steps:g} optimizer steps, not a whole number >= 1: "
                         f"choose a replay_ratio such as {', '.join(f'{r:g}' for r in ratios)}, or change num_envs "
                         "or steps_per_cycle")
    return whole


class OffPolicyAgent(Agent):
    """Subclass with a config that extends `OffPolicyConfig` (as `self.config`); see the module doc."""

    config: OffPolicyConfig

    def __init__(self, env_spec: envs.EnvSpec, config: OffPolicyConfig):
        super().__init__(env_spec)
        action_row(env_spec.action_space)  # refuse other action spaces here, in one line
        self.config = config

    # ---------------------------------------------------------------- what a subclass writes
    @abc.abstractmethod
    def act(self, networks: TargetNetworks, step_state: Any, obs: Any, key: jax.Array) -> jax.Array:
        """The exploration policy's actions [B] for a batch of observations."""

    @abc.abstractmethod
    def greedy(self, networks: TargetNetworks, step_state: Any, obs: Any) -> jax.Array:
        """The evaluation policy's actions [B]."""

    @abc.abstractmethod
    def batch_loss(self, networks: TargetNetworks, batch: Transitions, key: jax.Array,
                   ) -> tuple[jax.Array, Metrics, jax.Array]:
        """(loss per transition [b], metrics, |TD error| [b] for the priorities) on a sampled
        batch; the gradient is taken with respect to `networks.online`."""

    # ---------------------------------------------------------------- acting
    def init_step_state(self, networks: TargetNetworks, num_envs: int, key: jax.Array) -> Any:
        return KeyStepState(key)

    def step(self, networks: TargetNetworks, step_state: Any, env_step: EnvStep) -> tuple[jax.Array, Any]:
        """`act`, or uniformly random actions while no optimizer step has been taken (warm-up)."""
        key, k_act, k_random = jax.random.split(step_state.key, 3)
        action = self.act(networks, step_state, env_step.obs, k_act)
        random = uniform_actions(self.env_spec.action_space, k_random, action.shape[0])
        warming_up = jnp.reshape(networks.updates == 0, (1,) * action.ndim)
        return jnp.where(warming_up, random, action).astype(random.dtype), step_state._replace(key=key)

    def evaluation_step(self, networks: TargetNetworks, step_state: Any, env_step: EnvStep) -> tuple[jax.Array, Any]:
        return self.greedy(networks, step_state, env_step.obs).astype(action_row(self.env_spec.action_space).dtype), \
            step_state

    # ---------------------------------------------------------------- experience
    def init_experience(self, networks: TargetNetworks, layout: ExperienceLayout, key: jax.Array) -> Experience:
        c = self.config
        capacity_all = c.replay_capacity * layout.num_devices
        if c.learning_starts > capacity_all:
            raise ValueError(f"learning_starts {c.learning_starts} is more than the replays can hold "
                             f"({c.replay_capacity} transitions per learner device x {layout.num_devices}): learning "
                             "would never start")
        f32, b = jax.ShapeDtypeStruct((), jnp.float32), jax.ShapeDtypeStruct((), jnp.bool_)
        row = EnvStep(observations.shape_structs(self.env_spec.observation_space), f32, b, b, b)
        return Experience(tr.init(c.replay_capacity, layout.num_envs, layout.steps_per_cycle, c.n_step, row,
                                  action_row(self.env_spec.action_space), num_sources=layout.num_actors))

    def update_experience(self, experience: Experience, initial_step_state: Any, final_step_state: Any,
                          trajectory: Trajectory) -> Experience:
        action = trajectory.action.astype(experience.replay.action.dtype)
        return Experience(tr.add(experience.replay, trajectory.env_step, action, self.config.n_step,
                                 source=trajectory.actor))

    def num_off_policy_optims_per_cycle(self, layout: ExperienceLayout) -> int:
        return optimizer_steps_per_cycle(self.config.replay_ratio,
                                         layout.num_envs * layout.num_devices * layout.steps_per_cycle)

    # ---------------------------------------------------------------- learning
    def _sample(self, replay: tr.TransitionReplay, key: jax.Array) -> tuple[Transitions, jax.Array, jax.Array]:
        c = self.config
        return tr.sample(replay, key, c.batch_size, c.n_step, c.discount, c.priority_exponent,
                         c.importance_sampling_exponent)

    def _weighted_loss(self, networks: TargetNetworks, batch: Transitions, weights: jax.Array, key: jax.Array):
        per_transition, metrics, td_abs = self.batch_loss(networks, batch, key)
        # Uniform draws weigh 0 where they hold no transition; prioritized ones carry importance weights.
        loss = jnp.sum(weights * per_transition) / jnp.maximum(jnp.sum(weights > 0), 1)
        return loss, (metrics, td_abs)

    def optimize(self, networks: TargetNetworks, opt_state: Any, experience: Experience, key: jax.Array):
        """One `gradient_step` on a sampled batch (importance-weighted), new priorities to a
        prioritized replay; nothing is computed (`when_ready`) until the replays of all learner
        devices hold learning_starts transitions and each holds one."""
        c, replay = self.config, experience.replay
        ready = ((jax.lax.psum(replay.size, LEARNER_AXIS) >= c.learning_starts)
                 & (jax.lax.pmin(replay.size, LEARNER_AXIS) > 0))

        def step(networks, opt_state):
            k_sample, k_loss = jax.random.split(key)
            batch, idx, weights = self._sample(replay, k_sample)
            networks, opt_state, (metrics, td_abs), step_metrics = gradient_step(
                self.tx, lambda nets: self._weighted_loss(nets, batch, weights, k_loss), networks, opt_state,
                self.update_target)
            return networks, opt_state, ({**metrics, **step_metrics}, idx, td_abs)

        networks, opt_state, (metrics, idx, td_abs) = when_ready(ready, step, networks, opt_state)
        if c.prioritized:
            # Outside the cond, which only reads the replay: a cond that wrote it in place made XLA copy the
            # priorities in every call. Not ready: every index out of range, so nothing is set.
            replay = tr.update_priorities(replay, jnp.where(ready, idx, replay.priorities.size), td_abs)
        metrics = {**metrics, "replay_size": replay.size.astype(jnp.float32), "learning": ready.astype(jnp.float32)}
        return networks, opt_state, Experience(replay), metrics
