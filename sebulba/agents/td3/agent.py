"""TD3 as an off-policy agent: acting with the deterministic actor plus Gaussian exploration noise
(without it to evaluate), learning twin critics every optimizer step and the actor every
policy_delay-th, the targets following by Polyak averaging on the actor's steps (`follow_targets`)."""

from __future__ import annotations

import jax
import optax

import envs
from sebulba import observations
from sebulba.agents.td3.config import TD3Config
from sebulba.agents.td3.losses import exploration_action, td3_loss
from sebulba.agents.td3.networks import make_networks
from sebulba.agents.td3.optimizer import follow_targets, make_optimizer
from sebulba.off_policy import KeyStepState, OffPolicyAgent
from sebulba.replay.transitions import Transitions
from sebulba.target_networks import TargetNetworks
from sebulba.types import Metrics


class TD3(OffPolicyAgent):
    def __init__(self, env_spec: envs.EnvSpec, config: TD3Config = TD3Config()):
        super().__init__(env_spec, config)
        self.config: TD3Config = config
        self.nets = make_networks(env_spec.observation_space, env_spec.action_space, config)

    def init_networks(self, key: jax.Array) -> TargetNetworks:
        return TargetNetworks.of(self.nets.init(key, observations.zeros(self.env_spec.observation_space)))

    def optimizer(self) -> optax.GradientTransformation:
        return make_optimizer(self.config)

    def update_target(self, networks: TargetNetworks) -> TargetNetworks:
        return follow_targets(networks, self.config)

    def act(self, networks: TargetNetworks, step_state: KeyStepState, obs, key: jax.Array) -> jax.Array:
        low, high = self.nets.bounds
        return exploration_action(self.nets.policy(networks.online.actor, obs), key, low, high,
                                  self.config.exploration_noise)

    def greedy(self, networks: TargetNetworks, step_state: KeyStepState, obs) -> jax.Array:
        return self.nets.policy(networks.online.actor, obs)

    def batch_loss(self, networks: TargetNetworks, batch: Transitions, key: jax.Array,
                   ) -> tuple[jax.Array, Metrics, jax.Array]:
        return td3_loss(self.nets, networks, batch, key, self.config)
