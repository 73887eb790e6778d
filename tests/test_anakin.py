"""The Anakin loop (sebulba/loop/anakin.py): the same Agents as the Sebulba loop, acting, stepping a
JAX env and learning in one compiled program per call, on 1 and 4 faked CPU devices."""

from __future__ import annotations

import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba import keys
from sebulba.agents import RandomAgent, SimplePolicyGradient, SPGConfig
from sebulba.agents.impala import Impala, ImpalaConfig
from sebulba.agents.ppo import PPO, PPOConfig
from sebulba.agents.pqn import PQN, PQNConfig
from sebulba.agents.dqn import DQN, DQNConfig
from sebulba.agents.r2d2 import R2D2, R2D2Config
from sebulba.agents.sac import SAC, SACConfig
from sebulba.agents.td3 import TD3, TD3Config
from sebulba.loop import anakin, anakin_program
from sebulba.loop.anakin import AnakinLoop
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.learner import Learner, NonFiniteError
from sebulba.sharding import LearnerSharding
from sebulba.types import EnvStep, ExperienceLayout
from tests.support.agents import CountingAgent, LinearPG
from tests.support.cli import last_metrics, run_experiment
from tests.support.reference import ReferenceCycle

ENV = "gymnax/CartPole-v1"
SPEC = envs.make_spec(ENV)


def config(devices: int = 1, num_envs: int = 8, steps: int = 8, **kw) -> sebulba.LoopConfig:
    return sebulba.LoopConfig(env_id=ENV, num_envs=num_envs, steps_per_cycle=steps,
                              learner_devices=tuple(range(devices)), log_every_s=1000.0, **kw)


AGENTS = {
    "spg": lambda: SimplePolicyGradient(SPEC, SPGConfig(hidden_sizes=(16,))),
    "ppo": lambda: PPO(SPEC, PPOConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2)),
    "impala": lambda: Impala(SPEC, ImpalaConfig(hidden_sizes=(16,), num_minibatches=2)),
    "r2d2": lambda: R2D2(SPEC, R2D2Config(core_size=8, hidden_sizes=(8,), sequence_length=16, burn_in=2, n_step=2,
                                          batch_size=4, replay_capacity=64, min_replay_size=4)),
    "dqn": lambda: DQN(SPEC, DQNConfig(hidden_sizes=(8,), batch_size=4, replay_capacity=256, learning_starts=64,
                                       replay_ratio=1 / 16, n_step=2, target_update_period=3)),
    "rainbow": lambda: DQN(SPEC, DQNConfig(hidden_sizes=(8,), batch_size=4, replay_capacity=256, learning_starts=64,
                                           replay_ratio=1 / 16, n_step=2, target_update_period=3, value_head="c51",
                                           num_atoms=11, dueling=True, noisy=True, priority_exponent=0.5)),
    "qr-dqn": lambda: DQN(SPEC, DQNConfig(hidden_sizes=(8,), batch_size=4, replay_capacity=256, learning_starts=64,
                                          replay_ratio=1 / 16, n_step=2, target_update_period=3, value_head="qr",
                                          num_atoms=8)),
    "ppo-gru": lambda: PPO(SPEC, PPOConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2, core="gru", core_size=8)),
    "pqn": lambda: PQN(SPEC, PQNConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2, epsilon_decay_updates=4)),
    "pqn-gru": lambda: PQN(SPEC, PQNConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2, epsilon_decay_updates=4,
                                           core="gru", core_size=8)),
    "random": lambda: RandomAgent(SPEC),
    "custom": lambda: LinearPG(SPEC),
}


def host(tree):
    return jax.tree.map(np.asarray, keys.raw(tree))


@pytest.fixture
def compiles(caplog):
    """How many times XLA compiles the Anakin program (`jit(chunk)`) from here on, read by calling
    it. (Not `_cache_size()`: on a mesh of several devices jit's dispatch cache may hold a second
    entry for calls that reuse the same compiled program.)"""
    jax.config.update("jax_log_compiles", True)
    caplog.set_level(logging.WARNING)
    start = [0]

    def count() -> int:
        records = caplog.records[start[0]:]
        start[0] = len(caplog.records)
        return sum("Finished XLA compilation of jit(chunk)" in r.getMessage() for r in records)

    yield count
    jax.config.update("jax_log_compiles", False)


