"""Delayed updates (`sebulba.optim.every_nth`): the inner Adam's step on every n-th call, exactly
as Adam alone would take it; zero updates and the inner state untouched on the others."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from sebulba.optim import every_nth


def gradients(i):
    return {"w": jnp.array([1.0, -2.0]) * (i + 1), "b": jnp.array(0.5 - i)}


def test_applies_adam_on_every_third_step_and_skips_the_rest():
    params = {"w": jnp.zeros(2), "b": jnp.zeros(())}
    adam = optax.adam(0.1)
    delayed = every_nth(adam, 3)
    state, reference_state = delayed.init(params), adam.init(params)
    for i in range(7):
        before = state.inner_state
        updates, state = delayed.update(gradients(i), state, params)
        if i % 3 == 0:  # steps 0, 3, 6: Adam's own update for the same gradients (its i // 3-th step)
            expected, reference_state = adam.update(gradients(i), reference_state, params)
            # (to an ulp: lax.cond's branch compiles apart from the eager reference)
            jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), updates, expected)
            jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), state.inner_state, reference_state)
        else:
            jax.tree.map(lambda u: np.testing.assert_array_equal(u, 0.0), updates)
            jax.tree.map(np.testing.assert_array_equal, state.inner_state, before)
    assert int(state.inner_state[0].count) == 3  # Adam counted 3 steps in 7 calls


def test_under_jit_and_within_a_partition():
    """The critic learns every step, the actor every 2nd, each with its own Adam (optax.partition
    by a prefix tree of labels, as the agents' optimizers are built)."""
    params = {"actor": jnp.ones(2), "critic": jnp.ones(2)}
    tx = optax.partition({"actor": every_nth(optax.adam(0.1), 2), "critic": optax.adam(0.2)},
                         {"actor": "actor", "critic": "critic"})
    state = tx.init(params)
    step = jax.jit(tx.update)
    grads = {"actor": jnp.ones(2), "critic": jnp.ones(2)}
    moved = []
    for _ in range(4):
        updates, state = step(grads, state, params)
        moved.append((bool(jnp.any(updates["actor"] != 0)), bool(jnp.any(updates["critic"] != 0))))
    assert moved == [(True, True), (False, True), (True, True), (False, True)]
    np.testing.assert_allclose(updates["critic"], -0.2, rtol=1e-5)  # Adam's first steps: -lr * sign(g)


def test_period_one_is_the_inner_transformation_and_bad_periods_are_refused():
    adam = optax.adam(0.1)
    assert every_nth(adam, 1) is adam
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match=f"every_nth takes a period n >= 1, got {bad!r}"):
            every_nth(adam, bad)
