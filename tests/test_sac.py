"""SAC's pure parts: the loss terms by hand, their assembly against a numpy reference of CleanRL's
update, where each term's gradient goes, the config's checks, the networks' shapes (Box and Dict
observations) and bounds, the optimizer's delayed actor and temperature. Also the twin critics
and their loss, shared with TD3 (sebulba.agents.continuous_q)."""

import math

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba import observations
from sebulba.agents.continuous_q import box_bounds, twin_q_loss
from sebulba.agents.sac import SACConfig, make_networks, make_optimizer, sac_loss
from sebulba.agents.sac.losses import actor_loss, sac_terms, soft_q_target, temperature_loss
from sebulba.target_networks import TargetNetworks
from tests.support.continuous_control import ACTIONS_2D, DICT_OBS, OBS, PENDULUM_ACTIONS, batch_of

SMALL = SACConfig(hidden_sizes=(16, 16))


class Jitted:
    """The networks' calls jitted (eager flax is op by op: seconds per test)."""

    def __init__(self, nets):
        self.policy, self.q = jax.jit(nets.policy), jax.jit(nets.q)


def terms_fn(nets, config=SMALL):
    return jax.jit(lambda networks, batch, key: sac_terms(nets, networks, batch, key, config))


def networks_for(config=SMALL, obs_space=OBS, action_space=ACTIONS_2D):
    nets = make_networks(obs_space, action_space, config)
    sample = observations.zeros(obs_space)
    online = nets.init(jax.random.key(0), sample)
    online = online._replace(log_alpha=jnp.asarray(math.log(0.3), jnp.float32))
    target = nets.init(jax.random.key(1), sample)  # apart from online, so mixing them up shows
    return nets, TargetNetworks(online, target, jnp.zeros((), jnp.int32))


# ---------------------------------------------------------------- the terms by hand
def test_soft_q_target_by_hand():
    y = soft_q_target(jnp.array([1.0, 1.0]), jnp.array([0.99, 0.0]), jnp.array([2.0, 2.0]), jnp.array([-0.5, -0.5]),
                      jnp.asarray(0.2))
    np.testing.assert_allclose(y, [1.0 + 0.99 * (2.0 + 0.2 * 0.5), 1.0], rtol=1e-6)  # 3.079; terminated: r


def test_twin_q_loss_by_hand():
    q = jnp.array([[1.0, 2.0], [3.0, 0.0]])  # [critic, transition]
    loss, td_abs = twin_q_loss(q, jnp.array([2.0, 0.5]))
    np.testing.assert_allclose(loss, [1.0 + 1.0, 1.5 ** 2 + 0.5 ** 2])
    np.testing.assert_allclose(td_abs, [1.0, (1.5 + 0.5) / 2])
    target_grad = jax.grad(lambda y: jnp.sum(twin_q_loss(q, y)[0]))(jnp.array([2.0, 0.5]))
    np.testing.assert_array_equal(target_grad, 0.0)  # the target is held fixed


def test_actor_and_temperature_losses_by_hand():
    np.testing.assert_allclose(actor_loss(jnp.array([-1.0]), jnp.array([3.0]), jnp.asarray(0.2)), [-0.2 - 3.0])
    assert float(jax.grad(lambda a: actor_loss(jnp.array([-1.0]), jnp.array([3.0]), a)[0])(0.2)) == 0.0
    log_alpha = math.log(0.5)
    loss = temperature_loss(jnp.asarray(log_alpha), jnp.array([-0.5]), -1.0)
    np.testing.assert_allclose(loss, [-0.5 * (-0.5 - 1.0)], rtol=1e-6)  # 0.75
    # d/d log_alpha = -alpha (log pi + target) = 0.75 > 0: entropy 0.5 above the target -1 lowers alpha
    grad = jax.grad(lambda la: temperature_loss(la, jnp.array([-0.5]), -1.0)[0])(jnp.asarray(log_alpha))
    assert float(grad) == pytest.approx(0.75, rel=1e-6)
    assert float(jax.grad(lambda lp: temperature_loss(jnp.asarray(log_alpha), lp, -1.0)[0])(jnp.array([-0.5]))[0]) == 0


