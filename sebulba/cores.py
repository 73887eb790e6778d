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
including mid-rollout. `unroll` is that step under `jax.lax.scan` (`RecurrentCore.unroll` with
the cell's input layers run on the whole sequence first), so the learner's states equal the
actors' up to float rounding (R2D2's `unroll` in agents/r2d2/networks.py does the same for its own
network).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
from flax.linen.recurrent import DenseParams
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


class _CellParams(nn.Module):
    """A cell's parameters under Flax's own names, shapes and initialisers (`nn.GRUCell`'s ir, iz,
    in, hr, hz, hn; `nn.OptimizedLSTMCell`'s ii, if, ig, io, hi, hf, hg, ho), so that its
    checkpoints and initial values are theirs, as that cell multiplies with them: the GRU's per
    gate (input kernels and biases, recurrent kernels, hn's bias), the LSTM's concatenated over its
    four gates (input kernel, no bias; recurrent kernel and bias)."""

    kind: str
    size: int

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple:
        h = jnp.zeros((1, self.size), x.dtype)
        init_i, init_h = nn.initializers.lecun_normal(), nn.initializers.orthogonal()  # Flax's cells' defaults
        if self.kind == "gru":  # the input layers carry the biases, and hn its own (inside r * (.))
            i = [DenseParams(self.size, True, kernel_init=init_i, name=f"i{g}")(x) for g in "rzn"]
            hh = [DenseParams(self.size, g == "n", kernel_init=init_h, name=f"h{g}")(h) for g in "rzn"]
            return [k for k, _ in i], [b for _, b in i], [k for k, _ in hh], hh[2][1]
        i = [DenseParams(self.size, False, kernel_init=init_i, name=f"i{g}")(x) for g in "ifgo"]
        hh = [DenseParams(self.size, True, kernel_init=init_h, name=f"h{g}")(h) for g in "ifgo"]
        return (jnp.concatenate([k for k, _ in i], -1), None, jnp.concatenate([k for k, _ in hh], -1),
                jnp.concatenate([b for _, b in hh], -1))


def _project(kind: str, params: tuple, x: jax.Array) -> PyTree:
    """The cell's input layers on x [N, F]: the GRU's three gates' (each with its bias), the LSTM's
    four at once (no bias: Flax's optimised LSTM puts it in the recurrent layer)."""
    wi, bi, _, _ = params
    return tuple(x @ w + b for w, b in zip(wi, bi)) if kind == "gru" else x @ wi


def _recur(kind: str, params: tuple, state: PyTree, xp: PyTree) -> tuple[PyTree, jax.Array]:
    """One step of the cell from its input layers' output `xp` (`_project`'s): the arithmetic of
    Flax's `nn.GRUCell` / `nn.OptimizedLSTMCell`, in their order, so the results are theirs bit
    for bit."""
    _, _, wh, bh = params
    if kind == "gru":
        (xr, xz, xn), (whr, whz, whn) = xp, wh
        r, z = jax.nn.sigmoid(xr + state @ whr), jax.nn.sigmoid(xz + state @ whz)
        n = jnp.tanh(xn + r * (state @ whn + bh))
        h = (1.0 - z) * n + z * state
        return h, h
    c, h = state
    i, f, g, o = jnp.split(h @ wh + bh + xp, 4, -1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return LSTMState(c, h), h


class RecurrentCore(nn.Module):
    """One step of a recurrent core over a batch, or (`unroll`) a sequence; see the module's
    docstring. The cell is Flax's GRU / optimised LSTM (their parameters, their arithmetic, their
    results bit for bit), but along a sequence its input layers run on every step at once before
    the scan, so that each step of the scan holds only the recurrent matmuls and the gates (a GRU
    128's forward and backward over 128 steps on a CPU: 1.3x faster than Flax's cell under
    `lax.scan` at 1 to 4 rows, 1.2x at 16; the learner re-unrolls every minibatch this way).

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

    def _step(self, params: tuple, state: PyTree, xp: PyTree, first: jax.Array) -> tuple[PyTree, jax.Array]:
        state = reset_where(first, state, self.initial_state(first.shape[0]))
        return _recur(self.kind, params, state, xp)

    @nn.compact
    def __call__(self, state: PyTree, x: jax.Array, first: jax.Array,
                 sequence: bool = False) -> tuple[PyTree, jax.Array]:
        """x [B, F], first bool [B] -> (state, y [B, size]); rows with `first` start from the initial
        state. With `sequence`, x [T, B, F] and first [T, B] -> (final state, ys [T, B, size]). For
        "none": (state, x) unchanged."""
        if self.kind == "none":
            return state, x
        params = _CellParams(self.kind, self.size, name=self.kind)(x)
        if not sequence:
            return self._step(params, state, _project(self.kind, params, x), first)
        rows = _project(self.kind, params, x.reshape(-1, x.shape[-1]))  # the input layers on all T x B rows
        xps = jax.tree.map(lambda y: y.reshape(*x.shape[:2], -1), rows)
        return jax.lax.scan(lambda s, inputs: self._step(params, s, *inputs), state, (xps, first))

    def unroll(self, state: PyTree, xs: jax.Array, firsts: jax.Array) -> tuple[PyTree, jax.Array]:
        """The step along a sequence, for use inside a parent module (the same parameters as the
        step's): xs [T, B, F], firsts bool [T, B] -> (final state, ys [T, B, size])."""
        return self(state, xs, firsts, sequence=True)


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
