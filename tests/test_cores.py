"""The recurrent cores (sebulba/cores.py): the step resets exactly at `first`, the scan is the step
applied T times, the cells match a plain numpy LSTM/GRU, and "none" is the identity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba.cores import CORES, LSTMState, RecurrentCore, check_core, unroll

T, B, F, SIZE = 7, 3, 5, 4
RECURRENT = ("lstm", "gru")


def setup(kind, seed=0):
    """The core, its parameters (biases made non-zero so the references check them too), a
    non-zero starting state (so a reset to zeros shows) and a sequence xs [T, B, F]."""
    core = RecurrentCore(kind, SIZE)
    rng = np.random.default_rng(seed)
    params = core.init(jax.random.key(seed), core.initial_state(B), jnp.zeros((B, F)), jnp.zeros(B, bool))
    params = jax.tree.map(lambda p: p + 0.3 * rng.standard_normal(p.shape).astype(np.float32), params)
    state = jax.tree.map(lambda z: jnp.asarray(rng.standard_normal(z.shape), jnp.float32), core.initial_state(B))
    xs = jnp.asarray(rng.standard_normal((T, B, F)), jnp.float32)
    return core, params, state, xs


def episode_starts():
    """firsts [T, B]: row 0 restarts at t = 3, row 1 at t = 0 and t = 5, row 2 never."""
    firsts = np.zeros((T, B), bool)
    firsts[3, 0] = firsts[0, 1] = firsts[5, 1] = True
    return jnp.asarray(firsts)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_step(kind, p, state, x):
    """One step of a plain LSTM / GRU from Flax's parameter names (float64)."""
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), p["params"][kind])
    dense = lambda name, v: v @ p[name]["kernel"] + p[name].get("bias", 0.0)  # noqa: E731
    if kind == "lstm":
        c, h = state
        i, f, o = (sigmoid(dense(f"i{g}", x) + dense(f"h{g}", h)) for g in "ifo")
        g = np.tanh(dense("ig", x) + dense("hg", h))
        c = f * c + i * g
        h = o * np.tanh(c)
        return (c, h), h
    h = state
    r, z = (sigmoid(dense(f"i{g}", x) + dense(f"h{g}", h)) for g in "rz")
    n = np.tanh(dense("in", x) + r * dense("hn", h))
    h = (1 - z) * n + z * h
    return h, h


def numpy_unroll(kind, params, state, xs, firsts):
    """The reference: a Python loop over time that zeroes the reset rows' state by hand."""
    state = jax.tree.map(lambda s: np.asarray(s, np.float64), tuple(state) if kind == "lstm" else state)
    ys = []
    for x, first in zip(np.asarray(xs, np.float64), np.asarray(firsts)):
        state = jax.tree.map(lambda s: np.where(first[:, None], 0.0, s), state)
        state, y = numpy_step(kind, params, state, x)
        ys.append(y)
    return state, np.stack(ys)


@pytest.mark.parametrize("kind", RECURRENT)
def test_unroll_is_the_step_applied_t_times(kind):
    core, params, state, xs = setup(kind)
    firsts = episode_starts()
    final, ys = jax.jit(lambda s, x, f: unroll(core.apply, params, s, x, f))(state, xs, firsts)
    step = jax.jit(core.apply)
    loop_state, loop_ys = state, []
    for t in range(T):
        loop_state, y = step(params, loop_state, xs[t], firsts[t])
        loop_ys.append(y)
    assert ys.shape == (T, B, SIZE)
    np.testing.assert_array_equal(ys, np.stack(loop_ys))
    jax.tree.map(np.testing.assert_array_equal, final, loop_state)
    # The method (nn.scan, for a parent module) is the same unroll with the same parameters.
    method_final, method_ys = jax.jit(lambda s, x, f: core.apply(params, s, x, f, method="unroll"))(state, xs, firsts)
    np.testing.assert_allclose(method_ys, ys, rtol=1e-6, atol=1e-6)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6), method_final, final)


@pytest.mark.parametrize("kind", RECURRENT)
def test_unroll_matches_a_numpy_reference_with_resets(kind):
    core, params, state, xs = setup(kind, seed=1)
    firsts = episode_starts()
    final, ys = jax.jit(lambda s, x, f: unroll(core.apply, params, s, x, f))(state, xs, firsts)
    ref_final, ref_ys = numpy_unroll(kind, params, state, xs, firsts)
    np.testing.assert_allclose(ys, ref_ys, rtol=1e-5, atol=1e-5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5),
                 tuple(final) if kind == "lstm" else final, ref_final)
    # The reset matters here: without it the reference differs on the reset rows.
    _, no_reset = numpy_unroll(kind, params, state, xs, jnp.zeros((T, B), bool))
    assert np.abs(no_reset[:, :2] - ref_ys[:, :2]).max() > 1e-3


