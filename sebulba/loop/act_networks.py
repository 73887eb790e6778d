"""The networks as the act takes them: the leaves it uses, in a flat tuple.

A jitted call flattens every argument it is passed, used or not. An agent's networks are nested
dicts (SimplePolicyGradient's: 24 leaves, of which its act uses the policy's 12); on the CPU a
call passed them costs about 12 us, against 6 us for a tuple of the 12 leaves used. The
inferencer makes the tuple once per networks version (`ActNetworks.of`); the act rebuilds the
networks inside the jitted call, with zeros for the leaves it does not use (XLA drops them).
Which leaves are used is read off the act's jaxpr: an input is used when a live equation, or an
equation with effects, reads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.extend.core import Var


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ActNetworks:
    """Networks passed as the leaves an act uses; `full()` rebuilds them inside a jitted call."""

    used: tuple[jax.Array, ...]
    treedef: Any = dataclasses.field(metadata={"static": True})
    # (index, shape, dtype) of each leaf left out
    unused: tuple[tuple[int, tuple[int, ...], Any], ...] = dataclasses.field(metadata={"static": True})

    @staticmethod
    def of(networks: Any, used: tuple[bool, ...]) -> ActNetworks:
        leaves, treedef = jax.tree.flatten(networks)
        if len(leaves) != len(used):
            raise ValueError(f"networks of {len(leaves)} leaves, a mask of {len(used)}")
        used = tuple(u or not _zeroable(x.dtype) for x, u in zip(leaves, used))
        unused = tuple((i, tuple(x.shape), x.dtype) for i, (x, u) in enumerate(zip(leaves, used)) if not u)
        return ActNetworks(tuple(x for x, u in zip(leaves, used) if u), treedef, unused)

    def full(self) -> Any:
        """The networks, the unused leaves as zeros (inside a jitted call: never computed)."""
        leaves: list[Any] = list(self.used)
        for i, shape, dtype in self.unused:
            leaves.insert(i, jnp.zeros(shape, dtype))
        return self.treedef.unflatten(leaves)


def _zeroable(dtype: Any) -> bool:
    """An unused leaf of this dtype can stand as zeros (not, e.g., a PRNG key)."""
    return bool(jnp.issubdtype(dtype, jnp.number) or dtype == jnp.bool_)


def used_leaves(fn: Callable, networks: Any, *args: Any) -> tuple[bool, ...]:
    """Which leaves of `networks` fn(networks, *args) reads (backward liveness over its jaxpr;
    an equation whose outputs are dead and that has no effects reads nothing)."""
    jaxpr = jax.make_jaxpr(fn)(networks, *args).jaxpr
    live = {v for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in reversed(jaxpr.eqns):
        if eqn.effects or any(v in live for v in eqn.outvars):
            live.update(v for v in eqn.invars if isinstance(v, Var))
    return tuple(v in live for v in jaxpr.invars[:len(jax.tree.leaves(networks))])
