"""JaxMARL's MPE as the `jaxmarl` suite (envs/jax/jaxmarl.py): the pool's multi-player layout in
JAX (rows (env, player), the player's one-hot, the global state, per-env auto-reset), the same
spaces, observations and rewards as PettingZoo's mpe2 envs the host backend runs, and IPPO and
MAPPO on the Anakin loop (which learns what the Sebulba loop learns on the same envs)."""

from __future__ import annotations

import csv
import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest

if importlib.util.find_spec("jaxmarl") is None:  # not importorskip: importing JaxMARL costs each test worker ~5 s
    pytest.skip("the jaxmarl suite needs JaxMARL: pip install '.[jaxmarl]'", allow_module_level=True)

import envs  # noqa: E402
import sebulba  # noqa: E402
from envs.jax.registry import make_jax_env, make_raw  # noqa: E402
from sebulba.agents.ppo import PPO, PPOConfig  # noqa: E402
from sebulba.loop.anakin import AnakinLoop  # noqa: E402
from tests.support.cli import last_metrics, run_experiment  # noqa: E402

SPREAD = "jaxmarl/MPE_simple_spread_v3"
TAG = "jaxmarl/MPE_simple_tag_v3"
BOTH = dict(add_player_id=True, global_state=True)


def test_rows_are_env_major_with_the_players_one_hot_and_the_global_state():
    env = make_jax_env(SPREAD, **BOTH)
    assert env.num_players == 3 and env.player_names == ("agent_0", "agent_1", "agent_2")
    assert env.observation_space["obs"].shape == (21,) and env.observation_space["state"].shape == (54,)
    lanes, step = env.reset(jax.random.key(1), 4)
    assert jax.tree.leaves(lanes)[0].shape[0] == 4  # lanes per env, rows per player
    obs = jax.tree.map(np.asarray, step.obs)
    assert obs["obs"].shape == (12, 21) and obs["state"].shape == (12, 54) and step.first.shape == (12,)
    np.testing.assert_array_equal(obs["obs"][:, -3:], np.tile(np.eye(3, dtype=np.float32), (4, 1)))  # row % 3
    for e in range(4):  # the state is the env's: its players' own observations (without ids), in order
        rows = slice(3 * e, 3 * e + 3)
        np.testing.assert_array_equal(obs["state"][rows], np.broadcast_to(obs["obs"][rows, :18].reshape(-1), (3, 54)))
    assert not np.array_equal(obs["obs"][0, :18], obs["obs"][3, :18])  # envs differ
    # a player's own position (entries 2:4) is in the state at its own block
    np.testing.assert_array_equal(obs["state"][0, 18 + 2:18 + 4], obs["obs"][1, 2:4])


def test_the_time_limit_truncates_every_player_and_the_next_step_resets_the_env():
    env = make_jax_env(SPREAD)
    step_fn = jax.jit(env.step)
    lanes, first = env.reset(jax.random.key(2), 2)
    actions = np.array([1, 2, 3, 4, 0, 1], np.int32)
    for t in range(1, 26):
        lanes, step = step_fn(lanes, actions)
        assert not step.terminated.any() and not step.first.any()  # MPE has no terminal state
        assert bool(step.truncated.all()) == (t == 25) and not (t < 25 and step.truncated.any())
        assert (np.asarray(step.reward) < 0).all()  # distances to landmarks: every step costs
    assert np.asarray(lanes.elapsed).tolist() == [25, 25]
    lanes, step = step_fn(lanes, actions)
    assert step.first.all() and not step.truncated.any() and (np.asarray(step.reward) == 0).all()
    assert np.asarray(lanes.elapsed).tolist() == [0, 0]
    assert not np.array_equal(np.asarray(step.obs), np.asarray(first.obs))  # a new episode, from the env's own key
    assert np.asarray(step.obs)[:, :2].max() == 0.0  # velocities start at rest