@pytest.mark.parametrize("kind", RECURRENT)
def test_a_first_mid_sequence_restarts_that_row_only(kind):
    core, params, state, xs = setup(kind, seed=2)
    run = jax.jit(lambda s, x, f: unroll(core.apply, params, s, x, f))
    firsts = np.zeros((T, B), bool)
    firsts[3, 0] = True
    _, ys = run(state, xs, jnp.asarray(firsts))
    _, fresh = run(core.initial_state(B), xs[3:], jnp.zeros((T - 3, B), bool))
    _, continued = run(state, xs, jnp.zeros((T, B), bool))
    np.testing.assert_allclose(ys[3:, 0], fresh[:, 0], rtol=1e-6, atol=1e-6)  # row 0 starts over at t = 3
    np.testing.assert_array_equal(ys[:3], continued[:3])  # nothing changes before the reset
    np.testing.assert_array_equal(ys[:, 1:], continued[:, 1:])  # the other rows never see it
    assert np.abs(continued[3:, 0] - fresh[:, 0]).max() > 1e-3  # without the reset row 0 would differ


@pytest.mark.parametrize("kind", RECURRENT)
@pytest.mark.parametrize("features, size, batch", [(F, SIZE, B), (128, 128, 4)])
def test_the_step_is_flaxs_cell_bit_for_bit_on_flaxs_parameters(kind, features, size, batch):
    """The core keeps Flax's parameters (names, shapes, initial values: a Flax cell applies the
    core's own) and its arithmetic: a step is `nn.GRUCell` / `nn.OptimizedLSTMCell`'s, to the bit.
    Along a sequence the input layers run on all T x B rows at once, which may round a last bit
    apart from the step's B rows (the tests above hold the unroll to 1e-6)."""
    import flax.linen as nn

    core = RecurrentCore(kind, size)
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.standard_normal((batch, features)), jnp.float32)
    params = core.init(jax.random.key(0), core.initial_state(batch), x, jnp.zeros(batch, bool))
    state = jax.tree.map(lambda z: jnp.asarray(rng.standard_normal(z.shape), jnp.float32), core.initial_state(batch))
    cell = nn.GRUCell(size) if kind == "gru" else nn.OptimizedLSTMCell(size)
    reference = cell.init(jax.random.key(0), tuple(state) if kind == "lstm" else state, x)["params"]
    assert jax.tree.map(jnp.shape, reference) == jax.tree.map(jnp.shape, params["params"][kind])

    class FlaxCellInside(nn.Module):  # the core as it was: Flax's cell under the same name
        @nn.compact
        def __call__(self, s, v):
            return (nn.GRUCell(size, name="gru") if kind == "gru" else nn.OptimizedLSTMCell(size, name="lstm"))(s, v)

    old = FlaxCellInside().init(jax.random.key(0), tuple(state) if kind == "lstm" else state, x)
    jax.tree.map(np.testing.assert_array_equal, old, params)  # the same initial values from the same key
    new_state, y = jax.jit(core.apply)(params, state, x, jnp.zeros(batch, bool))
    carry = tuple(state) if kind == "lstm" else state
    flax_state, flax_y = jax.jit(cell.apply)({"params": params["params"][kind]}, carry, x)
    np.testing.assert_array_equal(y, flax_y)
    jax.tree.map(np.testing.assert_array_equal, tuple(new_state) if kind == "lstm" else new_state, flax_state)


def test_initial_state_shapes():
    assert RecurrentCore("none", 8).initial_state(B) == ()
    lstm = RecurrentCore("lstm", 8).initial_state(B)
    assert isinstance(lstm, LSTMState) and lstm.c.shape == lstm.h.shape == (B, 8)
    assert not np.any(lstm.c) and not np.any(lstm.h)
    gru = RecurrentCore("gru", 8).initial_state(B)
    assert gru.shape == (B, 8) and gru.dtype == jnp.float32 and not np.any(gru)


def test_none_is_the_identity_with_an_empty_state():
    core = RecurrentCore("none", 1)
    xs = jnp.arange(T * B * F, dtype=jnp.float32).reshape(T, B, F)
    params = core.init(jax.random.key(0), (), xs[0], jnp.zeros(B, bool))
    assert jax.tree.leaves(params) == []
    x = xs[0]
    state, y = core.apply(params, (), x, jnp.ones(B, bool))
    assert state == () and y is x
    state, ys = unroll(core.apply, params, (), xs, episode_starts())
    assert state == ()
    np.testing.assert_array_equal(ys, xs)


@pytest.mark.parametrize("kind, size, message", [
    ("transformer", 8, "unknown core 'transformer': the cores are none, lstm, gru"),
    ("LSTM", 8, "unknown core 'LSTM': the cores are none, lstm, gru"),
    ("lstm", 0, "core size must be an integer >= 1, got 0"),
    ("gru", -3, "core size must be an integer >= 1, got -3"),
    ("gru", 2.5, "core size must be an integer >= 1, got 2.5"),
])
def test_bad_kind_or_size_is_refused(kind, size, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        check_core(kind, size)
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        RecurrentCore(kind, size)


def test_valid_kinds_pass():
    assert CORES == ("none", "lstm", "gru")
    for kind in CORES:
        check_core(kind, 1)