@pytest.mark.slow(seconds=8)  # measured 3-13 s each with 2 workers (R2D2 the longest); 2-3x on a busy host
@pytest.mark.parametrize("devices", [1, 4])
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow(seconds=6)) if n in ("rainbow", "qr-dqn", "pqn-gru")
                                  else n for n in AGENTS])  # DQN's heads: slow tier (DQN itself is in the fast)
def test_every_agent_runs_in_the_program_with_no_retrace(name, devices, compiles):
    agent = AGENTS[name]()
    with AnakinLoop(agent, config(devices), updates_per_call=2) as loop:
        assert loop.envs_per_device == 8 // devices
        for updates in (2, 2, 2, 1):  # the last call runs fewer updates in the same program
            metrics, result = loop.call(updates)
            assert result.updates == updates and result.env_steps == updates * 8 * 8
            assert all(np.isfinite(v) for v in metrics.values()), metrics
            assert compiles() == (1 if updates == 2 and loop.version == 2 else 0)
        assert loop.version == 7
        if name in ("r2d2", "dqn", "rainbow", "qr-dqn"):  # its replay fills on every device and it learns
            assert metrics["replay_size"] > 4 and metrics["learning"] == 1.0


def test_a_final_short_call_skips_the_updates_beyond_its_count():
    with AnakinLoop(CountingAgent(SPEC), config(1), updates_per_call=3) as loop:
        loop.call(1)
        assert loop.version == 1 and int(np.asarray(loop.carry.experience["cycles"])[0]) == 1
        loop.call()
        assert loop.version == 4 and int(np.asarray(loop.carry.experience["cycles"])[0]) == 4
        # the step state (a per-env step counter) went on across the calls: 4 updates of 8 steps
        np.testing.assert_array_equal(np.asarray(loop.carry.step_state), 32)
        assert loop._chunk._cache_size() == 1  # one device: one entry


@pytest.mark.slow(seconds=12)
def test_env_streams_do_not_depend_on_the_number_of_devices():
    """The same 8 envs on 1, 2 and 4 devices: identical observations, rewards and flags (the
    random agent's actions differ per device key, so act with a fixed policy)."""
    streams = []
    for devices in (1, 2, 4):
        with AnakinLoop(CountingAgent(SPEC), config(devices, steps=40), updates_per_call=2) as loop:
            first = host(loop.carry.env_step)
            loop.call()
            lanes, last = host((loop.carry.lanes, loop.carry.env_step))
        flat = lambda t: jax.tree.map(lambda x: x.reshape(8, *x.shape[2:]), t)  # noqa: E731 - [D, n] -> [B]
        streams.append((flat(first), flat(last), flat(lanes)))
    for other in streams[1:]:
        jax.tree.map(np.testing.assert_array_equal, streams[0], other)
    assert streams[0][1].first.any() or streams[0][2].done.any() or (streams[0][2].elapsed < 80).any()


def _actor_key(seed: int) -> jax.Array:
    """The Sebulba loop's inferencer 0 key for `seed` on one device (its split of the actors' key),
    derived here by hand: what the Anakin loop's device 0 acts with."""
    _, key_actors = jax.random.split(jax.random.key(seed))
    return jax.random.split(key_actors, 1)[0]