def test_spec_and_players_are_the_host_pettingzoo_pools():
    """The same kwargs give the same spaces, players and player count as `pettingzoo/mpe2/...`:
    an agent built for one runs on the other."""
    pytest.importorskip("mpe2")
    for host, jax_id, kw in (("pettingzoo/mpe2/simple_spread_v3", SPREAD, {}),
                             ("pettingzoo/mpe2/simple_spread_v3", SPREAD, BOTH),
                             ("pettingzoo/mpe2/simple_tag_v3", TAG, dict(pad_observations=True, **BOTH))):
        a, b = envs.make_spec(host, **kw), envs.make_spec(jax_id, **kw)
        assert a.observation_space == b.observation_space, (jax_id, kw)
        assert a.action_space == b.action_space and a.action_space.dtype == b.action_space.dtype
        assert a.player_names == b.player_names and a.config.max_num_players == b.config.max_num_players > 1
    assert envs.make_spec(SPREAD).config.max_episode_steps == 25  # PettingZoo's max_cycles


def _same_start(pz_env, raw, key: int, near: tuple[int, int]):
    """PettingZoo's env after reset, and JaxMARL's state at the same positions; players `near`
    put 0.1 apart (colliding: the collision reward and contact forces are exercised)."""
    pz_env.reset(seed=key)
    world = pz_env.unwrapped.world
    entities = world.agents + world.landmarks
    a, b = near
    entities[b].state.p_pos = entities[a].state.p_pos + np.array([0.1, 0.0])
    pos = np.array([e.state.p_pos for e in entities])
    (state, k), _ = raw.reset(jax.random.key(key))
    return (state.replace(p_pos=jnp.asarray(pos, jnp.float32)), k)


@pytest.mark.parametrize("task", ["simple_spread_v3", "simple_tag_v3"])
def test_observations_and_rewards_are_pettingzoos_from_the_same_positions(task):
    """From the same positions and with the same actions, a whole episode of JaxMARL's env (through
    the suite's RawJaxEnv) has mpe2's observations and per-player rewards (the reward definition
    and scale: spread's collision and landmark terms, tag's catches and bounds), to float32."""
    pytest.importorskip("mpe2")
    import importlib

    pz = importlib.import_module(f"mpe2.{task}").parallel_env(max_cycles=25)
    raw = make_raw(f"jaxmarl/MPE_{task}", pad_observations=True)
    state = _same_start(pz, raw, 5, (0, 1))
    assert list(pz.possible_agents) == list(raw.player_names)
    step = jax.jit(raw.step)
    rng = np.random.default_rng(0)
    rewards = []
    for t in range(25):
        actions = rng.integers(0, 5, len(pz.possible_agents))
        obs_pz, r_pz, _, trunc, _ = pz.step({a: int(actions[i]) for i, a in enumerate(pz.possible_agents)})
        state, obs, r, terminated, truncated = step(state, jnp.asarray(actions, jnp.int32))
        for i, a in enumerate(pz.possible_agents):
            mine = np.asarray(obs)[i, :len(obs_pz[a])]
            np.testing.assert_allclose(mine, obs_pz[a], atol=1e-5, err_msg=f"step {t + 1}, {a}")
        np.testing.assert_allclose(np.asarray(r), [r_pz[a] for a in pz.possible_agents], atol=1e-5, err_msg=f"step {t + 1}")
        rewards.append(np.asarray(r))
        assert not bool(terminated) and not bool(truncated)  # the JaxEnv's limit cuts it, as PettingZoo's max_cycles
    assert all(trunc.values())
    rewards = np.array(rewards)
    if task == "simple_spread_v3":  # players 0 and 1 start colliding: their reward carries the -0.5 term
        assert rewards[0, 0] == pytest.approx(rewards[0, 2] - 0.5, abs=1e-5)
    else:  # adversary 0 and 1 overlap (no catch): all adversaries share the catches' reward
        assert np.ptp(rewards[:, :3], axis=1).max() == 0.0


