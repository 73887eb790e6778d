"""What SAC and TD3 share (each imports this, neither the other): the observation encoder their
networks start from, the twin Q critic Q(s, a) and its loss.

The critics are CleanRL's (`sac_continuous_action.py`, `td3_continuous_action.py`): Q(s, a) = MLP
of [features(s), a] to one value, relu, two of them learned side by side (Fujimoto et al. 2018's
clipped double Q: targets take their min). Here the two are one `nn.vmap`ped module, so their
parameters are one pytree with a leading axis of 2 and both are evaluated in one batched call.
Flax's default initialisation (lecun normal weights, zero biases), not PyTorch's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from sebulba.networks import MLPTorso, torso_for

Array = jax.Array
Bounds = tuple[tuple[float, ...], tuple[float, ...]]


def box_bounds(action_space: gym.spaces.Space, agent: str) -> Bounds:
    """A rank-1 float Box's (low, high) as tuples (static, for a module's attribute); ValueError,
    naming the space, for any other action space (these agents act in a bounded box)."""
    if not (isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1
            and np.issubdtype(action_space.dtype, np.floating)):
        raise ValueError(f"{agent} takes a rank-1 float Box action space, got {action_space}")
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise ValueError(f"{agent} needs a bounded Box action space (its policy is squashed into the bounds), "
                         f"got {action_space}")
    return tuple(map(float, action_space.low)), tuple(map(float, action_space.high))


def encoder_for(observation_space: gym.spaces.Space, kind: str = "auto") -> nn.Module:
    """The observation's features before an agent's own MLP: `torso_for`'s torso with no hidden
    layers for vectors and structured observations (flattened, one-hot or per-leaf encoded, so
    the MLP after it sees CleanRL's raw observation), its CNN for images."""
    torso = torso_for(observation_space, kind)
    return torso.clone(hidden_sizes=()) if isinstance(torso, MLPTorso) else torso


class QNetwork(nn.Module):
    """One critic: obs [B, ...] (a pytree for Dict spaces), action [B, D] -> Q [B]."""

    encoder: nn.Module
    hidden_sizes: Sequence[int] = (256, 256)

    @nn.compact
    def __call__(self, obs: Any, action: Array) -> Array:
        x = jnp.concatenate([self.encoder(obs), action.astype(jnp.float32)], -1)
        x = MLPTorso(tuple(self.hidden_sizes), name="mlp")(x)
        return nn.Dense(1, name="q")(x)[:, 0]


# Two critics with parameters stacked on a leading axis (each initialised apart): -> Q [2, B].
TwinQ = nn.vmap(QNetwork, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=None, out_axes=0,
                axis_size=2)


def twin_q_loss(q: Array, target: Array) -> tuple[Array, Array]:
    """Per transition: (sum over the critics of (Q_i - y)^2, and |TD| = the mean over the critics
    of |Q_i - y| for priorities). q [2, b] from the online critics; target [b], held fixed
    (stop_gradient here too: the critics never chase their own target). CleanRL's loss is the sum
    of the two critics' MSEs, this averaged over the batch."""
    td = q - jax.lax.stop_gradient(target)[None]
    return jnp.sum(jnp.square(td), axis=0), jax.lax.stop_gradient(jnp.mean(jnp.abs(td), axis=0))
