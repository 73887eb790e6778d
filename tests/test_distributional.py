"""DQN's distributional heads and NoisyNet layers: C51's projection and loss and QR-DQN's quantile
Huber loss by hand and against plain references, the heads' targets, the noisy layer's factorised
noise, the network's shapes, and the heads on 1 and 4 devices through the real loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents.dqn import DQN, DQNConfig
from sebulba.agents.dqn.losses import (
    categorical_loss,
    categorical_projection,
    quantile_fractions,
    quantile_huber_loss,
)
from sebulba.agents.dqn.networks import NoisyDense
from sebulba.agents.dqn.value_heads import CategoricalHead, QuantileHead, make_value_head
from sebulba.experiment.trained import build_agent, open_run, restore_networks
from tests.support.cli import last_metrics, run_experiment
from tests.support.learner_runs import assert_policy_acts_as_evaluation

CARTPOLE = envs.make_spec("CartPole-v1")


def projection_reference(atoms, reward, discount, probs):
    """C51's Algorithm 1 as written (Bellemare et al. 2017), one transition and one atom at a time."""
    v_min, v_max, n = float(atoms[0]), float(atoms[-1]), len(atoms)
    dz = (v_max - v_min) / (n - 1)
    out = np.zeros((len(reward), n))
    for k in range(len(reward)):
        for j in range(n):
            tz = min(max(reward[k] + discount[k] * atoms[j], v_min), v_max)
            b = (tz - v_min) / dz
            lo, hi = int(np.floor(b)), int(np.ceil(b))
            if lo == hi:  # lands on an atom
                out[k, lo] += probs[k, j]
            else:
                out[k, lo] += probs[k, j] * (hi - b)
                out[k, hi] += probs[k, j] * (b - lo)
    return out


def test_categorical_projection_by_hand():
    atoms = jnp.array([0.0, 1.0, 2.0])
    reward = jnp.array([0.5, 0.5, 1.3, -5.0, 0.0])
    discount = jnp.array([1.0, 1.0, 0.0, 0.5, 1.0])
    probs = jnp.array([[1.0, 0, 0], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])
    np.testing.assert_allclose(categorical_projection(atoms, reward, discount, probs), [
        [0.5, 0.5, 0.0],  # 0.5 lies halfway between atoms 0 and 1
        [0.1, 0.25, 0.65],  # 0.5, 1.5 split in halves, 2.5 clipped onto atom 2
        [0.0, 0.7, 0.3],  # an episode's end: all the mass at the reward, 1.3
        [1.0, 0.0, 0.0],  # below the support: clipped onto atom 0
        [0.2, 0.3, 0.5],  # no reward, no discount: unchanged
    ], atol=1e-6)


def test_categorical_projection_equals_the_papers_algorithm():
    rng = np.random.default_rng(0)
    atoms = np.linspace(-10.0, 10.0, 51)
    reward = np.concatenate([rng.normal(0, 4, 60), [0.4, 1.0, -30.0, 30.0]])  # 1.0: every atom lands on one
    discount = np.concatenate([rng.choice([0.0, 0.9, 0.99, 0.9801], 60), [1.0, 1.0, 0.99, 0.99]])
    probs = rng.dirichlet(np.ones(51), len(reward))
    ours = categorical_projection(jnp.asarray(atoms, jnp.float32), jnp.asarray(reward, jnp.float32),
                                  jnp.asarray(discount, jnp.float32), jnp.asarray(probs, jnp.float32))
    np.testing.assert_allclose(ours, projection_reference(atoms, reward, discount, probs), atol=1e-5)
    np.testing.assert_allclose(np.sum(ours, -1), 1.0, atol=1e-5)


def test_categorical_loss_is_the_cross_entropy():
    logits = jnp.array([[0.0, 0.0], [np.log(3.0), 0.0]])
    target = jnp.array([[1.0, 0.0], [0.5, 0.5]])
    np.testing.assert_allclose(categorical_loss(logits, target),
                               [np.log(2.0), -0.5 * np.log(0.75) - 0.5 * np.log(0.25)], rtol=1e-6)


