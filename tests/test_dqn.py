"""DQN and the off-policy base it stands on: targets and losses by hand, the replay ratio, the
learning_starts gate and the warm-up's random actions through the real loop, the CLI."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents.dqn import DQN, DQNConfig
from sebulba.agents.dqn.losses import q_learning_target, td_loss
from sebulba.off_policy import optimizer_steps_per_cycle
from sebulba.target_networks import TargetNetworks
from sebulba.types import EnvStep
from tests.support.cli import last_metrics, run_experiment

CARTPOLE = envs.make_spec("CartPole-v1")
SMALL = DQNConfig(hidden_sizes=(16,), batch_size=8, replay_capacity=512, learning_starts=100, replay_ratio=0.25,
                  n_step=2, target_update_period=3, learning_rate=1e-3)


def test_double_and_plain_q_learning_targets_by_hand():
    reward, discount = jnp.array([1.0, 0.5]), jnp.array([0.9, 0.0])
    q_online = jnp.array([[1.0, 3.0], [5.0, 0.0]])  # picks actions 1, 0
    q_target = jnp.array([[4.0, 2.0], [7.0, 9.0]])  # its own argmax: 0, 1
    np.testing.assert_allclose(q_learning_target(reward, discount, q_online, q_target), [1 + 0.9 * 2.0, 0.5])
    np.testing.assert_allclose(q_learning_target(reward, discount, q_online, q_target, double=False),
                               [1 + 0.9 * 4.0, 0.5])


def test_td_loss_is_huber_or_half_squared():
    td = jnp.array([0.5, -2.0, 3.0])
    np.testing.assert_allclose(td_loss(td, 1.0), [0.125, 1.5, 2.5])  # 0.5 td^2 within 1, |td| - 0.5 beyond
    np.testing.assert_allclose(td_loss(td, None), [0.125, 2.0, 4.5])
    np.testing.assert_allclose(jax.grad(lambda x: td_loss(x, 1.0).sum())(td), [0.5, -1.0, 1.0])


@pytest.mark.parametrize("kwargs,message", [
    (dict(replay_ratio=0), "replay_ratio"), (dict(learning_starts=-1), "learning_starts"),
    (dict(n_step=0), "n_step must be >= 1"), (dict(discount=1.5), "discount"),
    (dict(priority_exponent=-1), "priority_exponent"), (dict(target_update_period=0), "target_update_period"),
    (dict(huber_delta=0.0), "huber_delta"), (dict(epsilon_base=-0.1), r"epsilon_base must be in \[0, 1\]"),
    (dict(epsilon_base=1.5), "epsilon_base"), (dict(learning_rate=-1.0), "learning_rate"),
    (dict(value_head="c52"), "value_head must be one of scalar, c51, qr, got 'c52'"),
    (dict(value_head="qr", num_atoms=1), r"num_atoms \(c51.s atoms, qr.s quantiles\) must be >= 2, got 1"),
    (dict(value_head="c51", v_min=5.0, v_max=5.0), "v_min < v_max"),
])
def test_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DQNConfig(**kwargs)


def test_replay_ratio_gives_whole_optimizer_steps_per_cycle_or_one_clear_error():
    assert optimizer_steps_per_cycle(0.25, 32) == 8
    assert optimizer_steps_per_cycle(1.0, 4) == 4
    assert optimizer_steps_per_cycle(1 / 16, 64) == 4
    with pytest.raises(ValueError, match=r"replay_ratio 0.1 x 32 env steps per learner call .* = 3.2 optimizer steps, "
                                         r"not a whole number >= 1: choose a replay_ratio such as 0.03125, 0.0625"):
        optimizer_steps_per_cycle(0.1, 32)
    with pytest.raises(ValueError, match="= 0.5 optimizer steps"):
        optimizer_steps_per_cycle(1 / 64, 32)


def test_actors_act_at_random_until_the_first_update_then_by_their_policy():
    agent = DQN(CARTPOLE, dataclasses.replace(SMALL, epsilon_base=1e-6))
    nets = agent.init_networks(jax.random.key(0))
    # A network whose Q-values always favour action 1: zero weights, bias (0, 1) in the head.
    nets = TargetNetworks(jax.tree.map(jnp.zeros_like, nets.online), nets.target, nets.updates)
    nets.online["params"]["q"]["bias"] = jnp.array([0.0, 1.0])
    state = agent.init_step_state(nets, 256, jax.random.key(1))
    env_step = EnvStep(jnp.zeros((256, 4)), jnp.zeros(256), *(jnp.zeros(256, bool),) * 3)
    step = jax.jit(agent.step)
    warm, state = step(nets, state, env_step)
    assert 0.35 < float(warm.mean()) < 0.65  # uniform over {0, 1} before any update
    learned, _ = step(nets._replace(updates=jnp.int32(1)), state, env_step)
    np.testing.assert_array_equal(learned, np.ones(256))
    evaluated, _ = agent.evaluation_step(nets, state, env_step)
    np.testing.assert_array_equal(evaluated, np.ones(256))


def loop_config(**kw):
    kw.setdefault("async_mode", False)
    return sebulba.LoopConfig(num_envs=4, steps_per_cycle=4, inferencers_per_device=1, log_every_s=1e3, **kw)


@pytest.mark.slow(seconds=10)
def test_no_update_before_learning_starts_then_replay_ratio_steps_a_cycle():
    """16 env steps a cycle at ratio 0.25: 4 optimizer steps per learner call, none (and no target
    copy) until the replay holds learning_starts = 100 transitions."""
    with sebulba.GymnasiumLoop(DQN(CARTPOLE, SMALL), loop_config()) as loop:
        assert loop.learner.schedule.optimizer_steps == 4
        sizes, updates = [], []
        for _ in range(12):
            loop.run(max_cycles=1)
            sizes.append(int(np.asarray(loop.learner.experience.replay.size).reshape(-1)[0]))
            updates.append(int(np.asarray(loop.learner.networks.updates).reshape(-1)[0]))
    started = [s >= 100 for s in sizes]
    assert started[0] is False and started[-1] is True
    # A call learns when its replay (after adding that call's cycle) holds learning_starts.
    expected = np.cumsum([4 * s for s in started])
    np.testing.assert_array_equal(updates, expected)


@pytest.mark.slow(seconds=10)
@pytest.mark.timeout(300)
def test_async_mode_learns_every_cycle_at_the_ratio_and_reports_who_waits():
    """Async actors: every cycle that reaches the learner gets its 4 optimizer steps (the ratio holds
    whoever waits), and each report says how long each side waited."""
    config = dataclasses.replace(SMALL, learning_starts=16)
    with sebulba.GymnasiumLoop(DQN(CARTPOLE, config), loop_config(async_mode=True)) as loop:
        ctx = loop.run(max_cycles=12)
        updates = int(np.asarray(loop.learner.networks.updates).reshape(-1)[0])
        report = loop.reports[-1]
    assert ctx.learner_steps == 12
    assert updates % 4 == 0 and 4 * 8 <= updates <= 4 * 12  # learning from the 2nd-4th cycle on, 4 steps each
    assert 0.0 <= report["actor_wait_frac"] <= 1.0 and 0.0 <= report["learner_wait_frac"] <= 1.0


@pytest.mark.slow(seconds=15)
def test_cli_writes_a_run_directory_and_a_bad_ratio_is_one_line(tmp_path):
    out = run_experiment("experiments.dqn", "--total_env_steps=3000", f"--logdir={tmp_path}", "--noprogress",
                         "--learning_starts=500", "--dueling", "--priority_exponent=0.6")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path)
    assert run_dir.name.startswith("dqn-CartPole-v1-") and int(last["env_steps"]) >= 3000
    assert float(last["learning"]) == 1.0 and float(last["replay_size"]) > 500
    bad = run_experiment("experiments.dqn", "--replay_ratio=0.1", f"--logdir={tmp_path}", "--noprogress")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("error: replay_ratio 0.1 x 32 env steps per learner call")
    wrong = run_experiment("experiments.dqn", "--env=Pendulum-v1", f"--logdir={tmp_path}", "--noprogress")
    assert wrong.returncode == 2 and "DQN needs a Discrete action space" in wrong.stderr


@pytest.mark.slow(seconds=46)
@pytest.mark.timeout(600)
def test_learning_bar_cartpole(tmp_path):
    """The no-flag run of `python -m experiments.dqn`: mean return >= 475 over the last 20 episodes
    within its 100k-step budget (seed 0; seeds 1, 2 in BENCHMARKS.md). Run as `--loop anakin`: on the
    built-in CartPole that is the same run as the no-flag (Sebulba, sync) one, bit for bit (the same
    328 episodes and final networks, measured 2026-11-29), in 46 s instead of 67 s."""
    out = run_experiment("experiments.dqn", "--seed=0", "--loop=anakin", f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    _, last = last_metrics(tmp_path)
    assert int(last["env_steps"]) >= 100_000
    assert float(last["episode_return_mean"]) >= 475, last


@pytest.mark.slow(seconds=15)
def test_a_run_resumed_with_its_replay_ends_bit_identical(tmp_path):
    """Sync mode, 2 inferencers (two sources in each replay shard), 2 learner devices: a run
    checkpointed with its replay (as runs are by default) and resumed ends exactly where an
    uninterrupted one ends."""
    from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer

    config = dataclasses.replace(SMALL, learning_starts=40, priority_exponent=0.6)

    def make_loop():
        cfg = sebulba.LoopConfig(num_envs=8, steps_per_cycle=4, async_mode=False, inferencers_per_device=2,
                                 learner_devices=(1, 2), seed=3, log_every_s=1e3)
        return sebulba.GymnasiumLoop(DQN(CARTPOLE, config), cfg)

    def state(loop):
        return jax.tree.map(np.asarray, (loop.learner.networks, loop.learner.experience))

    with make_loop() as loop:
        loop.run(max_cycles=14)
        straight = state(loop)
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=100, save_experience=True)
    with make_loop() as loop:
        loop.run(max_cycles=8, checkpointer=Checkpointer(ckpt))
    with make_loop() as loop:
        ctx = loop.run(max_cycles=14, checkpointer=Checkpointer(ckpt), resume=True)
        assert ctx.learner_steps == 14
        resumed = state(loop)
    assert int(np.asarray(straight[0].updates).reshape(-1)[0]) > 0  # it learned, from both sources' rows
    jax.tree.map(np.testing.assert_array_equal, straight, resumed)
