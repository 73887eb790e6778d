"""SAC and TD3 as agents (their math: tests/test_sac.py, tests/test_td3.py): both loops, the CLI,
a trained run reloaded, and the learning bars on Pendulum-v1."""

from __future__ import annotations

import logging

import jax
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents.sac import SAC, SACConfig
from sebulba.agents.td3 import TD3, TD3Config
from sebulba.loop.anakin import AnakinLoop
from tests.support.cli import last_metrics, run_experiment

PENDULUM = "gymnax/Pendulum-v1"
SMALL = dict(hidden_sizes=(16,), batch_size=8, replay_capacity=512, learning_starts=64, replay_ratio=1 / 16)
AGENTS = {"sac": lambda spec: SAC(spec, SACConfig(**SMALL)), "td3": lambda spec: TD3(spec, TD3Config(**SMALL))}


@pytest.fixture
def compiles(caplog):
    jax.config.update("jax_log_compiles", True)
    caplog.set_level(logging.WARNING)
    yield lambda: sum("Finished XLA compilation of jit(chunk)" in r.getMessage() for r in caplog.records)
    jax.config.update("jax_log_compiles", False)


@pytest.mark.slow(seconds=15)
@pytest.mark.parametrize("name", list(AGENTS))
def test_runs_in_the_anakin_program_on_four_devices_with_no_retrace(name, compiles):
    agent = AGENTS[name](envs.make_spec(PENDULUM))
    config = sebulba.LoopConfig(env_id=PENDULUM, num_envs=8, steps_per_cycle=8, learner_devices=(0, 1, 2, 3),
                                log_every_s=1000.0)
    with AnakinLoop(agent, config, updates_per_call=2) as loop:
        for _ in range(4):
            metrics, _ = loop.call(2)
            assert all(np.isfinite(v) for v in metrics.values()), metrics
        assert compiles() == 1
        assert metrics["learning"] == 1.0 and metrics["replay_size"] > 64 / 4
        assert int(np.asarray(loop.carry.networks.updates)) > 0


@pytest.mark.slow(seconds=20)
@pytest.mark.parametrize("name", ["sac", "td3"])
def test_cli_trains_on_the_host_pool_and_the_run_reloads_with_actions_in_bounds(name, tmp_path):
    out = run_experiment(f"experiments.{name}", "--total_env_steps=1500", "--learning_starts=500", "--batch_size=32",
                         "--hidden_sizes=32,32", f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path)
    assert run_dir.name.startswith(f"{name}-Pendulum-v1-") and float(last["learning"]) == 1.0
    policy = sebulba.load_policy(run_dir)
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    action, _ = policy.act(obs)
    assert action.shape == (5, 1) and (np.abs(action) <= 2.0).all()
    wrong = run_experiment(f"experiments.{name}", "--env=CartPole-v1", f"--logdir={tmp_path}", "--noprogress")
    assert wrong.returncode == 2
    assert "needs a continuous (Box) action space; CartPole-v1 has Discrete(2)" in wrong.stderr.strip().splitlines()[-1]


@pytest.mark.slow(seconds=50)
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["sac", "td3"])
def test_learning_bar_pendulum(name, tmp_path):
    """The preset's run: mean return >= -250 over the last 20 episodes within 20k env steps (seed 0;
    seeds 1, 2 in BENCHMARKS.md). As `--loop anakin`, which on the built-in Pendulum runs the
    no-flag run's envs and seeds in about 80% of its time: SAC's ends bit for bit where the no-flag
    run ends (-121.8); TD3's draws its exploration noise apart (-131.8 against -129.1; 2026-11-29)."""
    out = run_experiment(f"experiments.{name}", "--seed=0", "--loop=anakin", f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    _, last = last_metrics(tmp_path)
    assert 20_000 <= int(last["env_steps"]) < 21_000
    assert float(last["episode_return_mean"]) >= -250, last