@pytest.mark.slow(seconds=8)
def test_the_acting_scan_gives_the_trajectories_of_a_plain_reference_cycle():
    """`anakin_program.rollout` (the program's acting: a scan of Agent.step and JaxEnv.step) against
    `tests/support/reference.py`: jitted Agent.step per env step on `envs.make`'s pool of the same
    env and seed, the trajectory stacked and the episodes summed with numpy. Three calls in a row:
    the step state, lanes, last env step and running sums it returns carry the envs on."""
    agent = SimplePolicyGradient(SPEC, SPGConfig(hidden_sizes=(16,)))
    networks = jax.device_get(agent.init_networks(jax.random.key(1)))
    env, seed, key = anakin.make_env(config(1, num_envs=4)), 3, _actor_key(3)
    lanes, first = env.reset_as_pool(seed, 4)
    act = jax.jit(lambda *state: anakin_program.rollout(agent, env, networks, *state, jnp.int32(0), 12))
    state = (agent.init_step_state(networks, 4, key), lanes, EnvStep(*first),
             (jnp.zeros(4, jnp.float32), jnp.zeros(4, jnp.int32)))
    got = []
    for _ in range(3):
        traj, *state = act(*state)
        got.append(host(traj))
    reference = ReferenceCycle(agent, networks, ENV, 4, seed, key)
    want = [reference.run(12) for _ in range(3)]
    reference.close()
    assert sum(int(np.isfinite(t.episode_return).sum()) for t in want) >= 2  # episodes end and restart within
    jax.tree.map(np.testing.assert_array_equal, got, want)


@pytest.mark.slow(seconds=22)
def test_the_programs_update_is_the_reference_trajectory_then_the_sebulba_learner_bit_for_bit():
    """Anakin's first update (acting and learning in the compiled program) against a plain
    rebuild outside it: the reference cycle's trajectory (`tests/support/reference.py`: jitted
    Agent.step per env step on `envs.make`'s pool of the same env and seed, with the actor key
    derived by hand), then Learner.update on it with the same networks and key. Bit-equal
    networks and metrics, and the same episodes: the program acts as the Sebulba cycle does and
    learns with the same learner_step."""
    agent = PPO(SPEC, PPOConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2))
    cfg = config(1, num_envs=4, steps=16)
    with AnakinLoop(agent, cfg, updates_per_call=1) as loop:
        networks, opt_state = host((loop.carry.networks, loop.carry.opt_state))
        key = np.asarray(jax.random.key_data(loop.carry.key))
        metrics, result = loop.call()
        after = host(loop.carry.networks)
    reference = ReferenceCycle(agent, networks, ENV, 4, cfg.seed, _actor_key(cfg.seed))
    initial = reference.step_state
    traj = reference.run(16)
    final = reference.step_state
    reference.close()
    np.testing.assert_array_equal(result.episode_returns, traj.episode_return[np.isfinite(traj.episode_return)])
    assert result.episode_returns.size >= 1
    sharding = LearnerSharding.create(loop.devices, 4)
    learner = Learner(agent, sharding, ExperienceLayout(1, 4, 16), jax.random.key(0))
    learner.networks = jax.device_put(networks, sharding.replicated)
    learner.opt_state = jax.device_put(opt_state, sharding.replicated)
    learner._key = jax.device_put(jax.random.wrap_key_data(key), sharding.replicated)
    place = lambda t: agent.shard_step_state(t, sharding)  # noqa: E731
    m = learner.update(place(initial), place(final), sharding.trajectory(jax.tree.map(jnp.asarray, traj)))
    jax.tree.map(np.testing.assert_array_equal, after, host(learner.networks))
    for k, v in metrics.items():
        assert float(m[k]) == pytest.approx(v, rel=0, abs=0), k


@pytest.mark.slow(seconds=24)
def test_a_resumed_run_ends_bit_identical_to_an_uninterrupted_one(tmp_path):
    agent = PPO(SPEC, PPOConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=1))
    cfg = config(2, num_envs=4, steps=8)
    with AnakinLoop(agent, cfg, updates_per_call=2) as loop:
        loop.run(max_cycles=5)
        whole = host((loop.carry, loop.window.state()))
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=1000, save_experience=True)
    with AnakinLoop(agent, cfg, updates_per_call=2) as loop:
        ctx = loop.run(max_cycles=3, checkpointer=Checkpointer(ckpt))
        assert ctx.learner_steps == 3 and Checkpointer(ckpt).latest_step() == 3
    with AnakinLoop(agent, cfg, updates_per_call=2) as loop:
        ctx = loop.run(max_cycles=5, checkpointer=Checkpointer(ckpt), resume=True)
        assert ctx.learner_steps == 5 and ctx.env_steps == 5 * 32
        resumed = host((loop.carry, loop.window.state()))
    jax.tree.map(np.testing.assert_array_equal, whole, resumed)


