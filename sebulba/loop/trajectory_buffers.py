"""How the inference cycle moves env steps to the actor device and records its steps there.

On the CPU each array that a jitted call takes from the host, or takes and returns on the device,
costs it microseconds, against 60-150 us for the whole act. So:

- the inferencer hands each act a `HostStep`: the observation, and the reward and three flags
  packed on the host into one uint32 array (one host-to-device copy instead of four);
- a step's record `(env_step, action, extras)` goes into few buffers: its small per-env leaves
  (numbers of at most 32 bits, at most `PACK_MAX_VALUES` per env: reward, flags, action, logits,
  small observations) bit for bit as columns of one uint32 buffer, larger leaves (image frames)
  in a buffer each. `read` unpacks them, bit for bit, into the trajectory's leaves.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sebulba.types import EnvStep

PACK_MAX_VALUES = 1024  # a leaf with more values per env (e.g. image frames) keeps its own buffer
_WORD = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32}  # unsigned ints by byte width


class HostStep(NamedTuple):
    """An env step as the inferencer hands it to the act (numpy arrays). `env_step_of` gives the
    EnvStep."""

    obs: Any
    scalars: np.ndarray  # uint32 [..., 4, B]: reward (float32 bits), terminated, truncated, first


def host_step(obs: Any, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
              first: np.ndarray) -> HostStep:
    """A HostStep of numpy arrays (reward: float32 values)."""
    scalars = np.empty((4, len(first)), np.uint32)
    scalars[0].view(np.float32)[:] = reward
    scalars[1], scalars[2], scalars[3] = terminated, truncated, first
    return HostStep(obs, scalars)


def env_step_of(step: EnvStep | HostStep) -> EnvStep:
    """The EnvStep of a HostStep, inside a jitted function (any leading axes); an EnvStep as it is."""
    if isinstance(step, EnvStep):
        return step
    s = step.scalars
    return EnvStep(step.obs, jax.lax.bitcast_convert_type(s[..., 0, :], jnp.float32), s[..., 1, :] != 0,
                   s[..., 2, :] != 0, s[..., 3, :] != 0)


class RecordLayout(NamedTuple):
    """Where each leaf of a step's record `(env_step, action, extras)` is kept (static)."""

    treedef: Any  # of the record
    leaves: tuple[tuple[tuple[int, ...], Any], ...]  # (shape, dtype) of each leaf at one step: [B, ...]
    num_envs: int  # B
    env_leaves: int  # the first env_leaves leaves are the env step's: T + 1 entries, the rest T
    packed: tuple[int, ...]  # leaves in the packed buffer, in column order
    loose: tuple[int, ...]  # leaves with a buffer of their own

    @staticmethod
    def create(env_step: EnvStep, action: Any, extras: Any) -> RecordLayout:
        """The layout for a record of arrays or abstract values."""
        leaves, treedef = jax.tree.flatten((env_step, action, extras))
        num_envs = env_step.reward.shape[0]
        shapes = tuple((tuple(x.shape), x.dtype) for x in leaves)
        packed = tuple(i for i, (shape, dtype) in enumerate(shapes) if _packable(shape, dtype, num_envs))
        loose = tuple(i for i in range(len(leaves)) if i not in packed)
        return RecordLayout(treedef, shapes, num_envs, len(jax.tree.leaves(env_step)), packed, loose)

    def width(self, i: int) -> int:
        """Columns of packed leaf i."""
        return math.prod(self.leaves[i][0][1:])

    @property
    def columns(self) -> int:
        return sum(self.width(i) for i in self.packed)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Buffers:
    """A cycle's trajectory under construction, on the actor device."""

    packed: jax.Array  # uint32 [T, B, columns]: the packed leaves (the last env step comes with `read`)
    loose: tuple[jax.Array, ...]  # the other leaves: [T + 1, B, ...] for the env step's, [T, B, ...] otherwise
    layout: RecordLayout = dataclasses.field(metadata={"static": True})


def zeros(layout: RecordLayout, steps: int) -> Buffers:
    """Zeroed buffers for a cycle of `steps` steps."""
    loose = tuple(jnp.zeros((steps + (i < layout.env_leaves), *layout.leaves[i][0]), layout.leaves[i][1])
                  for i in layout.loose)
    return Buffers(jnp.zeros((steps, layout.num_envs, layout.columns), jnp.uint32), loose, layout)


def write(buffers: Buffers, record: tuple[EnvStep, Any, Any], t: jax.Array) -> Buffers:
    """The buffers with `record` as step t."""
    layout, leaves = buffers.layout, jax.tree.leaves(record)
    put = lambda buf, x: jax.lax.dynamic_update_index_in_dim(buf, x, t, 0)
    row = (jnp.concatenate([_to_words(leaves[i]) for i in layout.packed], 1) if layout.packed
           else jnp.zeros(buffers.packed.shape[1:], jnp.uint32))
    return Buffers(put(buffers.packed, row), tuple(put(buf, leaves[i]) for buf, i in zip(buffers.loose, layout.loose)),
                   layout)


def read(layout: RecordLayout, packed: jax.Array, loose: tuple[jax.Array, ...], last: EnvStep,
         steps: int) -> tuple[EnvStep, Any, Any]:
    """The recorded (env_step [T + 1], action [T], extras [T]), with `last` as env step T."""
    leaves: list[Any] = [None] * len(layout.leaves)
    column = 0
    for i in layout.packed:
        shape, dtype = layout.leaves[i]
        leaves[i] = _from_words(packed[:, :, column:column + layout.width(i)], shape, dtype)
        column += layout.width(i)
    for i, buf in zip(layout.loose, loose):
        leaves[i] = buf
    for i, x in enumerate(jax.tree.leaves(last)):  # the env step's leaves come first
        leaves[i] = leaves[i].at[steps].set(x) if i in layout.loose else jnp.concatenate([leaves[i], x[None]])
    return jax.tree.unflatten(layout.treedef, leaves)


def _packable(shape: tuple[int, ...], dtype: Any, num_envs: int) -> bool:
    """Per-env (leading axis num_envs), at most PACK_MAX_VALUES values per env, bool or a number of
    at most 32 bits."""
    if not shape or shape[0] != num_envs or math.prod(shape[1:]) > PACK_MAX_VALUES:
        return False
    number = jnp.issubdtype(dtype, jnp.integer) or jnp.issubdtype(dtype, jnp.floating)
    return dtype == jnp.bool_ or (number and np.dtype(dtype).itemsize in _WORD)


def _to_words(x: jax.Array) -> jax.Array:
    """[B, ...] -> uint32 [B, n]: the leaf's values bit for bit (narrower ones zero-extended)."""
    x = x.reshape(x.shape[0], -1)
    if x.dtype == jnp.bool_:
        return x.astype(jnp.uint32)
    return jax.lax.bitcast_convert_type(x, _WORD[x.dtype.itemsize]).astype(jnp.uint32)


def _from_words(words: jax.Array, shape: tuple[int, ...], dtype: Any) -> jax.Array:
    """uint32 [T, B, n] -> [T, *shape] of dtype: the inverse of `_to_words`."""
    full = (words.shape[0], *shape)
    if dtype == jnp.bool_:
        return (words != 0).reshape(full)
    return jax.lax.bitcast_convert_type(words.astype(_WORD[np.dtype(dtype).itemsize]), dtype).reshape(full)
