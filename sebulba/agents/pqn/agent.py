"""PQN (Gallici et al. 2024, "Simplifying Deep Temporal Difference Learning") as a Sebulba agent:
Q-learning with no replay and no target network, on the rollouts of many parallel envs.

The actors act epsilon-greedy, epsilon decayed linearly over the first learner updates (the
networks carry the learner's update count, so every actor follows the learner's progress, in
either loop). Each learner update: `begin_update` computes Q(lambda) targets over the rollout
with the current networks' greedy values (`episode_q_lambda`: the last observation bootstraps,
a terminated episode's last state is worth 0, a truncated one's bootstraps, the auto-reset step
is masked), then `num_epochs` passes of `num_minibatches` steps regress Q(s, a) on them
(0.5 squared error, a mean over every learner device's valid samples). A LayerNorm after each
hidden layer is what keeps this stable without a target network (`PQNConfig.layer_norm`).

With a recurrent core (`PQNConfig.core`: the paper's PQN-RNN), the actors carry its state in the
step state, each trajectory keeps the state it started from, and the learner re-unrolls the core
from it over the whole rollout (the targets' values in `begin_update`, Q again in each minibatch);
minibatches take whole envs' sequences (`minibatch_over = "sequences"`), as PPO's with a core.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import normalization, observations
from sebulba.agent import Agent
from sebulba.agents.pqn.config import PQNConfig
from sebulba.agents.pqn.networks import make_network
from sebulba.agents.pqn.returns import episode_q_lambda
from sebulba.distributions import from_env_action, to_env_action
from sebulba.exploration import epsilon_greedy
from sebulba.schedules import linear_decay
from sebulba.sharding import LEARNER_AXIS
from sebulba.types import EnvStep, Metrics, PyTree, Rollout, Trajectory


class StepState(NamedTuple):
    key: jax.Array  # one key for the inferencer's batch
    core: PyTree = ()  # the recurrent core's state before the next step, [B, ...] per leaf; () without one


class Samples(NamedTuple):
    """What the optimizer steps learn from, [T, B, ...]: independent samples once targets are in."""

    obs: jax.Array
    action: jax.Array  # 0-based
    target: jax.Array  # the Q(lambda) target of Q(obs, action)
    valid: jax.Array  # False for a transition out of a final state (the pool's auto-reset)
    # With a recurrent core (every leaf then env-major, [B, T, ...], a minibatch a share of the
    # envs): the episode starts, and the state each env's sequence starts from, [B, ...]. Else ().
    first: jax.Array | tuple = ()
    core: PyTree = ()


class PQN(Agent[dict, optax.OptState, Samples, StepState]):
    """Networks: {"params": flax parameters, "updates": float32 [], the learner updates so far
    (what epsilon is scheduled on; published to the actors with the weights, saved in checkpoints,
    never touched by the optimizer)}."""

    def __init__(self, env_spec: envs.EnvSpec, config: PQNConfig = PQNConfig()):
        super().__init__(env_spec)
        if not isinstance(env_spec.action_space, gym.spaces.Discrete):
            raise ValueError(f"PQN needs a Discrete action space, got {env_spec.action_space}")
        self.config = config
        self.recurrent = config.core != "none"
        self.net = make_network(env_spec.observation_space, int(env_spec.action_space.n), config)
        self._targets = functools.partial(episode_q_lambda, discount=config.discount, lambda_=config.q_lambda)

    # ---------------------------------------------------------------- state
    def init_networks(self, key: jax.Array) -> dict:
        obs = observations.zeros(self.env_spec.observation_space)
        core = (self.net.initial_state(1), jnp.ones(1, bool)) if self.recurrent else ()
        return {"params": self.net.init(key, obs, *core), "updates": jnp.zeros((), jnp.float32)}

    def optimizer(self) -> optax.GradientTransformation:
        c = self.config  # purejaxql's: RAdam, gradients clipped by global norm
        tx = optax.chain(optax.clip_by_global_norm(c.max_grad_norm), optax.radam(linear_decay(c.learning_rate,
                                                                                               c.lr_decay_steps)))
        return normalization.frozen_outside(tx, "params")

    @property
    def minibatch_over(self) -> str:
        """Minibatches of steps, shuffled afresh each epoch; of whole sequences with a recurrent core."""
        return "sequences" if self.recurrent else "steps"

    def num_epochs(self) -> int:
        return self.config.num_epochs

    def num_minibatches(self) -> int:
        return self.config.num_minibatches

    def init_step_state(self, networks: dict, num_envs: int, key: jax.Array) -> StepState:
        return StepState(key, self.net.initial_state(num_envs) if self.recurrent else ())

    # ---------------------------------------------------------------- acting
    def epsilon(self, updates: jax.Array) -> jax.Array:
        """The actors' epsilon after `updates` learner updates."""
        c = self.config
        done = jnp.minimum(updates / c.epsilon_decay_updates, 1.0)
        return c.epsilon_start + (c.epsilon_finish - c.epsilon_start) * done

    def _act(self, networks: dict, step_state: StepState, env_step: EnvStep, epsilon: jax.Array
             ) -> tuple[jax.Array, StepState]:
        key, act_key = jax.random.split(step_state.key)
        if self.recurrent:
            q, core = self.net.apply(networks["params"], env_step.obs, step_state.core, env_step.first)
        else:
            q, core = self.net.apply(networks["params"], env_step.obs), ()
        k_explore, k_random = jax.random.split(act_key)
        action = epsilon_greedy(q, jnp.full(q.shape[:1], epsilon, jnp.float32), k_explore, k_random)
        return to_env_action(action, self.env_spec.action_space), StepState(key, core)

    def step(self, networks: dict, step_state: StepState, env_step: EnvStep) -> tuple[jax.Array, StepState]:
        return self._act(networks, step_state, env_step, self.epsilon(networks["updates"]))

    def evaluation_step(self, networks: dict, step_state: StepState, env_step: EnvStep) -> tuple[jax.Array, StepState]:
        """Greedy (or epsilon-greedy with `evaluation_epsilon`); the recurrent state carried as in `step`."""
        return self._act(networks, step_state, env_step, self.config.evaluation_epsilon)

    def _q_sequence(self, params, obs, first: jax.Array, core: PyTree) -> jax.Array:
        """Q [T, B, A] over a time-major sequence; with a core, unrolled from `core` (resets at `first`)."""
        if self.recurrent:
            return self.net.apply(params, obs, core, first, sequence=True)[0]
        steps = first.shape[0]
        return self.net.apply(params, observations.merge_leading(obs)).reshape(steps, -1, self.net.num_actions)

    # ---------------------------------------------------------------- learning
    def update_experience(self, experience, initial_step_state: StepState, final_step_state: StepState,
                          trajectory: Trajectory) -> Rollout:
        return Rollout(trajectory, initial_step_state.core)  # on-policy; begin_update turns it into samples

    def begin_update(self, networks: dict, experience: Rollout, key: jax.Array) -> tuple[dict, Samples]:
        traj = experience.trajectory
        es = traj.env_step
        max_q = jnp.max(self._q_sequence(networks["params"], es.obs, es.first, experience.core), -1)
        rewards = es.reward.astype(jnp.float32) * self.config.reward_scale
        targets, valid = jax.vmap(self._targets, in_axes=1, out_axes=1)(max_q, rewards, es.terminated, es.truncated)
        action = from_env_action(traj.action, self.env_spec.action_space)
        samples = Samples(jax.tree.map(lambda x: x[:-1], es.obs), action, targets, valid)
        if self.recurrent:  # minibatches of whole sequences: envs first
            samples = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), samples._replace(first=es.first[:-1]))
            samples = samples._replace(core=experience.core)
        networks = {**networks, "updates": networks["updates"] + 1.0}  # the actors' epsilon moves on
        return networks, jax.lax.stop_gradient(samples)

    def loss(self, networks: dict, experience: Samples, key: jax.Array) -> tuple[jax.Array, Metrics]:
        if self.recurrent:  # re-unroll the core over each env's sequence, from the state it started from
            seq = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), experience._replace(core=()))  # [T, B, ...]
            flat, q = observations.merge_leading((seq, self._q_sequence(networks["params"], seq.obs, seq.first,
                                                                         experience.core)))
        else:
            flat = observations.merge_leading(experience)
            q = self.net.apply(networks["params"], flat.obs)
        q_taken = jnp.take_along_axis(q, flat.action[:, None].astype(jnp.int32), -1)[:, 0]
        valid = flat.valid.astype(jnp.float32)
        error = (q_taken - flat.target) * valid
        # A mean over the whole minibatch's valid samples, every device's: optimize() averages
        # the devices' gradients, so each device's share is scaled by the device count.
        count, devices = jax.lax.psum((jnp.sum(valid), 1.0), LEARNER_AXIS)
        scale = devices / jnp.maximum(count, 1.0)
        metrics = {"q_mean": jnp.sum(q_taken * valid) * scale, "td_abs_mean": jnp.sum(jnp.abs(error)) * scale,
                   "epsilon": self.epsilon(networks["updates"])}
        return 0.5 * jnp.sum(error**2) * scale, metrics
