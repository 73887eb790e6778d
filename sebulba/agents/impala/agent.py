"""IMPALA (Espeholt et al. 2018) as a Sebulba agent: on-policy actor-critic whose V-trace
targets correct for the policy lag between the actors' networks and the learner's. Discrete,
MultiDiscrete (one categorical per dimension: rho is the joint ratio, the product of the
dimensions') and Box (a Gaussian) actions."""

from __future__ import annotations

import functools

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import observations
from sebulba.agent import Agent
from sebulba.agents.impala.config import ImpalaConfig
from sebulba.agents.impala.losses import impala_loss
from sebulba.agents.impala.networks import make_network
from sebulba.distributions import as_distribution, check_action_space, from_env_action, to_env_action
from sebulba.schedules import linear_decay
from sebulba.sharding import LEARNER_AXIS
from sebulba.types import ActorOutput, EnvStep, Metrics, Trajectory


class Impala(Agent[dict, optax.OptState, Trajectory, jax.Array]):
    """Step state: one RNG key for the inferencer's batch. Experience: the latest trajectory."""

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
        return self.net.init(key, observations.zeros(space))

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

    def init_step_state(self, networks: dict, num_envs: int, key: jax.Array) -> jax.Array:
        return key

    def step(self, networks: dict, step_state: jax.Array, env_step: EnvStep) -> tuple[ActorOutput, jax.Array]:
        key, sample = jax.random.split(step_state)
        policy, _ = self.net.apply(networks, env_step.obs)
        action = as_distribution(policy).sample(sample)
        if self.continuous:  # the env gets the sample clipped to its bounds; the sample is learned
            extras = {"policy": policy, "sample": action}
            return ActorOutput(to_env_action(action, self.env_spec.action_space), extras), key
        # The behaviour policy is recorded: logits [B, A], or a MultiCategorical's [B, D, K].
        return ActorOutput(to_env_action(action, self.env_spec.action_space), extras=policy), key

    def evaluation_step(self, networks: dict, step_state: jax.Array, env_step: EnvStep) -> tuple[jax.Array, jax.Array]:
        """Greedy: the most likely action (in each dimension of a MultiDiscrete space), or the
        Gaussian's mean (clipped to the bounds)."""
        policy, _ = self.net.apply(networks, env_step.obs)
        return to_env_action(as_distribution(policy).mode(), self.env_spec.action_space), step_state

    def update_experience(self, experience, initial_step_state, final_step_state, trajectory: Trajectory) -> Trajectory:
        return trajectory  # on-policy: each trajectory is learned from once

    def loss(self, networks: dict, experience: Trajectory, key: jax.Array) -> tuple[jax.Array, Metrics]:
        es = experience.env_step
        T, B = experience.action.shape[:2]
        obs = observations.merge_leading(es.obs)
        policy, values = self.net.apply(networks, obs)
        policy = jax.tree.map(lambda x: x.reshape(T + 1, B, *x.shape[1:]), policy)
        values = values.reshape(T + 1, B)
        discounts = self.config.discount * (1.0 - es.terminated[1:].astype(jnp.float32))
        mask = ~(es.terminated[:-1] | es.truncated[:-1])  # the step after a final state resets: not a transition
        if self.continuous:
            behaviour, actions = experience.extras["policy"], experience.extras["sample"]
        else:
            behaviour, actions = experience.extras, from_env_action(experience.action, self.env_spec.action_space)
        total, sums, count = jax.vmap(self._loss_fn, in_axes=1)(
            policy, behaviour, actions, values, es.reward[1:] * self.config.reward_scale, discounts, mask
        )
        n = jnp.maximum(count.sum(), 1.0)
        metrics = {k: v.sum() / n for k, v in sums.items()}
        if self.continuous:
            metrics["policy_std"] = jnp.mean(jnp.exp(policy.log_std))
        if self.config.loss_reduction == "sum":
            # The sum over the whole batch: optimize() averages the devices' gradients, so each
            # device's sum counts once per learner device (this is why loss needs the learner axis).
            return total.sum() * jax.lax.psum(1, LEARNER_AXIS), metrics
        return total.sum() / n, metrics
