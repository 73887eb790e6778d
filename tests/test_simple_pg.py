"""SimplePolicyGradient's return computation against hand-computed numbers."""

import jax
import jax.numpy as jnp
import numpy as np

from sebulba.agents.simple_pg import returns_to_go


def test_returns_to_go_by_hand():
    # env steps 0..4: the episode terminates at step 2, step 3 is a reset, the trajectory is cut at 4.
    reward = jnp.array([0.0, 1.0, 1.0, 1.0, 1.0])
    value = jnp.array([10.0, 20.0, 30.0, 40.0, 50.0])
    terminated = jnp.array([False, False, True, False, False])
    cut = jnp.array([False, False, False, False, True])
    g = returns_to_go(reward, value, terminated, cut, 0.5)
    # G3 = 1 + 0.5 * V4 = 26; G2 = 0 (terminal); G1 = 1 + 0.5 * 0 = 1; G0 = 1 + 0.5 * 1 = 1.5
    np.testing.assert_allclose(np.asarray(g), [1.5, 1.0, 0.0, 26.0])


def test_truncation_bootstraps_with_the_value():
    reward = jnp.array([0.0, 1.0, 1.0, 0.0])
    value = jnp.array([0.0, 0.0, 8.0, 100.0])
    terminated = jnp.zeros(4, bool)
    cut = jnp.array([False, False, True, True])  # truncated at step 2, reset at 3
    g = jax.jit(returns_to_go, static_argnums=4)(reward, value, terminated, cut, 0.5)
    # G2 = V2 = 8 (truncated, not the next episode's 100); G1 = 1 + 0.5 * 8 = 5; G0 = 1 + 2.5 = 3.5
    np.testing.assert_allclose(np.asarray(g), [3.5, 5.0, 8.0])