def test_quantile_huber_loss_by_hand():
    np.testing.assert_allclose(quantile_fractions(4), [0.125, 0.375, 0.625, 0.875])
    # one quantile (tau 1/2) at 0, one target at 1: weight 1/2 x (Huber 1/2 | |u| 1)
    np.testing.assert_allclose(quantile_huber_loss(jnp.zeros((1, 1)), jnp.ones((1, 1)), 1.0), [0.25])
    np.testing.assert_allclose(quantile_huber_loss(jnp.zeros((1, 1)), jnp.ones((1, 1)), None), [0.5])
    # quantiles at taus 1/4, 3/4, both at 0; targets -1 and 2 (u = -1, 2):
    #   plain: tau 1/4: (3/4 x 1 + 1/4 x 2) / 2 = 0.625, tau 3/4: (1/4 x 1 + 3/4 x 2) / 2 = 0.875
    #   Huber 1 (0.5 and 1.5): (3/4 x .5 + 1/4 x 1.5) / 2 = 0.375, (1/4 x .5 + 3/4 x 1.5) / 2 = 0.625
    q, t = jnp.zeros((1, 2)), jnp.array([[-1.0, 2.0]])
    np.testing.assert_allclose(quantile_huber_loss(q, t, None), [1.5])
    np.testing.assert_allclose(quantile_huber_loss(q, t, 1.0), [1.0])
    np.testing.assert_allclose(quantile_huber_loss(q, t, 2.0), [(0.75 * 0.25 + 0.25 * 1.0 + 0.25 * 0.25 + 0.75)
                                                                / 2], rtol=1e-6)  # Huber 2 / 2: u^2 / 4


def test_the_quantile_loss_is_least_at_the_quantiles_of_the_targets():
    """Over 0, 1, ..., 99 as targets, each output's loss is least at its fraction's quantile."""
    targets = jnp.arange(100.0)[None]
    grid = jnp.linspace(-10.0, 110.0, 1201)
    for i, tau in enumerate(np.asarray(quantile_fractions(4))):
        def loss_of(theta):
            q = jnp.zeros((1, 4)).at[0, i].set(theta)
            return quantile_huber_loss(q, targets, None)[0]
        best = float(grid[jnp.argmin(jax.vmap(loss_of)(grid))])
        assert abs(best - np.quantile(np.arange(100.0), tau)) <= 1.0, (tau, best)


def test_the_heads_bootstrap_from_the_double_q_action():
    """Next observation's outputs for 2 actions: the online network prefers action 1, the target
    network action 0; double Q-learning bootstraps from action 1's target outputs."""
    atoms = jnp.array([0.0, 1.0, 2.0])
    c51 = CategoricalHead(atoms)
    big = 10.0
    next_online = jnp.array([[[big, 0, 0], [0, 0, big]]])  # Q 0 vs 2: picks action 1
    next_target = jnp.array([[[0, 0, big], [big, 0, 0]]])  # Q 2 vs 0: picks action 0
    taken = jnp.zeros((1, 3))
    reward, discount = jnp.array([0.0]), jnp.array([1.0])
    for double, expected in ((True, [1.0, 0, 0]), (False, [0, 0, 1.0])):
        loss, priority, _ = c51.loss(taken, next_online, next_target, reward, discount, double)
        target = jax.nn.softmax(next_target[0, 1 if double else 0])
        np.testing.assert_allclose(target, expected, atol=1e-3)
        np.testing.assert_allclose(loss, categorical_loss(taken, target[None]), rtol=1e-6)
        np.testing.assert_allclose(priority, loss)
    qr = QuantileHead(None)
    next_online = jnp.array([[[0.0, 0.0], [1.0, 3.0]]])  # means 0, 2: action 1
    next_target = jnp.array([[[5.0, 7.0], [-1.0, 1.0]]])  # means 6, 0: action 0
    for double, samples in ((True, [0.5 * -1.0 + 1, 0.5 * 1.0 + 1]), (False, [0.5 * 5 + 1, 0.5 * 7 + 1])):
        loss, _, metrics = qr.loss(jnp.zeros((1, 2)), next_online, next_target, jnp.array([1.0]), jnp.array([0.5]),
                                   double)
        np.testing.assert_allclose(loss, quantile_huber_loss(jnp.zeros((1, 2)), jnp.array([samples]), None))
        assert float(metrics["q_mean"]) == 0.0


