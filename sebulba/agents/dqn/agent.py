"""DQN as an off-policy agent: acting epsilon-greedy with Ape-X's per-env epsilons, learning
double, n-step Q-learning targets from the transition replay, the target network copied every
target_update_period optimizer steps (the framework's `update_target`)."""

from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import observations
from sebulba.agents.dqn.config import DQNConfig
from sebulba.agents.dqn.losses import q_learning_target, td_loss
from sebulba.agents.dqn.networks import make_network
from sebulba.exploration import apex_epsilons, epsilon_greedy
from sebulba.off_policy import OffPolicyAgent
from sebulba.replay.transitions import Transitions
from sebulba.schedules import linear_decay
from sebulba.target_networks import TargetNetworks
from sebulba.types import Metrics


class StepState(NamedTuple):
    epsilon: jax.Array  # float32 [B]: each env's Ape-X epsilon
    key: jax.Array  # one typed key


class DQN(OffPolicyAgent):
    def __init__(self, env_spec: envs.EnvSpec, config: DQNConfig = DQNConfig()):
        if not isinstance(env_spec.action_space, gym.spaces.Discrete):
            raise ValueError(f"DQN needs a Discrete action space, got {env_spec.action_space}")
        super().__init__(env_spec, config)
        self.config: DQNConfig = config
        self.num_actions = int(env_spec.action_space.n)
        self.net = make_network(env_spec.observation_space, self.num_actions, config)
        self.target_update_period = config.target_update_period

    def init_networks(self, key: jax.Array) -> TargetNetworks:
        return TargetNetworks.of(self.net.init(key, observations.zeros(self.env_spec.observation_space)))

    def optimizer(self) -> optax.GradientTransformation:
        c = self.config
        adam = optax.adam(linear_decay(c.learning_rate, c.lr_decay_steps), eps=c.adam_eps)
        return adam if c.max_grad_norm is None else optax.chain(optax.clip_by_global_norm(c.max_grad_norm), adam)

    def init_step_state(self, networks: TargetNetworks, num_envs: int, key: jax.Array) -> StepState:
        return StepState(apex_epsilons(num_envs, self.config.epsilon_base, self.config.epsilon_alpha), key)

    def act(self, networks: TargetNetworks, step_state: StepState, obs, key: jax.Array) -> jax.Array:
        k_explore, k_random = jax.random.split(key)
        return epsilon_greedy(self.net.apply(networks.online, obs), step_state.epsilon, k_explore, k_random)

    def greedy(self, networks: TargetNetworks, step_state: StepState, obs) -> jax.Array:
        return jnp.argmax(self.net.apply(networks.online, obs), -1).astype(jnp.int32)

    def batch_loss(self, networks: TargetNetworks, batch: Transitions, key: jax.Array,
                   ) -> tuple[jax.Array, Metrics, jax.Array]:
        c = self.config
        b = batch.reward.shape[0]
        both = jax.tree.map(lambda o, n: jnp.concatenate([o, n]), batch.obs, batch.next_obs)
        q_online = self.net.apply(networks.online, both)  # one pass over obs and next_obs
        q, q_next_online = q_online[:b], jax.lax.stop_gradient(q_online[b:])
        q_next_target = self.net.apply(networks.target, batch.next_obs)
        target = jax.lax.stop_gradient(q_learning_target(batch.reward, batch.discount, q_next_online, q_next_target,
                                                         c.double))
        q_taken = jnp.take_along_axis(q, batch.action[:, None].astype(jnp.int32), -1)[:, 0]
        td = target - q_taken
        metrics = {"q_mean": jnp.mean(q_taken), "td_abs_mean": jnp.mean(jnp.abs(td))}
        return td_loss(td, c.huber_delta), metrics, jnp.abs(td)
