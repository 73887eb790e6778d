"""IPPO (PPO on a multi-player pool, one network for every player) through the experiment kit:
per-player returns in the metrics and the learning curve, and the learning bar on MPE's
simple_spread_v3 with `python -m experiments.ppo`'s preset."""

import math
from collections import deque
from types import SimpleNamespace

import jax
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents import RandomAgent
from sebulba.agents.ppo import PPO, PPOConfig
from sebulba.experiment import MetricsWriter, plot_learning_curve
from sebulba.loop.metrics import MetricsWindow, teams
from tests.support.cli import last_metrics, run_experiment

pytest.importorskip("mpe2")

SPREAD = "pettingzoo/mpe2/simple_spread_v3"
TAG = "pettingzoo/mpe2/simple_tag_v3"


def cycle(returns, players):
    return SimpleNamespace(episode_returns=np.array(returns, np.float32), episode_lengths=np.full(len(returns), 25),
                           episode_players=np.array(players), env_steps=10)


def context(result):
    return SimpleNamespace(result=result, fetch_wait_s=0.0, policy_lag=0.0, env_steps=10, learner_steps=1,
                           train_metrics={})


def test_per_player_keys_are_in_every_report_from_the_first():
    """metrics.csv's columns are the first report's: a player's keys are there (NaN) before its
    first episode ends, and its mean is over its own episodes only."""
    w = MetricsWindow(recent_episodes=2, num_players=3)
    first = w.report(context(cycle([], [])), 0.0, 1)
    assert [k for k in first if k.endswith("_player2")] == ["episode_return_mean_player2", "episode_length_mean_player2"]
    assert math.isnan(first["episode_return_mean_player0"])
    for returns, players in (([-1.0, -2.0, -3.0], [0, 1, 2]), ([-5.0, -7.0], [0, 0]), ([-4.0], [2])):
        w.add(context(cycle(returns, players)))
    r = w.report(context(cycle([], [])), 0.0, 1)
    assert r["episode_return_mean_player0"] == -6.0  # its last 2 episodes
    assert r["episode_return_mean_player1"] == -2.0 and r["episode_return_mean_player2"] == -3.5
    assert r["episode_return_mean"] == pytest.approx(np.mean([-1, -2, -3, -5, -7, -4]))  # 2 env episodes x 3 players
    assert isinstance(w.returns, deque) and w.returns.maxlen == 6


def test_teams_returns_on_simple_tag():
    """simple_tag's adversary_0..2 and agent_0 are two teams: each team's mean return is reported
    next to each player's (the spec names the players, in row order)."""
    spec = envs.make_spec(TAG, pad_observations=True)
    assert spec.player_names == ("adversary_0", "adversary_1", "adversary_2", "agent_0")
    assert envs.make_spec(SPREAD).player_names == ("agent_0", "agent_1", "agent_2")  # one team: no team keys
    cfg = sebulba.LoopConfig(env_id=TAG, env_kwargs={"pad_observations": True, "num_threads": 1}, num_envs=2,
                             steps_per_cycle=26, async_mode=False, inferencers_per_device=1, log_every_s=1000.0)
    with sebulba.GymnasiumLoop(RandomAgent(spec), cfg) as loop:
        loop.run(max_cycles=2)
        report, w = loop.reports[-1], loop.window
    adversaries = [r for p in range(3) for r in w.player_returns[p]]
    assert len(adversaries) == 2 * 2 * 3 and report["episode_return_mean_adversary"] == pytest.approx(np.mean(adversaries))
    assert report["episode_return_mean_agent"] == pytest.approx(np.mean(w.player_returns[3]))
    assert "episode_return_mean_player3" in report
    assert teams(spec.player_names) == [0, 0, 0, 1]
    assert teams(["agent_0", "agent_1", "agent_2"]) == [] and teams(["first_0", "second_0"]) == [] and teams([]) == []


