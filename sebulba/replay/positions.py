"""A replay of positions (AlphaZero's: each an observation with its search policy and the game's
outcome): one learner device's shard, as pure functions of a fixed-shape pytree.

A cycle offers N candidate positions with a mask of those that are samples (the mover's row of a
game whose outcome is known); `add` keeps the masked ones, oldest first out, in a ring of C
slots. The candidates are compacted (samples first, in order) and written at the cursor; the
cursor moves on by the number of samples only, so the slots written past them are free (marked
invalid) and the next cycle writes over them. C must hold a cycle's N candidates.

`sample` draws uniformly, with replacement, from the slots written so far; each drawn slot comes
with its `valid` flag, which weighs its loss (a free slot weighs 0), so the batch's loss is the
mean over real positions. `count` is the samples held, what a learner waits for.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

PyTree = Any


class Positions(NamedTuple):
    """items: leaves [C, ...]; valid: bool [C]; cursor: int32 [] (the next slot); written: int32 []
    (slots ever written, saturating at C); count: int32 [] (valid slots)."""

    items: PyTree
    valid: jax.Array
    cursor: jax.Array
    written: jax.Array
    count: jax.Array


def init(capacity: int, item: PyTree) -> Positions:
    """An empty replay of `capacity` slots for items shaped as `item` (ShapeDtypeStructs or arrays
    of one position)."""
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    items = jax.tree.map(lambda x: jnp.zeros((capacity, *x.shape), x.dtype), item)
    zero = jnp.int32(0)
    return Positions(items, jnp.zeros(capacity, bool), zero, zero, zero)


def add(replay: Positions, items: PyTree, keep: jax.Array) -> Positions:
    """The candidates `items` [N, ...] whose `keep` (bool [N]) is set, added (see the module doc)."""
    capacity = replay.valid.shape[0]
    n = keep.shape[0]
    if n > capacity:
        raise ValueError(f"a replay of {capacity} positions cannot take {n} candidates at once")
    order = jnp.argsort(~keep, stable=True)  # the kept ones first, in order
    kept = keep.sum().astype(jnp.int32)
    slots = (replay.cursor + jnp.arange(n)) % capacity
    items = jax.tree.map(lambda buf, x: buf.at[slots].set(x[order]), replay.items, items)
    valid = replay.valid.at[slots].set(jnp.arange(n) < kept)
    return Positions(items, valid, (replay.cursor + kept) % capacity,
                     jnp.minimum(replay.written + n, capacity).astype(jnp.int32), valid.sum().astype(jnp.int32))


def sample(replay: Positions, key: jax.Array, batch_size: int) -> tuple[PyTree, jax.Array]:
    """(items [b, ...], valid bool [b]): b slots drawn uniformly from those written."""
    idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(replay.written, 1))
    return jax.tree.map(lambda x: x[idx], replay.items), replay.valid[idx]
