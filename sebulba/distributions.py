"""Action distributions: what a policy samples from, and the log-probabilities and entropies its
losses need. Pure and batched over any leading axes; each is a NamedTuple of arrays, so its
parameters can be recorded in a trajectory (`ActorOutput.extras`) and vmapped like any pytree.

Continuous actions (DESIGN.md, "Continuous actions"): a diagonal Gaussian with a learned,
state-independent log standard deviation (CleanRL's and Cleanba's PPO choice). The sample goes
to the env clipped to the action space's bounds (`clip_to_space`), and what is learned is the
log-probability of the unclipped sample, so a policy whose mean lies outside the bounds still
gets exact gradients (a tanh-squashed Gaussian would need its log-det term and has no closed-form
entropy).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Union

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class Categorical(NamedTuple):
    """A categorical over the last axis of `logits` [..., A]; actions are int32 [...]."""

    logits: Array

    def sample(self, key: Array) -> Array:
        return jax.random.categorical(key, self.logits).astype(jnp.int32)

    def log_prob(self, action: Array) -> Array:
        logp = jax.nn.log_softmax(self.logits)
        return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self) -> Array:
        logp = jax.nn.log_softmax(self.logits)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)

    def mode(self) -> Array:
        return jnp.argmax(self.logits, axis=-1).astype(jnp.int32)


class DiagGaussian(NamedTuple):
    """Independent normals over the last axis: `mean` [..., D] and `log_std` (broadcast to it);
    actions are float [..., D]. Log-probabilities and entropies sum over the D dims."""

    mean: Array
    log_std: Array

    def sample(self, key: Array) -> Array:
        return self.mean + jnp.exp(self.log_std) * jax.random.normal(key, jnp.shape(self.mean), self.mean.dtype)

    def log_prob(self, action: Array) -> Array:
        log_std = jnp.broadcast_to(self.log_std, jnp.shape(self.mean))
        z = (action - self.mean) * jnp.exp(-log_std)
        return jnp.sum(-0.5 * jnp.square(z) - log_std - _HALF_LOG_2PI, axis=-1)

    def entropy(self) -> Array:
        log_std = jnp.broadcast_to(self.log_std, jnp.shape(self.mean))
        return jnp.sum(log_std + 0.5 + _HALF_LOG_2PI, axis=-1)

    def mode(self) -> Array:
        return self.mean


Distribution = Union[Categorical, DiagGaussian]


def as_distribution(params: Array | Distribution) -> Distribution:
    """A distribution as it is; a bare array as the logits of a Categorical."""
    return params if isinstance(params, (Categorical, DiagGaussian)) else Categorical(params)


def check_action_space(space: gym.spaces.Space, agent: str) -> None:
    """ValueError, naming the space, unless it is Discrete or a bounded rank-1 Box."""
    if isinstance(space, gym.spaces.Discrete):
        return
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 1 and np.issubdtype(space.dtype, np.floating):
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise ValueError(f"{agent} needs a bounded Box action space (its actions are clipped to the bounds), "
                             f"got {space}")
        return
    raise ValueError(f"{agent} takes a Discrete or a rank-1 float Box action space, got {space}")


def clip_to_space(action: Array, space: gym.spaces.Space) -> Array:
    """A Box action clipped into the space's bounds (what the env receives); other actions as they are."""
    if not isinstance(space, gym.spaces.Box):
        return action
    low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
    return jnp.clip(action, low, high).astype(space.dtype)