def test_an_env_state_with_zero_size_arrays_checkpoints_and_resumes_bit_identical(tmp_path, monkeypatch):
    """Orbax cannot write an array with no elements, and an env's state may hold some (MJX's, under
    MuJoCo Playground): the checkpoint leaves them out, the restore builds them back, and the
    resumed run ends as an uninterrupted one."""
    from envs.jax.core import JaxEnv
    from envs.jax.registry import make_raw
    from sebulba.loop import anakin
    from tests.support.jax_envs import WithEmptyLeaf

    monkeypatch.setattr(anakin, "make_env", lambda config: JaxEnv(WithEmptyLeaf(make_raw(ENV)), None))
    agent, cfg = LinearPG(SPEC), config(1, num_envs=4, steps=8, seed=5)
    with AnakinLoop(agent, cfg, updates_per_call=2) as loop:
        loop.run(max_cycles=5)
        whole = host((loop.carry, loop.window.state()))
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=1000)
    with AnakinLoop(agent, cfg, updates_per_call=2) as loop:
        loop.run(max_cycles=3, checkpointer=Checkpointer(ckpt))
    assert Checkpointer(ckpt).latest_step() == 3
    with AnakinLoop(agent, cfg, updates_per_call=2) as loop:
        ctx = loop.run(max_cycles=5, checkpointer=Checkpointer(ckpt), resume=True)
        assert ctx.learner_steps == 5
        empty = loop.carry.lanes.state[1]
        resumed = host((loop.carry, loop.window.state()))
    assert {k: (x.shape, x.dtype) for k, x in empty.items()} == {"act": ((1, 4, 0), jnp.float32),
                                                                  "contacts": ((1, 4, 3, 0), jnp.int32)}
    jax.tree.map(np.testing.assert_array_equal, whole, resumed)


class NaNAfter(LinearPG):
    """Its loss turns NaN from the learner's third update on."""

    def loss(self, networks, experience, key):
        loss, metrics = super().loss(networks, experience, key)
        return jnp.where(experience.policy_version >= 2, jnp.nan, loss), metrics


def test_a_non_finite_update_raises_naming_it_and_keeps_the_last_good_state():
    with AnakinLoop(NaNAfter(SPEC), config(1), updates_per_call=4) as loop:
        with pytest.raises(NonFiniteError, match="learner step 3:") as e:
            loop.call()
        assert e.value.step == 3 and loop.version == 2
        good = host(loop.carry.networks)
        assert all(np.isfinite(x).all() for x in jax.tree.leaves(good))


# ---------------------------------------------------------------- entry points
@pytest.mark.slow(seconds=25)  # 7 s with the suite's compilation cache warm; 25-57 s cold beside other workers
@pytest.mark.parametrize("seed", [0])  # seeds 0-2: benchmarks/bench_anakin.py --bars (BENCHMARKS.md)
def test_learning_bar_ppo_on_cartpole_in_the_anakin_loop(seed, tmp_path, env="gymnax/CartPole-v1"):
    """`python -m experiments.ppo --env gymnax/CartPole-v1` (the id selects the Anakin loop), with
    the classic-control preset (8 envs x 128 steps): mean return >= 475 over the last 20 episodes
    within its 200k env steps. (On the built-in CartPole-v1, `--loop anakin` is the same run as the
    no-flag Sebulba one, bit for bit: the bar of tests/test_ppo.py, and
    `test_anakin_and_sebulba_sync_learn_the_same_networks_on_the_same_envs` below.)"""
    out = run_experiment("experiments.ppo", f"--env={env}", f"--seed={seed}", f"--logdir={tmp_path}",
                         "--noprogress", "--checkpoint_every=0")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"Anakin loop: 8 {env} envs" in out.stderr
    final = float(out.stdout.split("episode_return_mean ")[1].split()[0])
    assert final >= 475, out.stdout
    run_dir, row = last_metrics(tmp_path)
    assert "approx_kl" in row and int(row["env_steps"]) >= 200_000


