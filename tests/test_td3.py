"""TD3's pure parts: target policy smoothing and exploration noise (by hand and against numpy), the
target and the loss terms' assembly against a numpy reference of CleanRL's update, where each
term's gradient goes, the delayed actor and targets, the config's checks, the networks' shapes
(Box and Dict observations) and bounds."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba import observations
from sebulba.agents.td3 import TD3Config, exploration_action, follow_targets, make_networks, make_optimizer, td3_loss
from sebulba.agents.td3.losses import actor_loss, smoothed_target_action, td3_target, td3_terms
from sebulba.target_networks import TargetNetworks, polyak
from tests.support.continuous_control import ACTIONS_2D, DICT_OBS, OBS, PENDULUM_ACTIONS, batch_of

SMALL = TD3Config(hidden_sizes=(16, 16))
LOW, HIGH = jnp.array([-2.0, 0.0]), jnp.array([2.0, 1.0])  # ACTIONS_2D's; scale (2, 0.5)


def networks_for(config=SMALL, obs_space=OBS, action_space=ACTIONS_2D):
    nets = make_networks(obs_space, action_space, config)
    sample = observations.zeros(obs_space)
    online, target = nets.init(jax.random.key(0), sample), nets.init(jax.random.key(1), sample)
    return nets, TargetNetworks(online, target, jnp.zeros((), jnp.int32))


# ---------------------------------------------------------------- noise
def test_smoothing_noise_against_numpy():
    target_action = jnp.tile(jnp.array([[0.0, 0.5]]), (1000, 1))
    key = jax.random.key(4)
    got = smoothed_target_action(target_action, key, LOW, HIGH, 0.2, 0.5)
    eps = np.asarray(jax.random.normal(key, (1000, 2)))
    expected = np.clip(np.array([0.0, 0.5]) + np.clip(0.2 * eps, -0.5, 0.5) * np.array([2.0, 0.5]), [-2, 0], [2, 1])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_smoothing_noise_clipped_then_the_action_clipped_to_the_bounds_by_hand():
    """policy_noise 1e4: (this seed's) every noise is clipped to +-noise_clip = 0.5 scale, so from 0 the
    first dim (scale 2) lands on -1 or 1, and from 0.9 the second (scale 0.5) on 0.65 or 1.0 (1.15
    clipped to the bound)."""
    got = np.asarray(smoothed_target_action(jnp.tile(jnp.array([[0.0, 0.9]]), (200, 1)), jax.random.key(0),
                                            LOW, HIGH, 1e4, 0.5))
    np.testing.assert_allclose(np.abs(got[:, 0]), 1.0, rtol=1e-6)
    assert np.all(np.isclose(got[:, 1], 0.65) | (got[:, 1] == 1.0))
    assert 0 < np.sum(got[:, 0] > 0) < 200 and 0 < np.sum(got[:, 1] == 1.0) < 200  # both signs of noise


def test_exploration_noise_in_units_of_the_scale_and_within_the_bounds():
    action = jnp.tile(jnp.array([[1.9, 0.5]]), (20_000, 1))
    key = jax.random.key(1)
    got = np.asarray(exploration_action(action, key, LOW, HIGH, 0.1))
    eps = np.asarray(jax.random.normal(key, (20_000, 2)))
    np.testing.assert_allclose(got, np.clip([1.9, 0.5] + 0.1 * np.array([2.0, 0.5]) * eps, [-2, 0], [2, 1]),
                               rtol=1e-6, atol=1e-7)
    assert np.all((got >= [-2, 0]) & (got <= [2, 1]))
    assert np.std(got[:, 1]) == pytest.approx(0.05, rel=0.03)  # 0.1 x scale 0.5, never clipped from 0.5
    assert np.max(got[:, 0]) == 2.0  # near the bound, clipped onto it


# ---------------------------------------------------------------- target and terms
def test_target_and_actor_loss_by_hand():
    y = td3_target(jnp.array([1.0, 2.0]), jnp.array([0.99, 0.0]), jnp.array([3.0, 5.0]))
    np.testing.assert_allclose(y, [1.0 + 0.99 * 3.0, 2.0], rtol=1e-6)
    np.testing.assert_array_equal(jax.grad(lambda q: td3_target(1.0, 0.99, q))(3.0), 0.0)
    np.testing.assert_array_equal(actor_loss(jnp.array([1.5, -2.0])), [-1.5, 2.0])


def test_terms_match_a_numpy_reference_of_cleanrls_update():
    nets, networks = networks_for()
    batch = batch_of(8)
    key = jax.random.key(5)
    terms = jax.jit(lambda n, b, k: td3_terms(nets, n, b, k, SMALL))(networks, batch, key)

    online, target = networks.online, networks.target
    policy, q_of = jax.jit(nets.policy), jax.jit(nets.q)
    next_a = np.asarray(policy(target.actor, batch.next_obs))  # the TARGET actor, smoothed
    eps = np.asarray(jax.random.normal(key, next_a.shape))
    next_a = np.clip(next_a + np.clip(0.2 * eps, -0.5, 0.5) * np.array([2.0, 0.5]), [-2, 0], [2, 1])
    next_q = np.asarray(q_of(target.critic, batch.next_obs, jnp.asarray(next_a, jnp.float32)), np.float64)
    y = batch.reward + batch.discount * next_q.min(0)
    q = np.asarray(q_of(online.critic, batch.obs, batch.action), np.float64)
    q1_pi = np.asarray(q_of(online.critic, batch.obs, policy(online.actor, batch.obs)), np.float64)[0]  # critic 1

    np.testing.assert_allclose(terms.critic, ((q - y) ** 2).sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(terms.td_abs, np.abs(q - y).mean(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(terms.actor, -q1_pi, rtol=1e-4, atol=1e-5)
    loss, _, _ = jax.jit(lambda n, b, k: td3_loss(nets, n, b, k, SMALL))(networks, batch, key)
    np.testing.assert_allclose(loss, terms.critic + terms.actor, rtol=1e-6)
    # the actor is computed on the steps it learns only (updates % policy_delay == 0): zero between
    assert SMALL.policy_delay == 2
    assert float(terms.metrics["actor_loss"]) == pytest.approx(2 * -q1_pi.mean(), rel=1e-4)
    between = jax.jit(lambda n, b, k: td3_terms(nets, n, b, k, SMALL))(
        networks._replace(updates=networks.updates + 1), batch, key)
    np.testing.assert_array_equal(between.actor, 0.0)
    assert float(between.metrics["actor_loss"]) == 0.0
    np.testing.assert_allclose(between.critic, terms.critic, rtol=1e-6)


def test_each_term_reaches_only_its_own_part_of_the_networks():
    nets, networks = networks_for()
    batch = batch_of(8)

    def grads(term):
        def f(online):
            return jnp.mean(getattr(td3_terms(nets, networks._replace(online=online), batch, jax.random.key(3), SMALL),
                                    term))
        g = jax.jit(jax.grad(f))(networks.online)
        return {part: max(float(jnp.max(jnp.abs(x))) for x in jax.tree.leaves(getattr(g, part)))
                for part in ("actor", "critic")}

    critic, actor = grads("critic"), grads("actor")
    assert critic["critic"] > 0 and critic["actor"] == 0
    assert actor["actor"] > 0 and actor["critic"] == 0


# ---------------------------------------------------------------- delayed actor and targets
def test_actor_and_targets_follow_on_the_same_delayed_steps():
    config = TD3Config(hidden_sizes=(8,), policy_delay=2, tau=0.5)
    nets = make_networks(OBS, ACTIONS_2D, config)
    params = nets.init(jax.random.key(0), observations.zeros(OBS))
    tx = make_optimizer(config)
    state, update = tx.init(params), jax.jit(tx.update)
    grads = jax.tree.map(jnp.ones_like, params)
    networks = TargetNetworks(params, jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jnp.int32))
    for step in range(5):
        updates, state = update(grads, state, networks.online)
        actor_moved = bool(jnp.any(updates.actor["params"]["action"]["bias"] != 0))
        assert bool(jnp.all(updates.critic["params"]["q"]["bias"] != 0))  # the critics every step
        # as the default Agent.optimize: apply, count the step, then update_target
        stepped = networks._replace(updates=networks.updates + 1)
        followed = follow_targets(stepped, config)
        assert actor_moved == (step % 2 == 0)
        expected = polyak(stepped, 0.5).target if actor_moved else networks.target
        jax.tree.map(np.testing.assert_array_equal, followed.target, expected)
        networks = followed


# ---------------------------------------------------------------- config
def test_defaults_are_cleanrls():
    c = TD3Config()
    assert (c.hidden_sizes, c.learning_rate, c.tau, c.policy_noise, c.noise_clip, c.exploration_noise,
            c.policy_delay, c.learning_starts, c.batch_size) == ((256, 256), 3e-4, 0.005, 0.2, 0.5, 0.1, 2, 25_000, 256)


@pytest.mark.parametrize("kwargs, message", [
    ({"torso": "resnet"}, "torso must be one of"),
    ({"hidden_sizes": (0,)}, r"hidden_sizes must be positive ints, got \(0,\)"),
    ({"learning_rate": 0.0}, "learning_rate must be > 0, got 0.0"),
    ({"tau": 0.0}, r"tau must be in \(0, 1\], got 0.0"),
    ({"policy_noise": -0.1}, r"policy_noise must be >= 0 \(in units of the action scale\), got -0.1"),
    ({"noise_clip": -1.0}, r"noise_clip must be >= 0 \(in units of the action scale\), got -1.0"),
    ({"exploration_noise": -0.5}, r"exploration_noise must be >= 0 \(in units of the action scale\), got -0.5"),
    ({"policy_delay": 0}, "policy_delay must be an int >= 1, got 0"),
    ({"policy_delay": 2.0}, "policy_delay must be an int >= 1, got 2.0"),
    ({"learning_starts": -1}, "learning_starts must be >= 0 env steps, got -1"),  # the base's checks run too
])
def test_bad_config_values_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        TD3Config(**kwargs)
    assert "\n" not in str(error.value)


# ---------------------------------------------------------------- networks
@pytest.mark.parametrize("obs_space", [OBS, DICT_OBS], ids=["box", "dict"])
def test_network_shapes(obs_space):
    nets, networks = networks_for(obs_space=obs_space)
    batch = batch_of(5, obs_space)
    assert nets.policy(networks.online.actor, batch.obs).shape == (5, 2)
    assert nets.q(networks.online.critic, batch.obs, batch.action).shape == (2, 5)
    loss, _, td_abs = jax.jit(lambda n, b, k: td3_loss(nets, n, b, k, SMALL))(networks, batch, jax.random.key(0))
    assert loss.shape == td_abs.shape == (5,) and bool(jnp.all(jnp.isfinite(loss)))


def test_actions_within_pendulum_bounds():
    nets = make_networks(OBS, PENDULUM_ACTIONS, SMALL)
    params = nets.init(jax.random.key(0), observations.zeros(OBS))
    obs = jnp.asarray(np.random.default_rng(0).normal(0, 100, (256, 3)), jnp.float32)
    action = nets.policy(params.actor, obs)
    assert action.shape == (256, 1) and bool(jnp.all((action >= -2.0) & (action <= 2.0)))
    assert float(jnp.max(jnp.abs(action))) > 1.0  # the actions span the box, not [-1, 1]
    low, high = nets.bounds
    explored = exploration_action(action, jax.random.key(0), low, high, 0.5)
    assert bool(jnp.all((explored >= -2.0) & (explored <= 2.0)))