def test_noisy_dense_draws_factorised_noise_and_evaluates_with_its_means():
    layer = NoisyDense(3)
    x = jnp.eye(5)  # row i of the output is the effective weights' row i plus the bias
    params = layer.init(jax.random.key(0), x, False)
    mean = layer.apply(params, x, False)
    p = params["params"]
    np.testing.assert_allclose(mean, p["mu_kernel"] + p["mu_bias"], rtol=1e-6)
    noisy = lambda k: layer.apply(params, x, True, rngs={"noise": jax.random.key(k)})  # noqa: E731
    np.testing.assert_array_equal(noisy(1), noisy(1))
    assert not np.allclose(noisy(1), noisy(2))
    # sigma starts constant, so the noise added is sigma_w e_in e_out^T + sigma_b e_out: rank 1
    singular = np.linalg.svd(np.asarray(noisy(1) - mean), compute_uv=False)
    assert singular[1] < 1e-5 * singular[0]
    np.testing.assert_allclose(p["sigma_kernel"], 0.5 / np.sqrt(5))


@pytest.mark.parametrize("head,dueling,noisy,shape", [
    ("scalar", False, False, (6, 2)), ("c51", False, False, (6, 2, 51)), ("qr", True, False, (6, 2, 51)),
    ("c51", True, True, (6, 2, 11)),
])
def test_the_network_outputs_an_action_and_acting_reads_q_values(head, dueling, noisy, shape):
    atoms = 11 if shape[-1] == 11 else 51
    agent = DQN(CARTPOLE, DQNConfig(hidden_sizes=(16,), value_head=head, num_atoms=atoms, dueling=dueling,
                                    noisy=noisy, epsilon_base=0.0))
    nets = agent.init_networks(jax.random.key(0))
    obs = jax.random.normal(jax.random.key(1), (6, 4))
    out = agent.net.apply(nets.online, obs)
    assert out.shape == shape
    q = make_value_head(agent.config).q_values(out)
    assert q.shape == (6, 2)
    state = agent.init_step_state(nets, 6, jax.random.key(2))
    np.testing.assert_array_equal(agent.greedy(nets, state, obs), jnp.argmax(q, -1))
    acts = [agent.act(nets, state, obs, jax.random.key(k)) for k in range(20)]  # epsilon 0
    if noisy:  # the heads' noise changes some greedy choices
        assert any(not np.array_equal(a, acts[0]) for a in acts)
    else:
        assert all(np.array_equal(a, jnp.argmax(q, -1)) for a in acts)


@pytest.mark.slow(seconds=12)
def test_a_rainbow_run_has_its_parts_learns_and_loads(tmp_path):
    """`python -m experiments.rainbow --noisy --epsilon_base 0`: DQN with C51, prioritized replay,
    n = 3, dueling, double and NoisyNets; it learns, and `load_policy` acts as its evaluation."""
    out = run_experiment("experiments.rainbow", "--total_env_steps=3000", "--learning_starts=500", "--noisy",
                         "--epsilon_base=0", f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path)
    assert run_dir.name.startswith("rainbow-CartPole-v1-") and float(last["learning"]) == 1.0
    run, record = open_run(run_dir)
    agent = build_agent(record)
    assert isinstance(agent, DQN)
    c = agent.config
    assert (c.value_head, c.num_atoms, c.n_step, c.priority_exponent, c.dueling, c.double, c.noisy, c.epsilon_base) == (
        "c51", 51, 3, 0.5, True, True, True, 0.0)
    _, networks = restore_networks(run, agent)
    assert_policy_acts_as_evaluation(sebulba.load_policy(run_dir), agent, networks)


@pytest.mark.slow(seconds=40)
@pytest.mark.timeout(600)
def test_learning_bar_cartpole_c51(tmp_path):
    """`python -m experiments.dqn --value_head c51`: mean return >= 475 over the last 20 episodes
    within 50k env steps, seed 0 (the issue's bar: within 200k). QR-DQN's bar (the preset's 100k,
    120 s of the suite's time: 440.6 at 70k) and seeds 0-2 of both at 100k, beside DQN and Rainbow,
    are in BENCHMARKS.md (`benchmarks/bench_distributional.py`): the suite is at its time limit, and
    QR-DQN differs from C51 only in its loss, checked above by hand. `--loop anakin` on the built-in
    CartPole is the no-flag Sebulba run, bit for bit, in less time."""
    out = run_experiment("experiments.dqn", "--value_head=c51", "--seed=0", "--loop=anakin", "--total_env_steps=50000",
                         f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    _, last = last_metrics(tmp_path)
    assert int(last["env_steps"]) >= 50_000
    assert float(last["episode_return_mean"]) >= 475, last
