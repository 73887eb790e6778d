"""PQN (sebulba/agents/pqn): the Q(lambda) targets by hand and against a plain forward-view
reference over episode ends and truncations, the epsilon schedule the actors follow, the targets
the learner builds from a real rollout, the same update on 1 and 4 learner devices, an exact
resume, the CLI's one-line errors, and its learning bar."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents.pqn import PQN, PQNConfig
from sebulba.agents.pqn.returns import episode_q_lambda
from sebulba.types import EnvStep, Rollout
from tests.support.cli import last_metrics, run_experiment
from tests.support.learner_runs import one_cycle, straight_and_resumed, update_on

CARTPOLE = envs.make_spec("CartPole-v1")
SMALL = PQNConfig(hidden_sizes=(16,), num_epochs=2, num_minibatches=4, epsilon_decay_updates=4)
RNN = dataclasses.replace(SMALL, core="gru", core_size=8, num_minibatches=2)  # PQN-RNN: minibatches of envs


# ---------------------------------------------------------------- the targets
def reference_q_lambda(max_q, rewards, terminated, truncated, gamma, lam):
    """The forward view, a loop per step: G_s = sum_n (1 - lam) lam^(n-1) G_s^(n) over the n-step
    returns G_s^(n) (bootstrapped with max Q of the state n steps on), the weight of every n past
    the episode's end or the rollout's on the return that stops there (bootstrapped at a
    truncation or the rollout's end, not at a termination). Env-step indexed, as the pool gives it."""
    T = len(rewards) - 1
    final = np.asarray(terminated) | np.asarray(truncated)
    targets, valid = np.zeros(T), ~final[:-1]
    for s in range(T):
        if final[s]:
            continue
        K = next(k for k in range(1, T - s + 1) if final[s + k] or s + k == T)

        def n_step(n):
            ret = sum(gamma**i * rewards[s + i + 1] for i in range(n))
            stops_at_termination = n == K and terminated[s + K]
            return ret + (0.0 if stops_at_termination else gamma**n * max_q[s + n])

        targets[s] = sum((1 - lam) * lam ** (n - 1) * n_step(n) for n in range(1, K)) + lam ** (K - 1) * n_step(K)
    return targets, valid


def targets_of(max_q, rewards, terminated, truncated, gamma=0.5, lam=0.5):
    as_bool = lambda x: jnp.asarray(x, bool)  # noqa: E731
    t, v = episode_q_lambda(jnp.asarray(max_q, jnp.float32), jnp.asarray(rewards, jnp.float32), as_bool(terminated),
                            as_bool(truncated), gamma, lam)
    return np.asarray(t), np.asarray(v)


def test_targets_by_hand():
    """max Q 1, 2, 3, 4 of x_0..x_3, a reward of 1 into each of x_1..x_3, gamma = lambda = 0.5:
    G_2 = 1 + 0.5 (0.5 * 4 + 0.5 * 4) = 3, G_1 = 1 + 0.5 (0.5 * 3 + 0.5 * 3) = 2.5,
    G_0 = 1 + 0.5 (0.5 * 2 + 0.5 * 2.5) = 2.125. x_2 terminal: G_1 = 1, G_0 = 1.75 and the step
    out of x_2 (the auto-reset) is masked. x_2 truncated: G_1 = 1 + 0.5 * 3 = 2.5 bootstraps."""
    q, r = [1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 1.0, 1.0]
    no = [False] * 4
    t, v = targets_of(q, r, no, no)
    np.testing.assert_allclose(t, [2.125, 2.5, 3.0]) and np.testing.assert_array_equal(v, [True] * 3)
    t, v = targets_of(q, r, [False, False, True, False], no)
    np.testing.assert_allclose(t, [1.75, 1.0, 0.0]) and np.testing.assert_array_equal(v, [True, True, False])
    t, v = targets_of(q, r, no, [False, False, True, False])
    np.testing.assert_allclose(t, [2.125, 2.5, 0.0]) and np.testing.assert_array_equal(v, [True, True, False])


@pytest.mark.parametrize("lam", [0.0, 0.65, 1.0])
def test_targets_equal_the_forward_view_over_episode_ends_and_truncations(lam):
    rng = np.random.default_rng(0)
    T = 40
    max_q, rewards = rng.normal(size=T + 1), rng.normal(size=T + 1)
    ends = rng.random(T + 1) < 0.15
    truncated = ends & (rng.random(T + 1) < 0.5)
    terminated = ends & ~truncated
    rewards[np.roll(ends, 1)] = 0.0  # an auto-reset step's reward is 0
    want, valid = reference_q_lambda(max_q, rewards, terminated, truncated, 0.9, lam)
    got, got_valid = targets_of(max_q, rewards, terminated, truncated, 0.9, lam)
    np.testing.assert_array_equal(got_valid, valid)
    np.testing.assert_allclose(got, np.where(valid, want, 0.0), rtol=1e-5, atol=1e-5)
    if lam == 0.0:  # one-step Q-learning targets
        one_step = rewards[1:] + 0.9 * (1 - terminated[1:]) * max_q[1:]
        np.testing.assert_allclose(got[valid], one_step[valid], rtol=1e-5)


# ---------------------------------------------------------------- the agent
def test_epsilon_decays_linearly_over_its_updates_then_holds():
    agent = PQN(CARTPOLE, PQNConfig(epsilon_start=1.0, epsilon_finish=0.1, epsilon_decay_updates=10))
    got = [float(agent.epsilon(jnp.float32(u))) for u in (0, 5, 10, 20)]
    np.testing.assert_allclose(got, [1.0, 0.55, 0.1, 0.1], rtol=1e-6)


def test_actors_act_greedily_once_epsilon_is_zero_and_uniformly_at_one():
    agent = PQN(CARTPOLE, dataclasses.replace(SMALL, epsilon_start=1.0, epsilon_finish=0.0, epsilon_decay_updates=1))
    networks = agent.init_networks(jax.random.key(1))
    obs = jax.random.normal(jax.random.key(2), (4096, 4))
    es = EnvStep(obs, jnp.zeros(4096), jnp.zeros(4096, bool), jnp.zeros(4096, bool), jnp.zeros(4096, bool))
    greedy = np.argmax(np.asarray(agent.net.apply(networks["params"], obs)), -1)
    state = agent.init_step_state(networks, 4096, jax.random.key(3))
    at_one, _ = agent.step(networks, state, es)  # no update yet: epsilon 1
    counts = np.bincount(np.asarray(at_one), minlength=2)
    assert abs(counts[0] - counts[1]) < 300, counts  # ~2048 each: a coin, not the network
    at_zero, _ = agent.step({**networks, "updates": jnp.float32(1)}, state, es)
    np.testing.assert_array_equal(np.asarray(at_zero), greedy)
    evaluation, _ = agent.evaluation_step(networks, state, es)
    np.testing.assert_array_equal(np.asarray(evaluation), greedy)


def test_the_learner_regresses_on_q_lambda_targets_of_its_own_networks():
    """begin_update on a real rollout (episodes end inside it): the targets are the reference's
    over the current networks' max Q (rewards scaled), and the update count moves on."""
    agent = PQN(CARTPOLE, dataclasses.replace(SMALL, reward_scale=0.1, q_lambda=0.65))
    networks = agent.init_networks(jax.random.key(0))
    _, _, traj = one_cycle(agent)
    es = traj.env_step
    assert es.terminated.any() or es.truncated.any()
    new_networks, samples = agent.begin_update(networks, Rollout(traj, ()), jax.random.key(1))
    assert float(new_networks["updates"]) == 1.0
    max_q = np.asarray(agent.net.apply(networks["params"], es.obs.reshape(-1, 4))).max(-1).reshape(17, 8)
    for b in range(8):
        want, valid = reference_q_lambda(max_q[:, b], 0.1 * es.reward[:, b], es.terminated[:, b], es.truncated[:, b],
                                         0.99, 0.65)
        np.testing.assert_array_equal(np.asarray(samples.valid[:, b]), valid)
        np.testing.assert_allclose(np.asarray(samples.target[:, b]), np.where(valid, want, 0.0), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(samples.action), traj.action)


@pytest.mark.slow(seconds=6)
@pytest.mark.parametrize("config", [SMALL, RNN], ids=["mlp", "gru"])
def test_one_and_four_learner_devices_give_the_same_update(config):
    agent = PQN(CARTPOLE, config)
    cycle = one_cycle(agent)
    one, four = update_on((0,), agent, cycle), update_on((0, 1, 2, 3), agent, cycle)
    for a, b in zip(jax.tree.leaves(one[0]), jax.tree.leaves(four[0]), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    assert one[2]["loss"] == pytest.approx(four[2]["loss"], rel=1e-5)


@pytest.mark.slow(seconds=8)
@pytest.mark.parametrize("config", [SMALL, RNN], ids=["mlp", "gru"])
def test_an_interrupted_run_resumes_exactly(config, tmp_path):
    """With a core, the actors' recurrent state is part of what is saved and restored."""
    def make_loop():
        cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=8, async_mode=False, inferencers_per_device=1,
                                 learner_devices=(0, 1), seed=5, log_every_s=1e3)
        return sebulba.GymnasiumLoop(PQN(CARTPOLE, config), cfg)

    straight, resumed = straight_and_resumed(make_loop, tmp_path)
    for a, b in zip(jax.tree.leaves(straight), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_array_equal(a, b)
    assert float(resumed["updates"]) == 6.0  # the epsilon schedule's count came back with the networks


def test_pqn_rnn_the_learners_re_unroll_gives_the_actors_q_values():
    """PQN-RNN: the actors step T + 1 times from a non-zero state (episodes start at t = 0 and 4 in
    row 0, at 6 in row 1); the learner's one call over the sequence from the first state gives the
    same Q-values and final state, and a row's Q after its reset does not depend on what came before."""
    agent = PQN(CARTPOLE, RNN)
    networks = agent.init_networks(jax.random.key(0))
    T, B = 9, 4
    rng = np.random.default_rng(0)
    obs = jnp.asarray(rng.normal(size=(T + 1, B, 4)), jnp.float32)
    first = np.zeros((T + 1, B), bool)
    first[[0, 4], 0] = first[6, 1] = True
    first = jnp.asarray(first)
    start = jnp.asarray(rng.normal(size=(B, 8)), jnp.float32)
    apply = jax.jit(agent.net.apply, static_argnames="sequence")
    state, qs = start, []
    for t in range(T + 1):
        q, state = apply(networks["params"], obs[t], state, first[t])
        qs.append(q)
    q, final = apply(networks["params"], obs, start, first, sequence=True)
    np.testing.assert_allclose(q, jnp.stack(qs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(final, state, rtol=1e-5, atol=1e-6)
    fresh, _ = apply(networks["params"], obs, agent.net.initial_state(B), first, sequence=True)
    np.testing.assert_allclose(fresh[4:, 0], q[4:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fresh[6:, 1], q[6:, 1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(fresh[:, 3], q[:, 3])
    # the step state carries the core, zeros at the start; evaluation carries it too
    step_state = agent.init_step_state(networks, B, jax.random.key(1))
    assert not np.any(step_state.core) and step_state.core.shape == (B, 8)
    es = EnvStep(obs[0], jnp.zeros(B), jnp.zeros(B, bool), jnp.zeros(B, bool), first[0])
    for step in (agent.step, agent.evaluation_step):
        _, after = step(networks, step_state, es)
        np.testing.assert_allclose(after.core, apply(networks["params"], obs[0], step_state.core, first[0])[1],
                                   rtol=1e-5, atol=1e-6)


def test_bad_config_values_are_refused_in_one_line():
    for kwargs, message in [({"q_lambda": 1.5}, "q_lambda must be in [0, 1], got 1.5"),
                            ({"epsilon_decay_updates": 0}, "epsilon_decay_updates must be an int >= 1, got 0"),
                            ({"exploration_fraction": 0.0}, "exploration_fraction must be in (0, 1], got 0.0"),
                            ({"hidden_sizes": (0,)}, "hidden_sizes must be positive ints, got (0,)")]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                           .replace("]", r"\]")):
            PQNConfig(**kwargs)
    with pytest.raises(ValueError, match="PQN needs a Discrete action space"):
        PQN(envs.make_spec("Pendulum-v1"))


# ---------------------------------------------------------------- the entry point
@pytest.mark.slow(seconds=6)
@pytest.mark.parametrize("args, message", [
    (["--env=Pendulum-v1"], "error: PQN needs a Discrete action space; Pendulum-v1 has Box"),
    (["--num_minibatches=3"], "error: --num_minibatches=3 must divide --steps_per_cycle=128"),
    (["--q_lambda=2"], "error: q_lambda must be in [0, 1], got 2.0"),
])
def test_cli_mistakes_are_one_line(tmp_path, args, message):
    out = run_experiment("experiments.pqn", *args, f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 2, out.stderr[-3000:]
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(message), line
    assert not any(tmp_path.iterdir()), "a refused run leaves no directory"


@pytest.mark.slow(seconds=25)
@pytest.mark.timeout(900)
def test_learning_bar_cartpole(tmp_path):
    """The no-flag run of `python -m experiments.pqn`: mean return >= 475 over the last 20
    episodes within its 500k-step budget (seed 0; seeds 1, 2 and gymnax's CartPole in
    BENCHMARKS.md). Run as `--loop anakin`: on the built-in CartPole that is the same run as the
    no-flag (Sebulba, sync) one, bit for bit (tests/test_anakin.py checks PQN's networks; the whole
    run ended with the same 3,869 episodes and 500.0 both ways, 2026-11-29), in a fifth of the time."""
    out = run_experiment("experiments.pqn", "--seed=0", "--loop=anakin", f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path)
    assert int(last["env_steps"]) >= 500_000 and int(last["learner_steps"]) == 977
    assert float(last["episode_return_mean"]) >= 475, last
    # epsilon decayed over the preset's exploration_fraction (0.5) of the run's 977 learner updates
    config = json.loads((run_dir / "config.json").read_text())["agent"]["config"]
    assert config["epsilon_decay_updates"] == 488 and float(last["epsilon"]) == pytest.approx(0.05)
