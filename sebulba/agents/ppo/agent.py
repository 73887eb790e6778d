"""PPO (Schulman et al. 2017) as a Sebulba agent, for discrete (Discrete, MultiDiscrete) and
continuous (Box) actions.

Each cycle: the learner refreshes its running statistics (observations, discounted returns) from
the trajectory, computes GAE advantages with its current values (`begin_update`, once, as
Cleanba does under policy lag), and takes `num_epochs` passes of `num_minibatches` clipped-
surrogate steps over the samples (`minibatch_over = "steps"`). The ratio is against the
log-probability the actor recorded, so learning from older trajectories (async mode) stays
correct.

With a recurrent core (`PPOConfig.core`), the actors carry its state in the step state (reset at
each episode's first step), each trajectory keeps the state it started from, and the learner
re-unrolls the core from it over the whole rollout (truncated BPTT: values in `begin_update`,
the policy and values again in each minibatch); minibatches take whole envs' sequences
(`minibatch_over = "sequences"`), never cut in time.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import observations
from sebulba import normalization
from sebulba.agent import Agent
from sebulba.agents.ppo.config import PPOConfig
from sebulba.agents.ppo.gae import episode_gae
from sebulba.agents.ppo.losses import normalize_advantages, ppo_loss
from sebulba.agents.ppo.networks import make_network
from sebulba.distributions import check_action_space, from_env_action, to_env_action
from sebulba.schedules import linear_decay
from sebulba.sharding import LEARNER_AXIS
from sebulba.types import ActorOutput, EnvStep, Metrics, PyTree, Rollout, Trajectory


class StepState(NamedTuple):
    key: jax.Array  # one key for the inferencer's batch
    discounted_return: jax.Array  # float32 [B]: each env's discounted return so far (reward scaling)
    core: PyTree = ()  # the recurrent core's state before the next step, [B, ...] per leaf; () without one


class Samples(NamedTuple):
    """What the optimizer steps learn from, [T, B, ...]: independent samples once advantages are in."""

    obs: jax.Array  # the network's input (normalised with the statistics of this update)
    action: jax.Array  # the sampled action (Gaussian: before clipping to the bounds; (Multi)Discrete: 0-based)
    behaviour_log_prob: jax.Array
    advantage: jax.Array
    value: jax.Array  # the value before the update (value clipping)
    target: jax.Array  # advantage + value: the value's regression target
    valid: jax.Array  # False for a transition out of a final state (the pool's auto-reset)
    # With a recurrent core (every leaf then env-major, [B, T, ...], a minibatch a share of the
    # envs): the episode starts, and the state each env's sequence starts from, [B, ...]. Else ().
    first: jax.Array | tuple = ()
    core: PyTree = ()


class PPO(Agent[dict, optax.OptState, Samples, StepState]):
    """Networks: {"params": flax parameters, "obs_stats", "return_stats": RunningMeanStd} (the
    statistics are published to the actors with the weights, saved in checkpoints, and never
    touched by the optimizer)."""

    def __init__(self, env_spec: envs.EnvSpec, config: PPOConfig = PPOConfig()):
        super().__init__(env_spec)
        check_action_space(env_spec.action_space, "PPO")
        self.config = config
        self.recurrent = config.core != "none"
        self.continuous = isinstance(env_spec.action_space, gym.spaces.Box)
        obs = env_spec.observation_space
        if config.normalize_observations:
            normalization.check_observations(obs, "PPO")
        self.net = make_network(obs, env_spec.action_space, config)
        self._loss_fn = functools.partial(ppo_loss, clip_coef=config.clip_coef, clip_value_loss=config.clip_value_loss,
                                          value_cost=config.value_cost, entropy_cost=config.entropy_cost)

    @property
    def minibatch_over(self) -> str:
        """Minibatches of steps; of whole sequences with a recurrent core."""
        return "sequences" if self.recurrent else "steps"

    # ---------------------------------------------------------------- state
    def init_networks(self, key: jax.Array) -> dict:
        space = self.env_spec.observation_space
        return {
            "params": self.net.init(key, observations.zeros(space), self.net.initial_state(1), jnp.ones(1, bool)),
            "obs_stats": normalization.init_observations(space) if self.config.normalize_observations else (),
            "return_stats": normalization.init(()) if self.config.scale_rewards else (),
        }

    def optimizer(self) -> optax.GradientTransformation:
        c = self.config
        lr = linear_decay(c.learning_rate, c.lr_decay_steps)
        tx = optax.chain(optax.clip_by_global_norm(c.max_grad_norm), optax.adam(lr, eps=c.adam_eps))
        return normalization.frozen_outside(tx, "params")

    def num_epochs(self) -> int:
        return self.config.num_epochs

    def num_minibatches(self) -> int:
        return self.config.num_minibatches

    def init_step_state(self, networks: dict, num_envs: int, key: jax.Array) -> StepState:
        return StepState(key, jnp.zeros(num_envs, jnp.float32), self.net.initial_state(num_envs))

    # ---------------------------------------------------------------- acting
    def _input(self, networks: dict, obs: jax.Array) -> jax.Array:
        stats = networks["obs_stats"]
        return normalization.normalize(stats, obs) if self.config.normalize_observations else obs

    def step(self, networks: dict, step_state: StepState, env_step: EnvStep) -> tuple[ActorOutput, StepState]:
        key, sample_key = jax.random.split(step_state.key)
        policy, _, core = self.net.apply(networks["params"], self._input(networks, env_step.obs), step_state.core,
                                         env_step.first)
        sample = policy.sample(sample_key)
        extras = {"log_prob": policy.log_prob(sample)}
        if self.continuous:
            extras["sample"] = sample  # the env gets it clipped; the unclipped sample is learned
        ret = jnp.where(env_step.first, 0.0, step_state.discounted_return * self.config.discount + env_step.reward)
        if self.config.scale_rewards:
            extras["discounted_return"] = ret
        return ActorOutput(to_env_action(sample, self.env_spec.action_space), extras), StepState(key, ret, core)

    def evaluation_step(self, networks: dict, step_state: StepState, env_step: EnvStep) -> tuple[jax.Array, StepState]:
        """Greedy: the most likely action (in each dimension of a MultiDiscrete space), or the
        Gaussian's mean (clipped to the bounds); the recurrent state carried as in `step`."""
        policy, _, core = self.net.apply(networks["params"], self._input(networks, env_step.obs), step_state.core,
                                         env_step.first)
        return to_env_action(policy.mode(), self.env_spec.action_space), step_state._replace(core=core)

    # ---------------------------------------------------------------- learning
    def update_experience(self, experience, initial_step_state: StepState, final_step_state,
                          trajectory: Trajectory) -> Rollout:
        return Rollout(trajectory, initial_step_state.core)  # on-policy; begin_update turns it into samples

    def begin_update(self, networks: dict, experience: Rollout, key: jax.Array) -> tuple[dict, Samples]:
        c, traj = self.config, experience.trajectory
        es = traj.env_step
        networks = dict(networks)
        if c.normalize_observations:  # env_step[0] was counted with the previous cycle
            networks["obs_stats"] = normalization.update(networks["obs_stats"], jax.tree.map(lambda x: x[1:], es.obs),
                                                         LEARNER_AXIS)
        rewards = es.reward
        if c.scale_rewards:
            networks["return_stats"] = normalization.update(networks["return_stats"], traj.extras["discounted_return"],
                                                            LEARNER_AXIS)
            rewards = normalization.scale(networks["return_stats"], rewards)
        obs = self._input(networks, es.obs)
        _, values, _ = self.net.apply(networks["params"], obs, experience.core, es.first, sequence=True)
        gae = functools.partial(episode_gae, discount=c.discount, lambda_=c.gae_lambda)
        advantages, valid = jax.vmap(gae, in_axes=1, out_axes=1)(values, rewards, es.terminated, es.truncated)
        action = traj.extras["sample"] if self.continuous else from_env_action(traj.action, self.env_spec.action_space)
        samples = Samples(jax.tree.map(lambda x: x[:-1], obs), action, traj.extras["log_prob"], advantages, values[:-1],
                          advantages + values[:-1], valid)
        if self.recurrent:  # minibatches of whole sequences: envs first
            samples = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), samples._replace(first=es.first[:-1]))
            samples = samples._replace(core=experience.core)
        return networks, jax.lax.stop_gradient(samples)

    def loss(self, networks: dict, experience: Samples, key: jax.Array) -> tuple[jax.Array, Metrics]:
        if self.recurrent:  # re-unroll the core over each env's sequence, from the state it started from
            seq = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), experience._replace(core=()))  # [T, B, ...]
            policy, values, _ = self.net.apply(networks["params"], seq.obs, experience.core, seq.first, sequence=True)
            flat, policy, values = observations.merge_leading((seq, policy, values))
        else:
            flat = observations.merge_leading(experience)
            policy, values, _ = self.net.apply(networks["params"], flat.obs)
        advantages = flat.advantage
        if self.config.normalize_advantages:
            advantages = normalize_advantages(advantages, flat.valid, LEARNER_AXIS)
        total, sums = self._loss_fn(policy.log_prob(flat.action), flat.behaviour_log_prob, advantages, values,
                                    flat.value, flat.target, policy.entropy(), flat.valid)
        # A mean over the whole minibatch's valid samples, every device's: optimize() averages
        # the devices' gradients, so each device's share is scaled by the device count.
        count, devices = jax.lax.psum((jnp.sum(flat.valid.astype(jnp.float32)), 1.0), LEARNER_AXIS)
        scale = devices / jnp.maximum(count, 1.0)
        metrics = {k: v * scale for k, v in sums.items()}
        if self.continuous:
            metrics["policy_std"] = jnp.mean(jnp.exp(policy.log_std))
        return total * scale, metrics
