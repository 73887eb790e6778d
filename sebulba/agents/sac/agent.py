"""SAC as an off-policy agent: acting by sampling the squashed Gaussian (its mode to evaluate),
learning twin soft-Q critics, the actor and the temperature in one optimizer step per batch,
the targets following by Polyak averaging (the framework's `update_target` with tau)."""

from __future__ import annotations

import jax
import optax

import envs
from sebulba import observations
from sebulba.agents.sac.config import SACConfig
from sebulba.agents.sac.losses import sac_loss
from sebulba.agents.sac.networks import make_networks
from sebulba.agents.sac.optimizer import make_optimizer
from sebulba.off_policy import KeyStepState, OffPolicyAgent
from sebulba.replay.transitions import Transitions
from sebulba.target_networks import TargetNetworks
from sebulba.types import Metrics


class SAC(OffPolicyAgent):
    def __init__(self, env_spec: envs.EnvSpec, config: SACConfig = SACConfig()):
        super().__init__(env_spec, config)
        self.config: SACConfig = config
        self.nets = make_networks(env_spec.observation_space, env_spec.action_space, config)
        self.target_update_tau = config.tau

    def init_networks(self, key: jax.Array) -> TargetNetworks:
        return TargetNetworks.of(self.nets.init(key, observations.zeros(self.env_spec.observation_space)))

    def optimizer(self) -> optax.GradientTransformation:
        return make_optimizer(self.config)

    def act(self, networks: TargetNetworks, step_state: KeyStepState, obs, key: jax.Array) -> jax.Array:
        return self.nets.policy(networks.online.actor, obs).sample_and_log_prob(key)[0]

    def greedy(self, networks: TargetNetworks, step_state: KeyStepState, obs) -> jax.Array:
        return self.nets.policy(networks.online.actor, obs).mode()

    def batch_loss(self, networks: TargetNetworks, batch: Transitions, key: jax.Array,
                   ) -> tuple[jax.Array, Metrics, jax.Array]:
        return sac_loss(self.nets, networks, batch, key, self.config)
