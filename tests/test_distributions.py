"""The tanh-squashed Gaussian (SAC's policy): its log-density against the change of variables in
numpy, that density integrating to 1 and matching where its samples fall, and its bounds."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba.distributions import TanhGaussian, squash


def numpy_log_prob(action, mean, log_std, low, high):
    """Change of variables in float64: u = atanh((a - mid) / half), then
    log p(a) = sum_d [log N(u; mean, std) - log(1 - tanh(u)^2) - log(half)]."""
    action, mean, log_std, low, high = (np.asarray(x, np.float64) for x in (action, mean, log_std, low, high))
    mid, half = (high + low) / 2, (high - low) / 2
    y = (action - mid) / half
    u = np.arctanh(y)
    std = np.exp(log_std)
    normal = -0.5 * ((u - mean) / std) ** 2 - np.log(std) - 0.5 * math.log(2 * math.pi)
    return np.sum(normal - np.log(1 - y ** 2) - np.log(half), axis=-1)


def test_log_prob_is_the_change_of_variables_of_the_gaussian():
    rng = np.random.default_rng(0)
    mean = rng.normal(0, 0.7, (64, 3)).astype(np.float32)
    log_std = rng.uniform(-1.5, 0.0, (64, 3)).astype(np.float32)
    low, high = np.array([-2.0, 0.0, -0.5], np.float32), np.array([2.0, 1.0, 3.0], np.float32)
    action, log_prob = TanhGaussian(mean, log_std, low, high).sample_and_log_prob(jax.random.key(1))
    assert action.shape == (64, 3) and log_prob.shape == (64,)
    np.testing.assert_allclose(log_prob, numpy_log_prob(action, mean, log_std, low, high), rtol=1e-4, atol=2e-3)


def test_one_sample_by_hand():
    """D = 1, mean 0, std 1, bounds [-2, 2]: u = eps, a = 2 tanh(eps), log p = log N(eps) -
    log(1 - tanh(eps)^2) - log 2."""
    eps = float(jax.random.normal(jax.random.key(3), (1,))[0])
    dist = TanhGaussian(jnp.zeros(1), jnp.zeros(1), jnp.array([-2.0]), jnp.array([2.0]))
    action, log_prob = dist.sample_and_log_prob(jax.random.key(3))
    assert float(action[0]) == pytest.approx(2 * math.tanh(eps), rel=1e-5)
    expected = -0.5 * eps ** 2 - 0.5 * math.log(2 * math.pi) - math.log(1 - math.tanh(eps) ** 2) - math.log(2)
    assert float(log_prob) == pytest.approx(expected, rel=1e-5)


def test_density_integrates_to_one_and_matches_where_the_samples_fall():
    """1-D, bounds [-2, 2] (Pendulum's): the density at 200k sorted samples, integrated by the
    trapezoid rule, is ~1, and its running integral is the samples' empirical CDF (a wrong log-det
    term, the tanh's or the scale's, fails one or the other)."""
    n = 200_000
    mean, log_std = jnp.full((n, 1), 0.4), jnp.full((n, 1), 0.3)
    action, log_prob = TanhGaussian(mean, log_std, jnp.array([-2.0]), jnp.array([2.0])).sample_and_log_prob(
        jax.random.key(0))
    order = np.argsort(np.asarray(action[:, 0]))
    a = np.asarray(action[:, 0], np.float64)[order]
    p = np.exp(np.asarray(log_prob, np.float64))[order]
    cdf = np.concatenate([[0.0], np.cumsum((p[1:] + p[:-1]) / 2 * np.diff(a))])
    assert cdf[-1] == pytest.approx(1.0, abs=5e-3)
    empirical = (np.arange(n) + 0.5) / n
    assert np.max(np.abs(cdf - empirical)) < 5e-3


def test_bounds_respected_and_log_prob_finite_far_in_the_tails():
    """Means far outside (tanh(u) rounds to +-1 in float32): actions stay in the bounds, the log
    density stays finite (the naive log(1 - tanh^2) would be -inf), and the mode is the bound."""
    mean = jnp.array([[-30.0], [-5.0], [0.0], [5.0], [30.0]])
    low, high = jnp.array([-2.0]), jnp.array([2.0])
    dist = TanhGaussian(mean, jnp.full_like(mean, 2.0), low, high)
    for seed in range(5):
        action, log_prob = dist.sample_and_log_prob(jax.random.key(seed))
        assert bool(jnp.all((action >= -2.0) & (action <= 2.0)))
        assert bool(jnp.all(jnp.isfinite(log_prob)))
    np.testing.assert_allclose(dist.mode()[:, 0], [-2.0, 2 * math.tanh(-5.0), 0.0, 2 * math.tanh(5.0), 2.0], rtol=1e-6)


def test_gradients_flow_through_the_sample():
    """Reparameterised: d a / d mean = half * (1 - tanh(u)^2), nonzero, as SAC's actor loss needs."""
    low, high = jnp.array([-2.0]), jnp.array([2.0])

    def first_action(mean):
        return TanhGaussian(mean, jnp.full((1, 1), -1.0), low, high).sample_and_log_prob(jax.random.key(2))[0][0, 0]

    mean = jnp.full((1, 1), 0.5)
    u = 0.5 + math.exp(-1.0) * float(jax.random.normal(jax.random.key(2), (1, 1))[0, 0])
    assert float(jax.grad(first_action)(mean)[0, 0]) == pytest.approx(2 * (1 - math.tanh(u) ** 2), rel=1e-5)


def test_squash_maps_onto_the_bounds():
    np.testing.assert_allclose(squash(jnp.array([-50.0, 0.0, 50.0]), jnp.array(-1.0), jnp.array(3.0)), [-1.0, 1.0, 3.0])
