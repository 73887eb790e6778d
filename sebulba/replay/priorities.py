"""Prioritized sampling (Schaul et al. 2016) over a replay's priority array, shared by the
sequence replay (R2D2) and the transition replay: an entry's priority 0 means it cannot be drawn
(an empty slot, or a transition that does not exist), a drawable one has priority >= PRIORITY_FLOOR.
Pure functions of fixed-shape arrays, so they trace once inside the learner's program."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

PRIORITY_FLOOR = 1e-6  # priorities are clipped to at least this, so a written entry stays drawable


def filled(row: Any, lead: tuple[int, ...]) -> jax.Array:
    """An array of shape lead + row.shape with row's dtype: zeros, or, for extended dtypes such
    as typed PRNG keys (which have no zeros), copies of the (concrete) row."""
    if jax.dtypes.issubdtype(row.dtype, jax.dtypes.extended):
        if isinstance(row, jax.ShapeDtypeStruct):
            raise ValueError(f"a {row.dtype} example row must be a concrete array, not a ShapeDtypeStruct")
        return jnp.broadcast_to(row, lead + tuple(row.shape)).copy()
    return jnp.zeros(lead + tuple(row.shape), row.dtype)


def check_shape(name: str, x: Any, shape: tuple[int, ...], dtype: Any) -> None:
    """Trace-time check that what is added matches what the replay was built for."""
    if tuple(x.shape) != tuple(shape) or x.dtype != dtype:
        raise ValueError(f"{name}: expected shape {tuple(shape)} dtype {dtype}, got {tuple(x.shape)} {x.dtype}")


def sampling_probabilities(priorities: jax.Array, exponent: float) -> jax.Array:
    """float32, priorities' shape: priority^a / sum over drawable entries; 0 for priority-0 entries
    (also when a = 0, where 0^0 would be 1). All zeros when nothing is drawable."""
    w = jnp.where(priorities > 0, jnp.power(jnp.maximum(priorities, PRIORITY_FLOOR), exponent), 0.0)
    total = jnp.sum(w)
    return w / jnp.where(total > 0, total, 1.0)


def sample_indices(priorities: jax.Array, key: jax.Array, batch_size: int, exponent: float) -> tuple[jax.Array, jax.Array]:
    """Draw `batch_size` (static) flat indices into the 1-D `priorities` with replacement, entry i
    with probability priority_i^a / sum_j priority_j^a; priority-0 entries are never drawn.
    Returns (indices int32 [b], probabilities float32 [b]). With nothing drawable every index is 0
    and every probability 0: callers gate their update on their replay's size."""
    probs = sampling_probabilities(priorities, exponent)
    cum = jnp.cumsum(probs)
    # r in (0, total]; the first entry whose cumulative mass reaches r has positive mass, since a
    # zero-mass entry's cumulative sum equals its predecessor's.
    r = cum[-1] * (1.0 - jax.random.uniform(key, (batch_size,), jnp.float32))
    indices = jnp.clip(jnp.searchsorted(cum, r, side="left"), 0, priorities.shape[0] - 1).astype(jnp.int32)
    return indices, probs[indices]


def importance_weights(probabilities: jax.Array, size: jax.Array, exponent: float = 0.6) -> jax.Array:
    """Prioritized replay's importance-sampling weights (N * P(i))^-exponent, normalized by the
    batch maximum (Schaul et al. 2016); 0 where the probability is 0 (the empty-replay case)."""
    n = jnp.maximum(size, 1).astype(jnp.float32)
    safe = jnp.where(probabilities > 0, probabilities, 1.0)
    w = jnp.where(probabilities > 0, jnp.power(n * safe, -exponent), 0.0)
    return w / jnp.maximum(jnp.max(w), 1e-12)


def set_priorities(priorities: jax.Array, max_priority: jax.Array, indices: jax.Array,
                   new: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(priorities, max_priority) with the drawn entries' priorities set (clipped to >=
    PRIORITY_FLOOR) and max_priority raised to the largest one set. Priority-0 entries stay 0 (an
    entry overwritten or invalidated since it was drawn stays undrawable). With duplicate indices
    (sampling is with replacement) one of the values wins. `priorities` is 1-D."""
    indices = jnp.asarray(indices, jnp.int32)
    new = jnp.maximum(jnp.asarray(new, jnp.float32), PRIORITY_FLOOR)
    drawable = priorities[indices] > 0
    target = jnp.where(drawable, indices, priorities.shape[0])  # out of range -> dropped
    return (priorities.at[target].set(new, mode="drop"),
            jnp.maximum(max_priority, jnp.max(jnp.where(drawable, new, 0.0))))
