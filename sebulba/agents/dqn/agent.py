"""DQN as an off-policy agent: acting epsilon-greedy with Ape-X's per-env epsilons, learning
double, n-step Q-learning targets from the transition replay, the target network copied every
target_update_period optimizer steps (the framework's `update_target`). Its value head (one
Q-value, C51's distribution or QR-DQN's quantiles: `value_heads.py`) and NoisyNet head layers
make C51, QR-DQN and Rainbow of the same agent."""

from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import observations
from sebulba.agents.dqn.config import DQNConfig
from sebulba.agents.dqn.networks import make_network
from sebulba.agents.dqn.value_heads import at, make_value_head
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
        self.head = make_value_head(config)
        self.target_update_period = config.target_update_period

    def init_networks(self, key: jax.Array) -> TargetNetworks:
        return TargetNetworks.of(self.net.init(key, observations.zeros(self.env_spec.observation_space)))

    def optimizer(self) -> optax.GradientTransformation:
        c = self.config
        adam = optax.adam(linear_decay(c.learning_rate, c.lr_decay_steps), eps=c.adam_eps)
        return adam if c.max_grad_norm is None else optax.chain(optax.clip_by_global_norm(c.max_grad_norm), adam)

    def init_step_state(self, networks: TargetNetworks, num_envs: int, key: jax.Array) -> StepState:
        return StepState(apex_epsilons(num_envs, self.config.epsilon_base, self.config.epsilon_alpha), key)

    def _outputs(self, params, obs, key: jax.Array | None = None, stream: int = 0) -> jax.Array:
        """The network's outputs; a NoisyNet draws its noise from `key` folded with `stream` (the
        mean weights without a key, or without noisy layers)."""
        if key is None or not self.config.noisy:
            return self.net.apply(params, obs)
        return self.net.apply(params, obs, noise=True, rngs={"noise": jax.random.fold_in(key, stream)})

    def act(self, networks: TargetNetworks, step_state: StepState, obs, key: jax.Array) -> jax.Array:
        k_explore, k_random = jax.random.split(key)
        q = self.head.q_values(self._outputs(networks.online, obs, key, stream=1))
        return epsilon_greedy(q, step_state.epsilon, k_explore, k_random)

    def greedy(self, networks: TargetNetworks, step_state: StepState, obs) -> jax.Array:
        return jnp.argmax(self.head.q_values(self._outputs(networks.online, obs)), -1).astype(jnp.int32)

    def batch_loss(self, networks: TargetNetworks, batch: Transitions, key: jax.Array,
                   ) -> tuple[jax.Array, Metrics, jax.Array]:
        b = batch.reward.shape[0]
        both = jax.tree.map(lambda o, n: jnp.concatenate([o, n]), batch.obs, batch.next_obs)
        out = self._outputs(networks.online, both, key, stream=0)  # one pass over obs and next_obs
        next_online = jax.lax.stop_gradient(out[b:])
        next_target = self._outputs(networks.target, batch.next_obs, key, stream=1)
        loss, priority, metrics = self.head.loss(at(out[:b], batch.action), next_online, next_target, batch.reward,
                                                 batch.discount, self.config.double)
        return loss, metrics, priority