@pytest.mark.slow(seconds=25)  # ~22 s cold on a quiet 2-core host
@pytest.mark.parametrize("seed", [0])  # seeds 0-2: benchmarks/bench_anakin.py --bars (BENCHMARKS.md)
def test_learning_bar_impala_on_gymnax_cartpole(seed, tmp_path):
    """`python -m experiments.impala --env gymnax/CartPole-v1` (its classic-control preset, 32
    envs x 20 steps): mean return >= 475 over the last 20 episodes within its 400k env steps.
    (R2D2's bar, >= 400 within its 500k, is `benchmarks/bench_anakin.py --bars`: ~100 s a seed.)"""
    out = run_experiment("experiments.impala", "--env=gymnax/CartPole-v1", f"--seed={seed}", f"--logdir={tmp_path}",
                         "--noprogress", "--checkpoint_every=0")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Anakin loop: 32 gymnax/CartPole-v1 envs" in out.stderr
    final = float(out.stdout.split("episode_return_mean ")[1].split()[0])
    assert final >= 475, out.stdout
    assert int(last_metrics(tmp_path)[1]["env_steps"]) == 400_000


@pytest.mark.slow(seconds=16)
def test_a_cli_run_is_stopped_by_its_budget_checkpoints_and_resumes(tmp_path):
    args = ("experiments.ppo", "--env=gymnax/CartPole-v1", f"--logdir={tmp_path}", "--noprogress", "--num_envs=4",
            "--steps_per_cycle=16", "--checkpoint_every=100")
    out = run_experiment(*args, "--total_env_steps=640")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, row = last_metrics(tmp_path)
    assert int(row["env_steps"]) == 640 and int(row["learner_steps"]) == 10  # 10 updates of 4 x 16 steps
    assert sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit()) == [10]
    out = run_experiment("experiments.ppo", f"--resume={run_dir}", "--total_env_steps=1280", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resumed from checkpoint 10" in out.stderr
    _, row = last_metrics(tmp_path)
    assert int(row["env_steps"]) == 1280 and int(row["learner_steps"]) == 20


@pytest.mark.slow(seconds=5)
def test_loop_anakin_on_a_host_env_is_one_line(tmp_path):
    out = run_experiment("experiments.ppo", "--loop=anakin", "--env=FrozenLake-v1", f"--logdir={tmp_path}",
                         "--noprogress")
    assert out.returncode == 2, out.stderr[-3000:]
    assert "error: the Anakin loop runs JAX-native envs" in out.stderr and "--loop sebulba" in out.stderr
    assert not list(tmp_path.iterdir())  # a run refused at setup leaves no directory


def test_the_runner_trains_a_loop_config_with_a_jax_id(tmp_path):
    """`sebulba.LoopConfig(env_id="gymnax/CartPole-v1")` with `runner.run`, as for a host env."""
    from sebulba.experiment import runner

    cfg = config(1, num_envs=4, steps=8, seed=3)
    result = runner.run("custom", LinearPG(SPEC), cfg, total_env_steps=96, logdir=str(tmp_path), flags={},
                        progress=False, checkpoints=runner.CheckpointFlags(every_learner_steps=2))
    assert result.final["env_steps"] == 96 and result.final["learner_steps"] == 3
    assert result.checkpoint_step == 3 and (result.run_dir.path / "metrics.csv").exists()


def test_a_stop_request_ends_the_run_after_the_call_and_saves(tmp_path):
    """What SIGTERM and Ctrl-C do (signals.graceful_stop → request_stop): the run ends after the
    current call, through the same middleware as the Sebulba loop's, and saves its state."""
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=1000)
    with AnakinLoop(LinearPG(SPEC), config(1), updates_per_call=3) as loop:
        seen = []

        def stop_at_first(ctx):
            seen.append(ctx.learner_steps)
            loop.request_stop()

        ctx = loop.run(max_cycles=100, middleware=[stop_at_first], checkpointer=Checkpointer(ckpt))
    assert seen == [3] and ctx.learner_steps == 3 and ctx.env_steps == 3 * 64
    assert Checkpointer(ckpt).latest_step() == 3 and loop.reports[-1]["learner_steps"] == 3


