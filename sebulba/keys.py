"""Typed PRNG keys and their raw key data: the one place that converts between the two.

Agents use typed keys (`jax.random.key`). Where a key crosses a boundary that wants plain arrays it
travels as its key data: the inference cycle carries step states that way (a jitted call spends
Python time flattening and rebuilding each typed key it is passed), the learner places its key on
the devices that way, and checkpoints store it that way (orbax writes plain arrays).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np


def is_key(x: Any) -> bool:
    """A typed PRNG key array (not raw key data)."""
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def raw(tree: Any) -> Any:
    """tree with each typed key as its key data (other leaves as they are)."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if is_key(x) else x, tree)


def put(key: jax.Array, sharding: Any) -> jax.Array:
    """A key (typed or raw) placed with `sharding`, through host key data: the same value on
    every process of a job, and the same leaf type as given."""
    data = jax.device_put(np.asarray(jax.random.key_data(key) if is_key(key) else key), sharding)
    return jax.random.wrap_key_data(data, impl=jax.random.key_impl(key)) if is_key(key) else data


def typed_like(data: Any, like: Any) -> Any:
    """`data` (a tree of key data and other arrays, e.g. restored from a checkpoint) with typed
    keys where `like` has them, and host values put where `like`'s jax arrays are."""
    def back(r: Any, x: Any) -> Any:
        if isinstance(x, jax.Array) and isinstance(r, np.ndarray):
            r = jax.device_put(r, x.sharding)
        return jax.random.wrap_key_data(r, impl=jax.random.key_impl(x)) if is_key(x) else r

    return jax.tree.map(back, data, like)


@dataclasses.dataclass(frozen=True)
class KeyData:
    """Which leaves of a tree are typed keys carried as key data, and their PRNG implementations
    (None for the other leaves): what `typed` needs to give the keys back."""

    impls: tuple[Any, ...]

    @staticmethod
    def of(tree: Any) -> KeyData:
        return KeyData(tuple(jax.random.key_impl(x) if is_key(x) else None for x in jax.tree.leaves(tree)))

    @property
    def any(self) -> bool:
        return any(impl is not None for impl in self.impls)

    def typed(self, tree: Any) -> Any:
        """tree (carried: keys as key data) with its keys typed again."""
        leaves, treedef = jax.tree.flatten(tree)
        if len(leaves) != len(self.impls):
            raise ValueError(f"a tree of {len(leaves)} leaves, carried with {len(self.impls)}")
        return treedef.unflatten([x if impl is None or is_key(x) else jax.random.wrap_key_data(x, impl=impl)
                                  for x, impl in zip(leaves, self.impls)])