def test_learning_curve_draws_each_players_returns(tmp_path):
    def write(directory, players):
        with MetricsWriter(directory) as w:
            for i in range(1, 30):
                per_player = {f"episode_return_mean_player{p}": -30.0 + i * (p + 1) / 3 for p in range(players)}
                w.write({"env_steps": i * 1000, "episode_return_mean": -30.0 + i / 2, **per_player})
        return plot_learning_curve(directory / "metrics.csv", directory / "curve.png").read_bytes()

    with_players, without = write(tmp_path / "a", 3), write(tmp_path / "b", 0)
    assert with_players[:4] == b"\x89PNG" and with_players != without  # the players' lines are drawn


@pytest.mark.slow(seconds=8)
def test_a_simple_spread_run_reports_each_players_returns(tmp_path):
    """`python -m experiments.ppo --env pettingzoo/mpe2/simple_spread_v3` (the preset: IPPO, the
    player's one-hot in the observation), a few updates: metrics.csv and the PNG have each
    player's returns. That IPPO learns the task is checked on JaxMARL's twin of it (the same
    dynamics and rewards, the same preset) in the Anakin loop (tests/test_jaxmarl.py), on
    connect four's self-play in this loop (tests/test_self_play.py), and here at 1M env steps,
    seeds 0-2, in BENCHMARKS.md (`benchmarks/bench_ippo.py`: -18.4, -20.1, -18.8 against a
    random policy's -26.4); 80k steps of it took 35-55 s of the suite for a 3-point margin."""
    out = run_experiment("experiments.ppo", f"--env={SPREAD}", "--total_env_steps=4096", "--log_every_s=0.5",
                         f"--logdir={tmp_path}", "--noprogress", learning_curve=True)
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path)
    assert (run_dir / "learning_curve.png").exists() and int(last["env_steps"]) >= 4096
    assert all(np.isfinite(float(last[f"episode_return_mean_player{p}"])) for p in range(3)), last
    assert float(last["episode_return_mean"]) == pytest.approx(np.mean([float(last[f"episode_return_mean_player{p}"])
                                                                        for p in range(3)]), rel=1e-4)


def test_mappo_critic_reads_the_global_state_the_policy_does_not():
    """critic_state=True: the policy is a function of the player's observation only (acting stays
    decentralised), the value of the global state too; a pool of global_state=True feeds it."""
    spec = envs.make_spec(SPREAD, global_state=True, add_player_id=True)
    assert set(spec.observation_space.spaces) == {"obs", "state"} and spec.observation_space["state"].shape == (54,)
    agent = PPO(spec, PPOConfig(critic_state=True))
    nets = agent.init_networks(jax.random.key(0))
    rng = np.random.default_rng(0)
    obs = {"obs": rng.normal(size=(4, 21)).astype(np.float32), "state": rng.normal(size=(4, 54)).astype(np.float32)}
    other = {"obs": obs["obs"], "state": rng.normal(size=(4, 54)).astype(np.float32)}
    (p1, v1, _), (p2, v2, _) = (agent.net.apply(nets["params"], o) for o in (obs, other))
    np.testing.assert_array_equal(p1.logits, p2.logits)
    assert not np.allclose(v1, v2)
    with pytest.raises(ValueError, match="critic_state=True \\(MAPPO\\) needs a Dict observation of 'obs' and 'state'"):
        PPO(envs.make_spec(SPREAD), PPOConfig(critic_state=True))
    with pytest.raises(ValueError, match="global_state=True: 'pettingzoo/tests.support/dying_agents' has no global state"):
        envs.make_spec("pettingzoo/tests.support/dying_agents", global_state=True)


def test_mappo_learns_through_the_loop_from_the_pools_global_state():
    spec = envs.make_spec(SPREAD, global_state=True, add_player_id=True)
    cfg = sebulba.LoopConfig(env_id=SPREAD, env_kwargs={"global_state": True, "add_player_id": True, "num_threads": 1},
                             num_envs=2, steps_per_cycle=8, async_mode=False, inferencers_per_device=1,
                             log_every_s=1000.0)
    with sebulba.GymnasiumLoop(PPO(spec, PPOConfig(critic_state=True, num_minibatches=2, num_epochs=1)), cfg) as loop:
        loop.run(max_cycles=2)
        assert np.isfinite(loop.reports[-1]["value_loss"]) and loop.learner.version == 2
