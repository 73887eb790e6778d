"""MuZero's networks (sebulba/agents/muzero/networks.py): the unroll is h, then g and f step by
step; latents stay in [0, 1]; the dynamics' gradient is halved per step; the search expands the
same functions, values and rewards read back through h^-1."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("mctx", reason="the planning extra is not installed: pip install -e '.[planning]'")

from sebulba.agents.muzero.networks import (  # noqa: E402
    MuZeroNet, make_network, min_max_scale, recurrent_fn, rescale, root, scale_gradient, unroll,
)
from sebulba.agents.r2d2.returns import signed_parabolic  # noqa: E402
from sebulba.search import SearchConfig, search  # noqa: E402

SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
A, B, K = 3, 5, 4


def net_and_params(seed=0):
    net = make_network(SPACE, A, latent_size=8, hidden_sizes=(16,))
    params = net.init(jax.random.key(seed), jnp.zeros((1, 4)), jnp.zeros(1, jnp.int32))
    return net, params


def test_unroll_is_h_then_g_and_f_step_by_step():
    net, params = net_and_params()
    rng = np.random.default_rng(0)
    obs = jnp.asarray(rng.uniform(-1, 1, (B, 4)), jnp.float32)
    actions = jnp.asarray(rng.integers(0, A, (B, K)), jnp.int32)
    out = jax.jit(lambda p, o, a: unroll(net, p, o, a))(params, obs, actions)
    assert out.policy_logits.shape == (B, K + 1, A) and out.values.shape == (B, K + 1) and out.rewards.shape == (B, K)
    latent = net.apply(params, obs, method=MuZeroNet.represent)
    for k in range(K + 1):
        pred = net.apply(params, latent, method=MuZeroNet.predict)
        np.testing.assert_allclose(out.policy_logits[:, k], pred.policy_logits, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out.values[:, k], pred.value, rtol=1e-5, atol=1e-6)
        assert float(latent.min()) >= 0.0 and float(latent.max()) <= 1.0 + 1e-6  # every latent in [0, 1]
        if k < K:
            latent, reward = net.apply(params, latent, actions[:, k], method=MuZeroNet.dynamics)
            np.testing.assert_allclose(out.rewards[:, k], reward, rtol=1e-5, atol=1e-6)


def test_min_max_scale_and_scale_gradient():
    x = jnp.array([[2.0, 4.0, 3.0], [-1.0, -1.0, -1.0]])
    np.testing.assert_allclose(min_max_scale(x), [[0.0, 1.0, 0.5], [0.0, 0.0, 0.0]])
    grad = jax.grad(lambda v: jnp.sum(scale_gradient(v, 0.5) ** 2))(jnp.array([3.0]))
    np.testing.assert_allclose(grad, [3.0])  # d/dv v^2 = 6, halved
    np.testing.assert_allclose(scale_gradient(jnp.array([3.0]), 0.5), [3.0])


def test_the_dynamics_gradient_is_halved_at_each_step():
    """A loss on the last step's value: the gradient reaching the representation's output passes
    K dynamics steps, each halving it (the unroll with scale 1 gives 2^K times as much)."""
    net, params = net_and_params(1)
    obs = jnp.ones((2, 4)) * 0.3
    actions = jnp.zeros((2, 2), jnp.int32)

    def grad_to_h(scale):
        def loss(p):
            return jnp.sum(unroll(net, p, obs, actions, dynamics_gradient_scale=scale).values[:, -1])

        return jax.grad(loss)(params)["params"]["to_latent"]["kernel"]

    np.testing.assert_allclose(grad_to_h(0.5) * 4, grad_to_h(1.0), rtol=1e-4, atol=1e-6)


def test_the_search_expands_the_same_functions():
    net, params = net_and_params(2)
    obs = jnp.asarray(np.random.default_rng(1).uniform(-1, 1, (B, 4)), jnp.float32)
    r = root(net, params, obs)
    pred = net.apply(params, net.apply(params, obs, method=MuZeroNet.represent), method=MuZeroNet.predict)
    np.testing.assert_allclose(r.value, signed_parabolic(pred.value), rtol=1e-5)
    np.testing.assert_allclose(signed_parabolic(rescale(jnp.array([-50.0, 0.0, 3.0, 400.0]))), [-50.0, 0.0, 3.0, 400.0],
                               rtol=1e-4)
    step = recurrent_fn(net, 0.99)
    out, latent = step(params, None, jnp.zeros(B, jnp.int32), r.embedding)
    want_latent, want_reward = net.apply(params, r.embedding, jnp.zeros(B, jnp.int32), method=MuZeroNet.dynamics)
    np.testing.assert_allclose(latent, want_latent, rtol=1e-6)
    np.testing.assert_allclose(out.reward, signed_parabolic(want_reward), rtol=1e-5)
    np.testing.assert_allclose(out.discount, np.full(B, 0.99))
    config = SearchConfig(num_simulations=8, max_num_considered_actions=A)
    s = jax.jit(lambda p, k: search(config, p, k, root(net, p, obs), recurrent_fn(net, 0.99)))(params, jax.random.key(0))
    assert s.action.shape == (B,) and s.policy.shape == (B, A) and s.value.shape == (B,)
    np.testing.assert_allclose(s.policy.sum(-1), np.ones(B), rtol=1e-5)
    assert (np.asarray(s.visit_counts).sum(-1) == 8).all()
