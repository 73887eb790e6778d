"""`num_seeds`: independent replicas trained in one Anakin program (PureJaxRL's `vmap(train)`),
replica s being the run of seed + s, with per-seed metrics, the curve's band, checkpoints that
resume and a policy per replica."""

from __future__ import annotations

import csv
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba import keys
from sebulba.agents.ppo import PPO, PPOConfig
from sebulba.experiment.progress import ProgressBar
from sebulba.loop.anakin import AnakinLoop
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.learner import NonFiniteError
from tests.support.agents import LinearPG
from tests.support.cli import last_metrics, run_experiment
from tests.test_anakin import AGENTS, config

ENV = "gymnax/CartPole-v1"
SPEC = envs.make_spec(ENV)


def host(tree):
    return jax.tree.map(np.asarray, keys.raw(tree))


def ppo() -> PPO:
    return PPO(SPEC, PPOConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2))


@pytest.mark.slow(seconds=20)
@pytest.mark.parametrize("devices", [1, 2])
def test_replica_s_is_the_run_of_seed_plus_s(devices):
    """Three replicas from seed 5 against three one-seed runs of seeds 5, 6, 7: the same env
    streams exactly, and the same networks up to float rounding (a batched matmul sums in
    another order than one matmul)."""
    with AnakinLoop(ppo(), config(devices, seed=5, num_seeds=3), updates_per_call=2) as loop:
        loop.call()
        _, result = loop.call()
        many = host(loop.carry)
        assert loop.version == 4 and len(result.seed_returns) == 3
    for s in range(3):
        with AnakinLoop(ppo(), config(devices, seed=5 + s), updates_per_call=2) as loop:
            loop.call()
            loop.call()
            one = host(loop.carry)
        # per-device leaves: [devices, replicas, ...]; replicated ones: [replicas, ...]
        jax.tree.map(np.testing.assert_array_equal, jax.tree.map(lambda x: x[:, s], (many.lanes, many.env_step)),
                     (one.lanes, one.env_step))
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                     jax.tree.map(lambda x: x[s], many.networks), one.networks)
        assert not all(np.array_equal(a[0], a[1]) for a in jax.tree.leaves(many.networks))  # replicas differ


@pytest.mark.slow(seconds=30)
@pytest.mark.parametrize("name", ["ppo", "impala", "r2d2", "custom", "ppo-gru"])
def test_every_agent_trains_replicas_on_two_devices_with_no_retrace(name):
    agent = AGENTS[name]()
    with AnakinLoop(agent, config(2, num_seeds=2), updates_per_call=2) as loop:
        loop.call()
        loop.call(1)  # a short call: the same program
        assert loop.version == 3 and loop._chunk._cache_size() <= 2
        assert all(np.isfinite(x).all() for x in jax.tree.leaves(host(loop.carry.networks)))


class NaNAfter(LinearPG):
    def loss(self, networks, experience, key):
        loss, metrics = super().loss(networks, experience, key)
        return jnp.where(experience.policy_version >= 2, jnp.nan, loss), metrics


def test_a_non_finite_replica_stops_the_run_naming_it():
    with AnakinLoop(NaNAfter(SPEC), config(1, seed=4, num_seeds=2), updates_per_call=4) as loop:
        with pytest.raises(NonFiniteError, match=r"learner step 3: .* of replica\(s\) \[0, 1\] \(seed 4, 5\)"):
            loop.call()
        assert loop.version == 2


def test_per_seed_metrics_are_each_replicas_recent_return_with_their_mean_min_and_max():
    with AnakinLoop(LinearPG(SPEC), config(1, num_seeds=3, steps=32), updates_per_call=4) as loop:
        _, result = loop.call()
        metrics = loop.seed_windows.metrics(result.seed_returns)
    means = [float(np.mean(r[-20:])) for r in result.seed_returns]
    assert [metrics[f"episode_return_mean_seed{s}"] for s in range(3)] == pytest.approx(means)
    assert metrics["episode_return_mean"] == pytest.approx(np.mean(means))
    assert metrics["episode_return_mean_min"] == pytest.approx(min(means))
    assert metrics["episode_return_mean_max"] == pytest.approx(max(means))
    assert sorted(np.concatenate(result.seed_returns)) == sorted(result.episode_returns)


@pytest.mark.slow(seconds=20)
def test_a_resumed_num_seeds_run_ends_bit_identical_to_an_uninterrupted_one(tmp_path):
    cfg = config(1, num_envs=4, steps=8, num_seeds=2)
    with AnakinLoop(ppo(), cfg, updates_per_call=2) as loop:
        loop.run(max_cycles=5)
        whole = host((loop.carry, loop.window.state(), loop.seed_windows.state()))
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=1000, save_experience=True)
    with AnakinLoop(ppo(), cfg, updates_per_call=2) as loop:
        loop.run(max_cycles=3, checkpointer=Checkpointer(ckpt))
    with AnakinLoop(ppo(), cfg, updates_per_call=2) as loop:
        ctx = loop.run(max_cycles=5, checkpointer=Checkpointer(ckpt), resume=True)
        assert ctx.learner_steps == 5
        resumed = host((loop.carry, loop.window.state(), loop.seed_windows.state()))
    jax.tree.map(np.testing.assert_array_equal, whole, resumed)
    with AnakinLoop(ppo(), config(1, num_envs=4, steps=8, num_seeds=3), updates_per_call=2) as loop:
        with pytest.raises(ValueError, match="num_seeds"):
            loop.restore(Checkpointer(ckpt))