@pytest.mark.slow(seconds=40)
@pytest.mark.multiprocess
@pytest.mark.timeout(600)
@pytest.mark.xdist_group("multihost")  # one worker: each job takes both cores
def test_a_two_process_job_trains_checkpoints_and_resumes(tmp_path, num_seeds=2):
    """Two processes of 2 CPU devices each: one program over the 4 devices (the initial state
    built from the seed in every process), a checkpoint of every process's shards, a resume to a
    larger budget, and the trained policy loaded from the run directory: every replica's of
    --num_seeds 2, replica 0 as a one-seed run's, and each one's policy. (A one-seed job runs the
    same steps but for the replica axis, which the 4-device single-process tests above cover; it
    is left out for the suite's time: each job takes both cores for about 17 s.)"""
    from tests.support.job import Job, complete_checkpoints

    args = ["--env=gymnax/CartPole-v1", "--noprogress", "--num_envs=4", "--steps_per_cycle=16", "--checkpoint_every=5",
            f"--num_seeds={num_seeds}", "--num_epochs=1", "--num_minibatches=1",  # one step an update: few collectives
            "--core=gru", "--core_size=16"]  # a recurrent core's state in every process's shards
    Job("experiments.ppo", [*args, f"--logdir={tmp_path / 'runs'}", "--total_env_steps=1280"], tmp_path / "a").assert_ok()
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert complete_checkpoints(run_dir) == [10]  # 10 updates of the job's 8 envs x 16 steps
    job = Job("experiments.ppo", [f"--resume={run_dir}", "--total_env_steps=2560", "--noprogress"], tmp_path / "b")
    job.assert_ok()
    assert "resumed from checkpoint 10" in job.output(1)[1]
    assert complete_checkpoints(run_dir) == [10, 20]
    _, row = last_metrics(tmp_path / "runs")
    assert int(row["env_steps"]) == 2560 and int(row["learner_steps"]) == 20
    policies = [sebulba.load_policy(run_dir, replica=r).networks for r in range(num_seeds)]
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(policies))
    if num_seeds > 1:
        seeds = [float(row[f"episode_return_mean_seed{s}"]) for s in range(num_seeds)]
        assert float(row["episode_return_mean"]) == pytest.approx(np.mean(seeds))
        assert float(row["episode_return_mean_min"]) == min(seeds)
        assert float(row["episode_return_mean_max"]) == max(seeds)
        assert not all(np.array_equal(a, b) for a, b in zip(*(jax.tree.leaves(p) for p in policies)))


def test_evaluation_during_an_anakin_run_plays_the_staged_networks(tmp_path):
    from sebulba.experiment import runner

    cfg = config(1, num_envs=4, steps=8)
    result = runner.run("custom", LinearPG(SPEC), cfg, total_env_steps=256, logdir=str(tmp_path), flags={},
                        progress=False, checkpoints=runner.CheckpointFlags(every_learner_steps=0),
                        evaluation=runner.EvalFlags(every_env_steps=64, episodes=2))
    import csv

    rows = [r for r in csv.DictReader((result.run_dir.path / "metrics.csv").open()) if r.get("eval_return_mean")]
    assert rows and all(np.isfinite(float(r["eval_return_mean"])) for r in rows)
    assert int(rows[-1]["eval_env_steps"]) == 256  # the last evaluation is of the final networks


