"""Action distributions: what a policy samples from, and the log-probabilities and entropies its
losses need. Pure and batched over any leading axes; each is a NamedTuple of arrays, so its
parameters can be recorded in a trajectory (`ActorOutput.extras`) and vmapped like any pytree.

Continuous actions (DESIGN.md, "Continuous actions"). The policy-gradient agents (IMPALA, PPO)
use a diagonal Gaussian with a learned, state-independent log standard deviation (CleanRL's and
Cleanba's PPO choice). The sample goes to the env clipped to the action space's bounds
(`to_env_action`), and what is learned is the log-probability of the unclipped sample, so a
policy whose mean lies outside the bounds still gets exact gradients; they keep it because their
losses need a recorded action's log-probability and the entropy, which are closed-form for a
Gaussian and not for a squashed one (its log-probability of a recorded action needs atanh, unstable
at the bounds). SAC uses a tanh-squashed Gaussian (`TanhGaussian`): its loss only needs the
log-probability of a fresh reparameterised sample, taken with the sample (the tanh's log-det on
the pre-squash value, stable everywhere), and its actions lie in the bounds by construction.

MultiDiscrete actions: one categorical per dimension (`MultiCategorical`), independent given the
observation, so the joint log-probability and entropy are the sums over dimensions (what PPO's
ratio and IMPALA's V-trace rho take). Policies act in 0-based indices; `to_env_action` shifts
them by a Discrete or MultiDiscrete space's `start` for the env, `from_env_action` back.
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


def squash(u: Array, low: Array, high: Array) -> Array:
    """u in R -> (low + high) / 2 + (high - low) / 2 * tanh(u), in [low, high]: how a tanh-bounded
    policy (SAC's, TD3's actor, a Gaussian's bounded mean) maps onto a Box's bounds."""
    return (high + low) / 2 + (high - low) / 2 * jnp.tanh(u)


_LOG_2 = math.log(2.0)


class TanhGaussian(NamedTuple):
    """a = squash(u, low, high), u ~ N(mean, exp(log_std)) independently over the last axis
    (SAC's policy). `mean`, `log_std` [..., D]; `low`, `high` the action space's bounds [D]
    (broadcast against them). Actions are float [..., D] in [low, high]; log-probabilities are of
    the joint density on the box, summed over the D dims."""

    mean: Array
    log_std: Array
    low: Array
    high: Array

    def sample_and_log_prob(self, key: Array) -> tuple[Array, Array]:
        """A reparameterised sample (differentiable in mean and log_std) and its log-density:
        log N(u) - sum log|da/du|, with log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)) (exact
        and finite for any u, where the naive form is -inf once tanh(u) rounds to 1) and the
        affine scale's log((high - low) / 2)."""
        eps = jax.random.normal(key, jnp.shape(self.mean), self.mean.dtype)
        log_std = jnp.broadcast_to(self.log_std, jnp.shape(self.mean))
        u = self.mean + jnp.exp(log_std) * eps
        log_det_tanh = 2.0 * (_LOG_2 - u - jax.nn.softplus(-2.0 * u))
        log_scale = jnp.broadcast_to(jnp.log((self.high - self.low) / 2), jnp.shape(u))
        log_prob = jnp.sum(-0.5 * jnp.square(eps) - log_std - _HALF_LOG_2PI - log_det_tanh - log_scale, axis=-1)
        return squash(u, self.low, self.high), log_prob

    def mode(self) -> Array:
        """The squashed mean: the evaluation action."""
        return squash(self.mean, self.low, self.high)


# The logit of a padding entry: its probability is exactly 0 in float32 (never sampled, never the
# mode, 0 * logit = 0 in the entropy), and finite, so log_softmax never meets inf - inf.
_PAD_LOGIT = -1e9


def masked_logits(logits: Array, mask: Array) -> Array:
    """Logits [..., A] with the actions the `mask` [..., A] rules out (0 / False) made impossible
    (PettingZoo's `action_mask`: only the legal moves are sampled, are the mode, carry entropy).
    A row with no legal action (a turn-based game's player who is not to move: its action is
    ignored) gets the same constant logits whatever the network says: a uniform policy whose
    log-probability and entropy have no gradient, so such rows teach the policy nothing."""
    mask = mask.astype(bool)
    legal = jnp.where(mask, logits, _PAD_LOGIT)
    return jnp.where(jnp.any(mask, axis=-1, keepdims=True), legal, jnp.zeros_like(logits))


