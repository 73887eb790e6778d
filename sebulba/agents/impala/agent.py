"""IMPALA (Espeholt et al. 2018) as a Sebulba agent: on-policy actor-critic whose V-trace
targets correct for the policy lag between the actors' networks and the learner's. Discrete,
MultiDiscrete (one categorical per dimension: rho is the joint ratio, the product of the
dimensions') and Box (a Gaussian) actions. With a recurrent core (`ImpalaConfig.core`), the
actors carry its state in the step state and the learner re-unrolls it from the state each
trajectory started from, so V-trace sees the re-unrolled policy."""

from __future__ import annotations

import functools
from typing import NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import episodes, observations
from sebulba.agent import Agent
from sebulba.agents.impala.config import ImpalaConfig
from sebulba.agents.impala.losses import impala_loss
from sebulba.agents.impala.networks import make_network
from sebulba.distributions import as_distribution, check_action_space, from_env_action, to_env_action
from sebulba.schedules import linear_decay
from sebulba.sharding import LEARNER_AXIS
from sebulba.types import ActorOutput, EnvStep, Metrics, PyTree, Rollout, Trajectory


class StepState(NamedTuple):
    key: jax.Array  # one key for the inferencer's batch
    core: PyTree = ()  # the recurrent core's state before the next step, [B, ...] per leaf; () without one


class Impala(Agent[dict, optax.OptState, Rollout, StepState]):
    """Step state: one RNG key for the inferencer's batch and the recurrent state. Experience: the
    latest trajectory and the recurrent state it started from."""

    def __init__(self, env_spec: envs.EnvSpec, config: ImpalaConfig = ImpalaConfig()):
        super().__init__(env_spec)
        check_action_space(env_spec.action_space, "IMPALA")
        self.config = config
        self.continuous = isinstance(env_spec.action_space, gym.spaces.Box)
        self.net = make_network(env_spec.observation_space, env_spec.action_space, config)
        self._loss_fn = functools.partial(
            impala_loss,
            lambda_=config.lambda_,
            clip_rho_threshold=config.clip_rho_threshold,
            clip_c_threshold=config.clip_c_threshold,
            clip_pg_rho_threshold=config.clip_pg_rho_threshold,
            baseline_cost=config.baseline_cost,
            entropy_cost=config.entropy_cost,
        )

    def init_networks(self, key: jax.Array) -> dict:
        space = self.env_spec.observation_space
        return self.net.init(key, observations.zeros(space), self.net.initial_state(1), jnp.ones(1, bool))

    def optimizer(self) -> optax.GradientTransformation:
        c = self.config
        lr = linear_decay(c.learning_rate, c.lr_decay_steps)
        return optax.chain(
            optax.clip_by_global_norm(c.max_grad_norm),
            optax.rmsprop(lr, decay=c.rmsprop_decay, eps=c.rmsprop_eps, eps_in_sqrt=c.rmsprop_eps_in_sqrt,
                          momentum=c.rmsprop_momentum or None),
        )

    def num_minibatches(self) -> int:
        return self.config.num_minibatches

    def init_step_state(self, networks: dict, num_envs: int, key: jax.Array) -> StepState:
        return StepState(key, self.net.initial_state(num_envs))

    def step(self, networks: dict, step_state: StepState, env_step: EnvStep) -> tuple[ActorOutput, StepState]:
        key, sample = jax.random.split(step_state.key)
        policy, _, core = self.net.apply(networks, env_step.obs, step_state.core, env_step.first)
        action = as_distribution(policy).sample(sample)
        if self.continuous:  # the env gets the sample clipped to its bounds; the sample is learned
            extras = {"policy": policy, "sample": action}
            return ActorOutput(to_env_action(action, self.env_spec.action_space), extras), StepState(key, core)
        # The behaviour policy is recorded: logits [B, A], or a MultiCategorical's [B, D, K].
        return ActorOutput(to_env_action(action, self.env_spec.action_space), extras=policy), StepState(key, core)

    def evaluation_step(self, networks: dict, step_state: StepState, env_step: EnvStep) -> tuple[jax.Array, StepState]:
        """Greedy: the most likely action (in each dimension of a MultiDiscrete space), or the
        Gaussian's mean (clipped to the bounds); the recurrent state carried as in `step`."""
        policy, _, core = self.net.apply(networks, env_step.obs, step_state.core, env_step.first)
        return to_env_action(as_distribution(policy).mode(), self.env_spec.action_space), step_state._replace(core=core)

    def update_experience(self, experience, initial_step_state: StepState, final_step_state,
                          trajectory: Trajectory) -> Rollout:
        return Rollout(trajectory, initial_step_state.core)  # on-policy: each trajectory is learned from once

    def loss(self, networks: dict, experience: Rollout, key: jax.Array) -> tuple[jax.Array, Metrics]:
        experience, core = experience
        es = experience.env_step
        # The whole trajectory, T + 1 steps (the last one's value bootstraps), the core re-unrolled
        # from the state its first step was taken from.
        policy, values, _ = self.net.apply(networks, es.obs, core, es.first, sequence=True)
        discounts, _, mask = episodes.transitions(es.terminated, es.truncated, self.config.discount)
        if self.continuous:
            behaviour, actions = experience.extras["policy"], experience.extras["sample"]
        else:
            behaviour, actions = experience.extras, from_env_action(experience.action, self.env_spec.action_space)
        total, sums, count = jax.vmap(self._loss_fn, in_axes=1)(
            policy, behaviour, actions, values, es.reward[1:] * self.config.reward_scale, discounts, mask
        )
        # Means over the valid steps of every learner device's share: optimize() (and the metrics')
        # pmean averages the devices, so each device divides its sums by the mean count per device.
        count, devices = jax.lax.psum((count.sum(), 1.0), LEARNER_AXIS)
        n = jnp.maximum(count, 1.0) / devices
        metrics = {k: v.sum() / n for k, v in sums.items()}
        if self.continuous:
            metrics["policy_std"] = jnp.mean(jnp.exp(policy.log_std))
        if self.config.loss_reduction == "sum":
            # The sum over the whole batch: optimize() averages the devices' gradients, so each
            # device's sum counts once per learner device (this is why loss needs the learner axis).
            return total.sum() * jax.lax.psum(1, LEARNER_AXIS), metrics
        return total.sum() / n, metrics