@pytest.mark.slow(seconds=5)
def test_the_pool_serves_it_with_envpools_player_rows():
    pool = envs.make(SPREAD, num_envs=4, batch_size=2, seed=7, add_player_id=True)
    try:
        assert pool.num_players == 3
        pool.async_reset()
        obs, reward, terminated, truncated, info = pool.recv()
        assert obs.shape == (6, 21) and info["players"]["id"].tolist() == [0, 1, 2, 0, 1, 2]
        envs_in = info["env_id"][::3]
        pool.send({"action": np.zeros(6, np.int64), "env_id": np.repeat(envs_in, 3),
                   "players.id": np.tile(np.arange(3), 2)})
        obs, reward, terminated, truncated, info = pool.recv()
        assert len(set(info["env_id"].tolist())) == 2 and (info["elapsed_step"] >= 0).all()
        with pytest.raises(ValueError, match="given twice"):
            pool.send({"action": np.zeros(2, np.int64), "env_id": np.array([0, 0]), "players.id": np.array([1, 1])})
    finally:
        pool.close()
    # env i of the pool is env i of the JaxEnv the Anakin loop resets (JaxEnv.reset_as_pool)
    with envs.make(SPREAD, num_envs=2, seed=7) as pool:
        obs, _ = pool.reset()
    _, first = make_jax_env(SPREAD).reset_as_pool(7, 2)
    np.testing.assert_array_equal(obs, np.asarray(first.obs))


def test_bad_kwargs_and_mismatched_players_are_one_line_errors():
    with pytest.raises(ValueError, match="players' observation spaces differ .*pad_observations=True"):
        envs.make_spec(TAG)
    with pytest.raises(ValueError, match="players' action spaces differ"):
        envs.make_spec("jaxmarl/MPE_simple_speaker_listener_v4", pad_observations=True)
    with pytest.raises(ValueError, match=r"unknown kwarg\(s\) \['bogus'\] for jaxmarl/MPE_simple_spread_v3.*local_ratio"):
        envs.make_spec(SPREAD, bogus=1)
    with pytest.raises(ValueError, match="add_player_id must be True or False, got 'yes'"):
        envs.make_spec(SPREAD, add_player_id="yes")
    with pytest.raises(ValueError, match="max_num_players=2: .* has 3 players"):
        envs.make_spec(SPREAD, max_num_players=2)
    with pytest.raises(ValueError, match="did you mean jaxmarl/MPE_simple_spread_v3"):
        envs.make_spec("jaxmarl/MPE_simple_sprad_v3")
    assert envs.make_spec(SPREAD, max_num_players=3).config.max_num_players == 3
    assert envs.make_spec(SPREAD, num_agents=4).config.max_num_players == 4  # JaxMARL's own kwarg: 4 players


