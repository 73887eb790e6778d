"""MuZero's categorical heads (sebulba/agents/muzero/support.py): two-hot vectors by hand and
against a plain numpy reference, expectations that invert them, the losses, and the networks
with categorical heads (their scalars are the heads' expectations; the search reads those)."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("mctx", reason="the planning extra is not installed: pip install -e '.[planning]'")

from sebulba.agents.muzero import support  # noqa: E402
from sebulba.agents.muzero.config import MuZeroConfig  # noqa: E402
from sebulba.agents.muzero.networks import MuZeroNet, make_network, unroll  # noqa: E402


def two_hot_reference(x: float, s: int) -> np.ndarray:
    """Plainly: clip, then split the unit mass between the two neighbouring integers."""
    x = min(max(float(x), -s), s)
    out = np.zeros(2 * s + 1)
    low = int(np.floor(x))
    if low == s:
        out[2 * s] = 1.0
    else:
        out[low + s] = (low + 1) - x
        out[low + s + 1] = x - low
    return out


def test_two_hot_by_hand():
    np.testing.assert_allclose(support.two_hot(jnp.array(1.25), 2), [0, 0, 0, 0.75, 0.25])
    np.testing.assert_allclose(support.two_hot(jnp.array(-0.5), 2), [0, 0.5, 0.5, 0, 0])
    np.testing.assert_allclose(support.two_hot(jnp.array(2.0), 2), [0, 0, 0, 0, 1])  # the top atom
    np.testing.assert_allclose(support.two_hot(jnp.array(-7.0), 2), [1, 0, 0, 0, 0])  # clipped to -S
    np.testing.assert_allclose(support.two_hot(jnp.array(9.0), 2), [0, 0, 0, 0, 1])  # and to S
    np.testing.assert_allclose(support.atoms(2), [-2, -1, 0, 1, 2])
    assert support.head_width(0) == 1 and support.head_width(300) == 601


def test_two_hot_matches_the_reference_and_its_expectation_is_the_clipped_value():
    rng = np.random.default_rng(0)
    s = 5
    x = rng.uniform(-8, 8, (64,)).astype(np.float32)
    got = np.asarray(support.two_hot(jnp.asarray(x), s))
    want = np.stack([two_hot_reference(v, s) for v in x])
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(got @ np.arange(-s, s + 1), np.clip(x, -s, s), atol=1e-5)
    # read() of logits whose softmax is the two-hot vector gives the value back
    logits = jnp.log(jnp.maximum(jnp.asarray(got), 1e-30))
    np.testing.assert_allclose(support.read(logits, s), np.clip(x, -s, s), atol=1e-4)


def test_the_losses_are_cross_entropy_and_squared_error():
    s = 2
    out = jnp.array([[0.1, -0.3, 0.7, 0.2, -1.0]])
    target = jnp.array([0.4])
    p = np.exp(np.asarray(out[0])) / np.exp(np.asarray(out[0])).sum()
    want = -(0.6 * np.log(p[2]) + 0.4 * np.log(p[3]))  # 0.4: 0.6 on atom 0, 0.4 on atom 1
    np.testing.assert_allclose(support.loss(out, target, s), [want], rtol=1e-5)
    np.testing.assert_allclose(support.read(out, s), [p @ np.arange(-2, 3)], rtol=1e-5)
    # S = 0: the scalar head, its one output read as is and learned by squared error
    scalar = jnp.array([[1.5]])
    np.testing.assert_allclose(support.read(scalar, 0), [1.5])
    np.testing.assert_allclose(support.loss(scalar, jnp.array([0.5]), 0), [1.0])


def test_categorical_heads_unroll_and_read_as_their_expectations():
    space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    s, a, b, k = 6, 3, 5, 4
    net = make_network(space, a, latent_size=8, hidden_sizes=(16,), support_size=s)
    params = net.init(jax.random.key(0), jnp.zeros((1, 4)), jnp.zeros(1, jnp.int32))
    rng = np.random.default_rng(1)
    obs = jnp.asarray(rng.uniform(-1, 1, (b, 4)), jnp.float32)
    actions = jnp.asarray(rng.integers(0, a, (b, k)), jnp.int32)
    out = unroll(net, params, obs, actions)
    assert out.value_out.shape == (b, k + 1, 2 * s + 1) and out.reward_out.shape == (b, k, 2 * s + 1)
    np.testing.assert_allclose(out.values, support.read(out.value_out, s), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.rewards, support.read(out.reward_out, s), rtol=1e-5, atol=1e-6)
    latent = net.apply(params, obs, method=MuZeroNet.represent)
    _, reward = net.apply(params, latent, actions[:, 0], method=MuZeroNet.dynamics)  # what the search reads
    np.testing.assert_allclose(out.rewards[:, 0], reward, rtol=1e-5, atol=1e-6)


def test_support_size_is_checked():
    with pytest.raises(ValueError, match="support_size must be >= 0, got -1"):
        MuZeroConfig(support_size=-1)