class MultiCategorical(NamedTuple):
    """One categorical per action dimension: `logits` [..., D, K], row d holding dimension d's
    nvec[d] logits then K - nvec[d] padding entries (K = max(nvec); `from_flat` builds it);
    actions are int32 [..., D]. log_prob and entropy are the joint distribution's: sums over D.

    Padded rather than kept flat with a static nvec, so it stays a NamedTuple of arrays that a
    trajectory records and vmaps like the others (a cost of D * K - sum(nvec) floats per step)."""

    logits: Array

    @classmethod
    def from_flat(cls, flat: Array, nvec: tuple[int, ...]) -> MultiCategorical:
        """From a head's sum(nvec) logits [..., sum(nvec)], dimension d's in its own slice."""
        if flat.shape[-1] != sum(nvec):
            raise ValueError(f"MultiCategorical over nvec {tuple(nvec)} takes {sum(nvec)} logits, got {flat.shape[-1]}")
        k = max(nvec)
        rows, offset = [], 0
        for n in nvec:
            row = flat[..., offset:offset + n]
            pad = jnp.full((*flat.shape[:-1], k - n), _PAD_LOGIT, flat.dtype)
            rows.append(jnp.concatenate([row, pad], -1))
            offset += n
        return cls(jnp.stack(rows, -2))

    def sample(self, key: Array) -> Array:
        return Categorical(self.logits).sample(key)

    def log_prob(self, action: Array) -> Array:
        return jnp.sum(Categorical(self.logits).log_prob(action), axis=-1)

    def entropy(self) -> Array:
        return jnp.sum(Categorical(self.logits).entropy(), axis=-1)

    def mode(self) -> Array:
        return Categorical(self.logits).mode()


Distribution = Union[Categorical, DiagGaussian, MultiCategorical]


def as_distribution(params: Array | Distribution) -> Distribution:
    """A distribution as it is; a bare array as the logits of a Categorical."""
    return params if isinstance(params, (Categorical, DiagGaussian, MultiCategorical)) else Categorical(params)


def check_action_space(space: gym.spaces.Space, agent: str) -> None:
    """ValueError, naming the space, unless it is Discrete, rank-1 MultiDiscrete or a bounded
    rank-1 float Box (the spaces the policy-gradient agents' distributions cover)."""
    if isinstance(space, gym.spaces.Discrete):
        return
    if isinstance(space, gym.spaces.MultiDiscrete):
        if len(space.shape) != 1:
            raise ValueError(f"{agent} takes a rank-1 MultiDiscrete action space (one categorical per entry of a "
                             f"vector), got a MultiDiscrete of shape {space.shape}, nvec {space.nvec.tolist()}")
        return
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 1 and np.issubdtype(space.dtype, np.floating):
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise ValueError(f"{agent} needs a bounded Box action space (its actions are clipped to the bounds), "
                             f"got {space}")
        return
    raise ValueError(f"{agent} takes a Discrete, a rank-1 MultiDiscrete or a rank-1 float Box action space, "
                     f"got {space}")


def _start(space: gym.spaces.Space) -> np.ndarray | None:
    """A Discrete or MultiDiscrete space's `start` (None where it is 0 everywhere, or another space)."""
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)) and np.any(space.start != 0):
        return np.asarray(space.start, np.int32)
    return None


def to_env_action(action: Array, space: gym.spaces.Space) -> Array:
    """What the env receives for a policy's action: a Box's clipped into the space's bounds, a
    Discrete's or MultiDiscrete's 0-based index shifted by the space's `start`."""
    if isinstance(space, gym.spaces.Box):
        low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
        return jnp.clip(action, low, high).astype(space.dtype)
    start = _start(space)
    return action if start is None else action + start


def from_env_action(action: Array, space: gym.spaces.Space) -> Array:
    """The policy's 0-based index of a Discrete or MultiDiscrete action the env received (the
    inverse of `to_env_action` there); other actions as they are."""
    start = _start(space)
    return action if start is None else action - start