@pytest.mark.slow(seconds=5)
def test_anakin_and_sebulba_learn_the_same_mappo_networks_on_the_same_envs():
    """MAPPO (critic on the global state) on 4 envs x 3 players: the Anakin loop (rows in the
    program) and the Sebulba loop in sync mode (the JAX pool's rows) step the same envs, report
    the same per-player episodes and learn bit-identical networks."""
    from sebulba.loop.loop import GymnasiumLoop

    spec = envs.make_spec(SPREAD, **BOTH)
    cfg = dict(env_id=SPREAD, env_kwargs=BOTH, num_envs=4, steps_per_cycle=16, seed=3, log_every_s=1000.0)
    agent = lambda: PPO(spec, PPOConfig(hidden_sizes=(16,), num_minibatches=2, num_epochs=2, critic_state=True))  # noqa: E731
    anakin = AnakinLoop(agent(), sebulba.LoopConfig(loop="anakin", **cfg), updates_per_call=4)
    _, result = anakin.call()
    assert result.env_steps == 4 * 16 * 4  # env steps count envs, not rows
    assert result.episode_returns.size == 24 and result.episode_players.tolist() == [0, 1, 2] * 8
    with GymnasiumLoop(agent(), sebulba.LoopConfig(async_mode=False, inferencers_per_device=1, loop="sebulba",
                                                   **cfg)) as host:
        host.run(max_cycles=4)
        np.testing.assert_array_equal(result.episode_returns, list(host.window.returns))
        for a, b in zip(jax.tree.leaves(anakin.networks), jax.tree.leaves(host.learner.networks), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow(seconds=5)
def test_the_anakin_loop_reports_each_rows_episode_on_one_and_two_devices():
    """A fixed policy (every player idle) on 4 envs x 3 players, one update of 26 steps: each row's
    episode return is the sum of its rewards stepping the JaxEnv alone, tagged with its player
    (row % 3), the same on 1 and 2 devices (each device's rows start at an env)."""
    from tests.support.agents import CountingAgent

    env = make_jax_env(SPREAD)
    lanes, _ = env.reset_as_pool(0, 4)
    total, step_fn = np.zeros(12, np.float32), jax.jit(env.step)
    for _ in range(25):
        lanes, step = step_fn(lanes, jnp.zeros(12, jnp.int32))
        total += np.asarray(step.reward)
    assert step.truncated.all()
    spec = envs.make_spec(SPREAD)
    for devices in (1, 2):
        cfg = sebulba.LoopConfig(env_id=SPREAD, num_envs=4, steps_per_cycle=26, learner_devices=tuple(range(devices)),
                                 log_every_s=1000.0)
        with AnakinLoop(CountingAgent(spec), cfg, updates_per_call=1) as loop:
            assert loop.window.num_players == 3 and loop.window.team_of == []
            _, result = loop.call()
        assert result.env_steps == 26 * 4
        assert result.episode_players.tolist() == [0, 1, 2] * 4, devices
        np.testing.assert_allclose(result.episode_returns, total, rtol=1e-6)
        assert (result.episode_lengths == 25).all()


def _random_return(episodes: int = 256) -> float:
    """The mean per-player return of uniformly random actions on the JaxEnv (its own measure)."""
    env = make_jax_env(SPREAD)
    n = episodes // 4

    def run(key):
        lanes, _ = env.reset(jax.random.key(11), n)

        def one(carry, k):
            lanes = carry
            lanes, step = env.step(lanes, jax.random.randint(k, (3 * n,), 0, 5))
            return lanes, step.reward

        # 4 episodes of 25 steps, each followed by its reset step (reward 0)
        _, rewards = jax.lax.scan(one, lanes, jax.random.split(key, 4 * 26))
        return rewards.sum() / (4 * 3 * n)

    return float(jax.jit(run)(jax.random.key(0)))


@pytest.mark.slow(seconds=40)
@pytest.mark.timeout(600)
def test_learning_bar_ippo_on_jaxmarl_spread_in_the_anakin_loop(tmp_path):
    """`python -m experiments.ppo --env jaxmarl/MPE_simple_spread_v3` (the id picks the Anakin loop,
    the multi-player preset IPPO: the player's one-hot in the observation) on 150k env steps: the
    mean per-player return over the metrics rows from 80k env steps on (each the last 20 env
    episodes of a call) beats a random policy's, measured here (about -26.4, PettingZoo's units:
    the same dynamics and rewards), by 3 (seed 0: about -20); each player's returns are in
    metrics.csv."""
    random = _random_return()
    assert -28.5 < random < -24.5, random
    out = run_experiment("experiments.ppo", f"--env={SPREAD}", "--total_env_steps=150000", "--log_every_s=0.01",
                         f"--logdir={tmp_path}", "--noprogress", "--checkpoint_every=0")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"Anakin loop: 16 {SPREAD} envs" in out.stderr
    run_dir, last = last_metrics(tmp_path)
    assert all(np.isfinite(float(last[f"episode_return_mean_player{p}"])) for p in range(3)), last
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    late = [float(r["episode_return_mean"]) for r in rows if int(r["env_steps"]) >= 80_000]
    assert len(late) >= 3 and np.mean(late) >= random + 3, (random, late)
