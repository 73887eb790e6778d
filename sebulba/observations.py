"""Observations as pytrees: an array for a Box/Discrete space, a dict/tuple of arrays for a Dict/
Tuple space (as the env pool batches them, `envs.tree`). The helpers an agent and the loop need
to build and reshape them without caring which."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import numpy as np

from envs.tree import build


def zeros(space: gym.spaces.Space, batch: tuple[int, ...] = (1,), as_pool: bool = False) -> Any:
    """Zero observations of space with leading dims `batch`, as numpy: in JAX's dtypes (int64
    leaves become int32 unless x64 is on), e.g. the sample input of a network's `init`; with
    as_pool, in the space's own dtypes, as the pool returns them."""
    def leaf(_: Any, s: gym.spaces.Space) -> np.ndarray:
        return np.zeros((*batch, *s.shape), s.dtype if as_pool else jax.dtypes.canonicalize_dtype(s.dtype))

    return build(leaf, space)


def shape_structs(space: gym.spaces.Space, batch: tuple[int, ...] = ()) -> Any:
    """`jax.ShapeDtypeStruct`s of observations of space with leading dims `batch`."""
    return build(lambda _, s: jax.ShapeDtypeStruct((*batch, *s.shape), jax.dtypes.canonicalize_dtype(s.dtype)), space)


def merge_leading(obs: Any, n: int = 2) -> Any:
    """Each leaf with its first n dims merged into one ([T, B, ...] -> [T * B, ...])."""
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[n:]), obs)


def leading_dim(obs: Any) -> int:
    """The batch size of an observation pytree (its leaves' first dim)."""
    return jax.tree_util.tree_leaves(obs)[0].shape[0]


class _LeafShape:
    """A leaf's path and shape, opaque to jax.tree (so a space's structure flattens like an obs)."""

    def __init__(self, path: tuple, shape: tuple[int, ...]):
        self.path, self.shape = path, shape


def check_observation_batch(obs: Any, space: gym.spaces.Space) -> Any:
    """obs as numpy arrays, checked to be a batch [B, ...] of observations of space (the same
    structure, each leaf [B, *leaf shape], one B); a ValueError naming the mismatch otherwise."""
    wants, structure = jax.tree_util.tree_flatten(build(lambda path, s: _LeafShape(path, s.shape), space))
    values, got = jax.tree_util.tree_flatten(obs)
    if got != structure:
        raise ValueError(f"act takes a batch of observations of {space}; got {type(obs).__name__} {got}")
    values = [np.asarray(x) for x in values]
    for want, x in zip(wants, values):
        if x.shape[1:] != want.shape:
            where = f" at leaf {'/'.join(map(str, want.path))!r}" if want.path else ""
            raise ValueError(f"act takes a batch of observations of shape [B, *{want.shape}]{where}, got {x.shape}")
    if len({x.shape[0] for x in values}) > 1:
        raise ValueError(f"the observation's leaves have different batch sizes {sorted({x.shape[0] for x in values})}")
    return jax.tree_util.tree_unflatten(got, values)