# ---------------------------------------------------------------- the assembly
def test_terms_match_a_numpy_reference_of_cleanrls_update():
    nets, networks = networks_for()
    batch = batch_of(8)
    key = jax.random.key(7)
    terms = terms_fn(nets)(networks, batch, key)

    # CleanRL's update, step by step, from the networks' outputs (the same keys: next action, then actor's)
    online, target = networks.online, networks.target
    k_next, k_now = jax.random.split(key)
    alpha = 0.3
    j = Jitted(nets)
    next_a, next_lp = j.policy(online.actor, batch.next_obs).sample_and_log_prob(k_next)  # the online actor
    next_q = np.asarray(j.q(target.critic, batch.next_obs, next_a), np.float64)  # the target critics
    y = batch.reward + batch.discount * (next_q.min(0) - alpha * np.asarray(next_lp))
    q = np.asarray(j.q(online.critic, batch.obs, batch.action), np.float64)
    a, lp = j.policy(online.actor, batch.obs).sample_and_log_prob(k_now)
    q_pi = np.asarray(j.q(online.critic, batch.obs, a), np.float64).min(0)
    lp = np.asarray(lp, np.float64)

    np.testing.assert_allclose(terms.critic, ((q - y) ** 2).sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(terms.td_abs, np.abs(q - y).mean(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(terms.actor, alpha * lp - q_pi, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(terms.temperature, -alpha * (lp - 2.0), rtol=1e-4, atol=1e-5)  # target entropy -2
    assert float(terms.metrics["alpha"]) == pytest.approx(alpha, rel=1e-6)
    # policy_frequency 2: the actor's metrics are x2 on the steps it learns (updates 0, 2, ...), zero
    # between, so their mean over a learner step's whole scan is the mean over the actor's steps
    assert SMALL.policy_frequency == 2
    assert float(terms.metrics["entropy"]) == pytest.approx(2 * -lp.mean(), rel=1e-4)
    between = terms_fn(nets)(networks._replace(updates=networks.updates + 1), batch, key)
    np.testing.assert_array_equal(between.actor, 0.0)
    np.testing.assert_array_equal(between.temperature, 0.0)
    assert float(between.metrics["entropy"]) == 0.0 and float(between.metrics["actor_loss"]) == 0.0
    np.testing.assert_allclose(between.critic, terms.critic, rtol=1e-6)  # the critics learn every step

    loss, _, td_abs = jax.jit(lambda n, b, k: sac_loss(nets, n, b, k, SMALL))(networks, batch, key)
    np.testing.assert_allclose(loss, terms.critic + terms.actor + terms.temperature, rtol=1e-6)
    fixed = terms_fn(nets, SACConfig(hidden_sizes=(16, 16), autotune=False))(networks, batch, key)
    np.testing.assert_array_equal(fixed.temperature, 0.0)


def test_each_term_reaches_only_its_own_part_of_the_networks():
    nets, networks = networks_for()
    batch = batch_of(8)

    def grads(term):
        def f(online):
            return jnp.mean(getattr(sac_terms(nets, networks._replace(online=online), batch, jax.random.key(3), SMALL),
                                    term))
        g = jax.jit(jax.grad(f))(networks.online)
        return {part: max(float(jnp.max(jnp.abs(x))) for x in jax.tree.leaves(getattr(g, part)))
                for part in ("actor", "critic", "log_alpha")}

    critic, actor, temperature = grads("critic"), grads("actor"), grads("temperature")
    assert critic["critic"] > 0 and critic["actor"] == 0 and critic["log_alpha"] == 0
    assert actor["actor"] > 0 and actor["critic"] == 0 and actor["log_alpha"] == 0
    assert temperature["log_alpha"] > 0 and temperature["actor"] == 0 and temperature["critic"] == 0


# ---------------------------------------------------------------- config
def test_defaults_are_cleanrls():
    c = SACConfig()
    assert (c.hidden_sizes, c.policy_lr, c.q_lr, c.tau, c.policy_frequency, c.autotune, c.alpha) == \
           ((256, 256), 3e-4, 1e-3, 0.005, 2, True, 0.2)
    assert (c.batch_size, c.learning_starts, c.replay_capacity, c.log_std_min, c.log_std_max) == \
           (256, 5000, 1_000_000, -5.0, 2.0)
    assert c.entropy_target(6) == -6.0 and SACConfig(target_entropy=-1.5).entropy_target(6) == -1.5
    assert c.initial_log_alpha == 0.0 and SACConfig(autotune=False).initial_log_alpha == pytest.approx(math.log(0.2))


@pytest.mark.parametrize("kwargs, message", [
    ({"torso": "resnet"}, "torso must be one of"),
    ({"hidden_sizes": ()}, r"hidden_sizes must be positive ints, got \(\)"),
    ({"hidden_sizes": (256, 0)}, r"hidden_sizes must be positive ints, got \(256, 0\)"),
    ({"policy_lr": 0.0}, "policy_lr must be > 0, got 0.0"),
    ({"q_lr": -1e-3}, "q_lr must be > 0, got -0.001"),
    ({"alpha": 0.0}, "alpha must be > 0, got 0.0"),
    ({"tau": 0.0}, r"tau must be in \(0, 1\], got 0.0"),
    ({"tau": 1.5}, r"tau must be in \(0, 1\], got 1.5"),
    ({"policy_frequency": 0}, "policy_frequency must be an int >= 1, got 0"),
    ({"policy_frequency": 1.5}, "policy_frequency must be an int >= 1, got 1.5"),
    ({"log_std_min": 2.0}, r"log_std_min must be < log_std_max, got \(2.0, 2.0\)"),
    ({"batch_size": 0}, "batch_size must be >= 1, got 0"),  # the base's checks run too
])
def test_bad_config_values_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        SACConfig(**kwargs)
    assert "\n" not in str(error.value)


# ---------------------------------------------------------------- networks
@pytest.mark.parametrize("obs_space", [OBS, DICT_OBS], ids=["box", "dict"])
def test_network_shapes(obs_space):
    nets, networks = networks_for(obs_space=obs_space)
    batch = batch_of(5, obs_space)
    dist = nets.policy(networks.online.actor, batch.obs)
    assert dist.mean.shape == dist.log_std.shape == (5, 2)
    assert nets.q(networks.online.critic, batch.obs, batch.action).shape == (2, 5)
    assert networks.online.log_alpha.shape == ()
    assert all(x.shape[0] == 2 for x in jax.tree.leaves(networks.online.critic))  # twin: a leading axis of 2
    q = nets.q(networks.online.critic, batch.obs, batch.action)
    assert not np.allclose(q[0], q[1])  # initialised apart
    loss, _, td_abs = jax.jit(lambda n, b, k: sac_loss(nets, n, b, k, SMALL))(networks, batch, jax.random.key(0))
    assert loss.shape == td_abs.shape == (5,) and bool(jnp.all(jnp.isfinite(loss)))


def test_actions_within_pendulum_bounds_and_log_std_within_its_bounds():
    nets = make_networks(OBS, PENDULUM_ACTIONS, SMALL)
    params = nets.init(jax.random.key(0), observations.zeros(OBS))
    # inputs far out drive the heads to their extremes
    obs = jnp.asarray(np.random.default_rng(0).normal(0, 100, (256, 3)), jnp.float32)
    dist = nets.policy(params.actor, obs)
    assert bool(jnp.all((dist.log_std >= -5.0) & (dist.log_std <= 2.0)))
    for seed in range(3):
        action, log_prob = dist.sample_and_log_prob(jax.random.key(seed))
        assert action.shape == (256, 1) and bool(jnp.all((action >= -2.0) & (action <= 2.0)))
        assert bool(jnp.all(jnp.isfinite(log_prob)))
    assert bool(jnp.all(jnp.abs(dist.mode()) <= 2.0))
    assert float(jnp.max(jnp.abs(action))) > 1.0  # the actions span the box, not [-1, 1]


@pytest.mark.parametrize("space, message", [
    (gym.spaces.Discrete(3), "SAC takes a rank-1 float Box action space, got Discrete"),
    (gym.spaces.Box(-np.inf, np.inf, (2,), np.float32), "SAC needs a bounded Box action space"),
])
def test_action_spaces_it_cannot_take(space, message):
    with pytest.raises(ValueError, match=message):
        make_networks(OBS, space, SMALL)
    assert box_bounds(ACTIONS_2D, "SAC") == ((-2.0, 0.0), (2.0, 1.0))


# ---------------------------------------------------------------- optimizer
@pytest.mark.parametrize("autotune", [True, False])
def test_optimizer_delays_actor_and_temperature_at_k_times_their_rate(autotune):
    config = SACConfig(hidden_sizes=(8,), policy_frequency=3, autotune=autotune)
    nets = make_networks(OBS, ACTIONS_2D, config)
    params = nets.init(jax.random.key(0), observations.zeros(OBS))
    tx = make_optimizer(config)
    state = tx.init(params)
    grads = jax.tree.map(jnp.ones_like, params)
    update = jax.jit(tx.update)
    for step in range(4):
        updates, state = update(grads, state, params)
        actor_step = float(jnp.max(jnp.abs(updates.actor["params"]["mean"]["bias"])))
        critic_step = float(jnp.max(jnp.abs(updates.critic["params"]["q"]["bias"])))
        assert critic_step == pytest.approx(1e-3, rel=1e-4)  # Adam with a constant gradient: lr per step
        if step % 3 == 0:
            assert actor_step == pytest.approx(3 * 3e-4, rel=1e-4)
            assert abs(float(updates.log_alpha)) == (pytest.approx(3 * 1e-3, rel=1e-4) if autotune else 0.0)
        else:
            assert actor_step == 0.0 and float(updates.log_alpha) == 0.0
