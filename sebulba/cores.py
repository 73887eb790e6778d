"""Recurrent cores (issue 53): the memory that sits between an agent's torso and its heads.

A core maps features [B, F] to features [B, size] while carrying a state from one step to the
next: an LSTM (Flax's `nn.OptimizedLSTMCell`, state `LSTMState(c, h)`), a GRU (`nn.GRUCell`,
state `h`), or "none" (the identity, state `()`, so that an agent without memory takes the same
code path at no cost).

Where the state belongs. The actors carry it in the agent's step state and the learner
re-unrolls it, from the state recorded at the trajectory's first step, over the whole rollout
(truncated BPTT). Both must see the same states for the same networks, so the episode
boundary is handled inside the step, the one function both use: a row whose `first` flag is
set (its env was just reset, see `EnvStep`) starts from the initial state *before* the step,
including mid-rollout. `unroll` is nothing but that step under `jax.lax.scan`, so the learner's
states equal the actors' by construction (R2D2's `unroll` in agents/r2d2/networks.py does the
same for its own network).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from sebulba.types import PyTree

CORES = ("none", "lstm", "gru")


class LSTMState(NamedTuple):
    """The LSTM's state, in the order of Flax's carry: cell `c`, then hidden `h` (the output)."""

    c: jax.Array  # [B, size]
    h: jax.Array  # [B, size]


def check_core(kind: str, size: int) -> None:
    """Raise a ValueError naming the valid kinds for an unknown `kind`, or for a `size` below 1
    (a core with no units would silently cut the heads off the torso)."""
    if kind not in CORES:
        raise ValueError(f"unknown core {kind!r}: the cores are {', '.join(CORES)}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"core size must be an integer >= 1, got {size!r} (for core {kind!r})")


def reset_where(first: jax.Array, state: PyTree, initial: PyTree) -> PyTree:
    """`state` with the rows where `first` [B] is True replaced by `initial`'s, leaf by leaf
    (every leaf has the batch as its leading axis)."""
    return jax.tree.map(lambda i, s: jnp.where(first.reshape(-1, *(1,) * (s.ndim - 1)), i, s), initial, state)


class RecurrentCore(nn.Module):
    """One step of a recurrent core over a batch; see the module's docstring.

    `initial_state(batch)` needs no parameters, so it can be called on the unbound module (as
    the actors' `init_step_state` will): `RecurrentCore("gru", 64).initial_state(8)`.
    """

    kind: str
    size: int

    def __post_init__(self):
        check_core(self.kind, self.size)
        super().__post_init__()

    def initial_state(self, batch: int) -> PyTree:
        """The state an episode starts from: zeros, [batch, size] per leaf; `()` for "none"."""
        zeros = jnp.zeros((batch, self.size), jnp.float32)
        if self.kind == "lstm":
            return LSTMState(zeros, zeros)
        if self.kind == "gru":
            return zeros
        return ()

    @nn.compact
    def __call__(self, state: PyTree, x: jax.Array, first: jax.Array) -> tuple[PyTree, jax.Array]:
        """x [B, F], first bool [B] -> (state, y [B, size]); rows with `first` start from the initial
        state. For "none": (state, x) unchanged."""
        if self.kind == "none":
            return state, x
        state = reset_where(first, state, self.initial_state(x.shape[0]))
        if self.kind == "lstm":
            (c, h), y = nn.OptimizedLSTMCell(self.size, name="lstm")(tuple(state), x)
            return LSTMState(c, h), y
        return nn.GRUCell(self.size, name="gru")(state, x)

    def unroll(self, state: PyTree, xs: jax.Array, firsts: jax.Array) -> tuple[PyTree, jax.Array]:
        """The step along a sequence, for use inside a parent module (parameters shared over time):
        xs [T, B, F], firsts bool [T, B] -> (final state, ys [T, B, size])."""
        scan = nn.scan(lambda core, s, inputs: core(s, *inputs), variable_broadcast="params",
                       split_rngs={"params": False})
        return scan(self, state, (xs, firsts))


CoreApply = Callable[[Any, PyTree, jax.Array, jax.Array], tuple[PyTree, jax.Array]]


def unroll(core_apply: CoreApply, params, state: PyTree, xs: jax.Array, firsts: jax.Array) -> tuple[PyTree, jax.Array]:
    """`core_apply(params, state, x, first) -> (state, y)` (e.g. `RecurrentCore(...).apply`) along
    a sequence under `jax.lax.scan`, resets included: xs [T, B, F], firsts bool [T, B] ->
    (final state, ys [T, B, size]). The learner re-unrolls from the trajectory's first state with it."""

    def body(state, inputs):
        x, first = inputs
        return core_apply(params, state, x, first)

    return jax.lax.scan(body, state, (xs, firsts))


def initial_states(kind: str, size: int, batch: int, cores: int = 1) -> PyTree:
    """The state an episode starts from for `cores` cores of a network (see `through_cores`):
    one core's state, or a tuple of one per core; `()` for "none"."""
    if kind == "none":
        return ()
    state = RecurrentCore(kind, size, parent=None).initial_state(batch)
    return state if cores == 1 else (state,) * cores


def through_cores(kind: str, size: int, state: PyTree, features: tuple[jax.Array, ...], first: jax.Array | None,
                  sequence: tuple[int, int] | None = None,
                  names: tuple[str, ...] = ("core", "value_core")) -> tuple[PyTree, tuple[jax.Array, ...]]:
    """Inside a parent module's compact method: each of `features` (one per torso, [N, F]) through
    a core of its own (named by `names`), from `state` (one core's state, or a tuple of one per
    core, as `initial_states` builds it). One step of a batch ([N] = [B] rows, `first` [B]), or with
    `sequence = (T, B)` the rows of a [T, B] sequence in time-major order (`first` [T, B]), each core
    unrolled over it. Returns (state, outputs [N, size] per torso); "none" returns both unchanged."""
    if kind == "none":
        return state, features
    several = len(features) > 1
    states, outs = [], []
    for name, s, x in zip(names, state if several else (state,), features):
        core = RecurrentCore(kind, size, name=name)
        if sequence is None:
            s, y = core(s, x, first)
        else:
            s, y = core.unroll(s, x.reshape(*sequence, -1), first)
            y = y.reshape(-1, y.shape[-1])
        states.append(s)
        outs.append(y)
    return (tuple(states) if several else states[0]), tuple(outs)