def test_the_sebulba_loop_refuses_num_seeds():
    from sebulba.loop.loop import GymnasiumLoop

    with pytest.raises(ValueError, match="num_seeds=2 .* the Anakin loop"):
        GymnasiumLoop(LinearPG(envs.make_spec("CartPole-v1")), sebulba.LoopConfig(env_id="CartPole-v1", num_seeds=2))
    with pytest.raises(ValueError, match="num_seeds must be a positive int"):
        sebulba.LoopConfig(env_id=ENV, num_seeds=0)


def test_the_progress_line_shows_the_seeds_range():
    report = {"sps": 1000.0, "episode_return_mean": 50.0, "episode_return_mean_min": 20.5,
              "episode_return_mean_max": 80.25, "policy_lag": 0.0}
    assert "return 50.0 (20.5-80.2)" in ProgressBar.summary(report)
    assert "return 50.0, " in ProgressBar.summary({"sps": 1.0, "episode_return_mean": 50.0})


def test_the_learning_curve_shades_the_seeds_band(tmp_path):
    from PIL import Image

    from sebulba.experiment.curves import plot_learning_curve

    rows = [(1000 * i, i, 10.0 * i, 5.0 * i, 20.0 * i) for i in range(1, 6)]
    for name, cols in (("band", 5), ("line", 3)):
        with (tmp_path / f"{name}.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["env_steps", "wall_time", "episode_return_mean", "episode_return_mean_min",
                        "episode_return_mean_max"][:cols])
            w.writerows(r[:cols] for r in rows)
    shaded = []
    for name in ("band", "line"):
        png = plot_learning_curve(tmp_path / f"{name}.csv", tmp_path / f"{name}.png")
        pixels = np.asarray(Image.open(png).convert("RGB")).astype(int)
        # matplotlib's default blue at alpha 0.25 over white: (191, 215, 234)
        shaded.append(int((np.abs(pixels - [191, 215, 234]).sum(axis=-1) < 12).sum()))
    assert shaded[0] > 5000 and shaded[1] < 500, shaded  # a line's anti-aliased edge has a few


@pytest.mark.slow(seconds=30)
def test_a_cli_num_seeds_run_writes_each_seed_and_evaluates_each_replica(tmp_path):
    out = run_experiment("experiments.ppo", "--env=gymnax/CartPole-v1", f"--logdir={tmp_path}", "--noprogress",
                         "--num_envs=4", "--steps_per_cycle=16", "--num_seeds=3", "--total_env_steps=1280",
                         "--hidden_sizes=16", learning_curve=True)
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, row = last_metrics(tmp_path)
    assert int(row["env_steps"]) == 1280  # each replica's budget
    seeds = [float(row[f"episode_return_mean_seed{s}"]) for s in range(3)]
    assert float(row["episode_return_mean"]) == pytest.approx(np.mean(seeds))
    assert float(row["episode_return_mean_min"]) == min(seeds) and float(row["episode_return_mean_max"]) == max(seeds)
    assert (run_dir / "learning_curve.png").stat().st_size > 0
    returns = []
    for replica in (0, 2):
        ev = run_experiment("experiments.evaluate", str(run_dir), f"--replica={replica}", "--episodes=2")
        assert ev.returncode == 0, ev.stderr[-3000:]
        assert f"(replica {replica})" in ev.stdout
        returns.append(json.loads((run_dir / "eval.json").read_text())["returns"])
    assert returns[0] != returns[1]  # different networks
    bad = run_experiment("experiments.evaluate", str(run_dir), "--replica=3")
    assert bad.returncode != 0 and "replicas 0..2 (--num_seeds 3); replica 3 is not one of them" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    policy = sebulba.load_policy(run_dir, replica=2)
    action, _ = policy.act(np.zeros((3, 4), np.float32))
    assert action.shape == (3,)
    with pytest.raises(ValueError, match="replica 5 is not one of them"):
        sebulba.load_policy(run_dir, replica=5)


@pytest.mark.slow(seconds=6)
def test_num_seeds_on_the_sebulba_loop_is_one_line(tmp_path):
    out = run_experiment("experiments.ppo", "--env=CartPole-v1", "--num_seeds=2", f"--logdir={tmp_path}",
                         "--noprogress")
    assert out.returncode == 2, out.stderr[-3000:]
    assert "--num_seeds 2 trains replicas in one program: the Anakin loop's" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_the_band_of_a_job_is_over_its_joined_replica_means_not_a_mean_of_each_process_band():
    """Two processes see different episodes of the same two replicas: the job's per-replica means
    are their averages, and its min and max are taken over those (a mean of each process's min would
    mix replicas: 28.425 where the job's lowest replica mean is 28.55, found by the two-process test)."""
    from sebulba.loop.metrics import seed_band

    assert seed_band({"sps": 1.0}) == {"sps": 1.0}
    band = seed_band({"episode_return_mean_seed0": 1.0, "episode_return_mean_seed1": float("nan"),
                      "episode_return_mean_seed2": 3.0})
    assert (band["episode_return_mean"], band["episode_return_mean_min"], band["episode_return_mean_max"]) == (2.0, 1.0, 3.0)
    p0, p1 = {"episode_return_mean_seed0": 10.0, "episode_return_mean_seed1": 30.0}, \
        {"episode_return_mean_seed0": 40.0, "episode_return_mean_seed1": 20.0}
    joined = seed_band({k: (p0[k] + p1[k]) / 2 for k in p0})
    assert joined["episode_return_mean_min"] == 25.0 and joined["episode_return_mean_max"] == 25.0
    assert (seed_band(p0)["episode_return_mean_min"] + seed_band(p1)["episode_return_mean_min"]) / 2 == 15.0  # the old figure