def muzero(spec):
    pytest.importorskip("mctx", reason="the planning extra is not installed: pip install -e '.[planning]'")
    from sebulba.agents.muzero.agent import MuZero
    from sebulba.agents.muzero.config import MuZeroConfig

    return MuZero(spec, MuZeroConfig(hidden_sizes=(8,), latent_size=8, sequence_length=32, unroll_steps=3, td_steps=4,
                                     num_simulations=4, batch_size=4, optims_per_cycle=2, replay_capacity=64,
                                     min_replay_size=4))


@pytest.mark.slow(seconds=5)
@pytest.mark.parametrize("env_id, name", [("CartPole-v1", "ppo"), ("gymnax/CartPole-v1", "ppo"), ("CartPole-v1", "dqn"),
                                          ("CartPole-v1", "ppo-gru"), ("CartPole-v1", "pqn"), ("Pendulum-v1", "sac"),
                                          ("Pendulum-v1", "td3"),
                                          pytest.param("CartPole-v1", "muzero", marks=pytest.mark.slow(seconds=30))])
def test_anakin_and_sebulba_sync_learn_the_same_networks_on_the_same_envs(env_id, name):
    """One device, one inferencer, the same seed: the Anakin loop starts from the Sebulba loop's
    keys and envs (the built-in CartPole: the stateless compiled env against the pool's own
    kernel; gymnax: the JAX pool over the same env), so both step identical env streams, see the
    same episodes and learn bit-identical networks: on-policy, from a replay (DQN: its learning bar
    runs in the Anakin loop for this, as PQN's does), and with a recurrent core."""
    from sebulba.loop.loop import GymnasiumLoop

    spec = envs.make_spec(env_id)
    steps = 120 if env_id == "Pendulum-v1" else 16  # Pendulum's episodes are 200 steps: two per env
    cfg = dict(env_id=env_id, num_envs=8, steps_per_cycle=steps, seed=3, log_every_s=1000.0)
    agent = {
        "ppo": lambda: PPO(spec, PPOConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2)),
        "ppo-gru": lambda: PPO(spec, PPOConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2, core="gru",
                                               core_size=8)),
        "pqn": lambda: PQN(spec, PQNConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2, epsilon_decay_updates=3,
                                           reward_scale=0.1)),
        "dqn": lambda: DQN(spec, DQNConfig(hidden_sizes=(8,), batch_size=4, replay_capacity=256, learning_starts=64,
                                           replay_ratio=1 / 16, n_step=2, target_update_period=3)),
        **{key: (lambda a=a, c=c: a(spec, c(hidden_sizes=(8,), batch_size=4, replay_capacity=1024, learning_starts=64,
                                             replay_ratio=1 / 16)))
           for key, a, c in (("sac", SAC, SACConfig), ("td3", TD3, TD3Config))},
        "muzero": lambda: muzero(spec),  # planning in the act: Gumbel MuZero's search on mctx
    }[name]
    anakin = AnakinLoop(agent(), sebulba.LoopConfig(loop="anakin", **cfg), updates_per_call=4)
    _, result = anakin.call()
    with GymnasiumLoop(agent(), sebulba.LoopConfig(async_mode=False, inferencers_per_device=1, loop="sebulba",
                                                   **cfg)) as host:
        host.run(max_cycles=4)
        assert result.episode_returns.size >= (5 if name == "muzero" else 10)  # MuZero plans: longer episodes
        # TD3's actions (the actor's output plus its Gaussian noise, clipped) come out of the two
        # compiled programs a rounding apart (returns 2e-7 relative after 4 cycles; 2026-11-29):
        # the same keys and envs, checked to float tolerance; every other agent bit for bit.
        same = np.testing.assert_array_equal if name != "td3" else functools.partial(np.testing.assert_allclose,
                                                                                     rtol=1e-4, atol=1e-5)
        same(result.episode_returns[-len(host.window.returns):], list(host.window.returns))
        for a, b in zip(jax.tree.leaves(anakin.networks), jax.tree.leaves(host.learner.networks), strict=True):
            same(np.asarray(a), np.asarray(b))
