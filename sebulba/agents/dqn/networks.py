"""DQN's Q-network: a torso (MLP or CNN by observation space) and a linear or dueling head, with
one output an action (a Q-value) or `num_atoms` (a distributional head's atoms or quantiles), its
head layers plain or noisy (NoisyNet)."""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp

from sebulba.agents.dqn.config import DQNConfig
from sebulba.networks import MLPTorso, torso_for


class NoisyDense(nn.Module):
    """A dense layer with learned, factorised Gaussian noise on its weights (NoisyNet, Fortunato et
    al. 2018): w = mu + sigma * (f(e_in) f(e_out)^T), f(x) = sign(x) sqrt(|x|), one noise draw (the
    "noise" RNG stream) for the whole batch. noise=False: the mean weights (greedy evaluation)."""

    features: int
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, x: jax.Array, noise: bool) -> jax.Array:
        fan_in = x.shape[-1]
        bound = fan_in**-0.5
        uniform = lambda key, shape: jax.random.uniform(key, shape, jnp.float32, -bound, bound)  # noqa: E731
        sigma = nn.initializers.constant(self.sigma0 * bound)
        mu_w = self.param("mu_kernel", uniform, (fan_in, self.features))
        mu_b = self.param("mu_bias", uniform, (self.features,))
        sigma_w = self.param("sigma_kernel", sigma, (fan_in, self.features))
        sigma_b = self.param("sigma_bias", sigma, (self.features,))
        if not noise:
            return x @ mu_w + mu_b
        k_in, k_out = jax.random.split(self.make_rng("noise"))
        f = lambda e: jnp.sign(e) * jnp.sqrt(jnp.abs(e))  # noqa: E731
        e_in, e_out = f(jax.random.normal(k_in, (fan_in,))), f(jax.random.normal(k_out, (self.features,)))
        return x @ (mu_w + sigma_w * jnp.outer(e_in, e_out)) + mu_b + sigma_b * e_out


class QNetwork(nn.Module):
    torso: nn.Module
    num_actions: int
    dueling: bool
    kernel_init: Callable[..., jax.Array] = nn.initializers.lecun_normal()  # the heads' (flax's Dense default)
    num_atoms: int = 0  # outputs an action: 0 for one Q-value ([B, A]), else [B, A, num_atoms]
    noisy: bool = False  # NoisyDense head layers

    @nn.compact
    def __call__(self, obs, noise: bool = False) -> jax.Array:
        """Q-values [B, A] (or atoms [B, A, num_atoms]) for a batch of observations; noise: draw a
        NoisyNet head's weight noise (the "noise" RNG stream), else its mean weights."""
        x = self.torso(obs)
        per = self.num_atoms or 1

        def head(units: int, name: str) -> jax.Array:
            if self.noisy:
                out = NoisyDense(units * per, name=name)(x, noise)
            else:
                out = nn.Dense(units * per, kernel_init=self.kernel_init, name=name)(x)
            return out.reshape(*out.shape[:-1], *((units, self.num_atoms) if self.num_atoms else (units,)))

        if not self.dueling:
            return head(self.num_actions, "q")
        value, advantage = head(1, "value"), head(self.num_actions, "advantage")
        return value + advantage - advantage.mean(-1 if not self.num_atoms else -2, keepdims=True)


def make_network(observation_space: gym.spaces.Space, num_actions: int, config: DQNConfig) -> QNetwork:
    torso = torso_for(observation_space, config.torso)
    if isinstance(torso, MLPTorso):
        torso = torso.clone(hidden_sizes=config.hidden_sizes)
    num_atoms = 0 if config.value_head == "scalar" else config.num_atoms
    return QNetwork(torso, num_actions, config.dueling, num_atoms=num_atoms, noisy=config.noisy)
