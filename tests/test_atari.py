"""Atari through ALE's vector env: EnvPool's Atari options, outputs and contract (seed 001)."""

import csv
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dm_env
import numpy as np
import pytest

import envs
from tests.support.cli import child_env, last_metrics, run_experiment
from tests.support.pool_checks import assert_async_matches_sync

ale_py = pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[atari]'")
from ale_py.vector_env import AtariVectorEnv

ROOT = Path(__file__).resolve().parents[1]


def make(task="Pong-v5", **kw):
    kw.setdefault("num_threads", 2)
    return envs.make(task, **kw)


@pytest.fixture
def ale_vector_env(monkeypatch):
    """Atari pools on ALE's vector env (envs/atari/backend.py), as where the Atari kernel is unavailable."""
    monkeypatch.setenv("SEBULBA_NATIVE_KERNEL", "0")



def test_spec_defaults_are_envpools():
    spec = envs.make_spec("Pong-v5")
    c = spec.config
    assert c["backend"] == "atari" and c["max_episode_steps"] == 27_000
    assert (c["img_height"], c["img_width"], c["stack_num"], c["frame_skip"], c["noop_max"]) == (84, 84, 4, 4, 30)
    assert c["gray_scale"] and c["use_fire_reset"]
    assert not c["reward_clip"] and not c["episodic_life"] and not c["full_action_space"]
    assert c["repeat_action_probability"] == 0.0
    assert spec.observation_space.shape == (4, 84, 84) and spec.observation_space.dtype == np.uint8
    assert spec.action_space.n == 6
    assert envs.make_spec("Pong-v5", full_action_space=True).action_space.n == 18
    assert envs.make_spec("Breakout-v5", gray_scale=False, stack_num=2, img_height=64, img_width=48).observation_space.shape == (6, 64, 48)
    ids = envs.list_all_envs()
    assert {"Pong-v5", "Breakout-v5", "MsPacman-v5", "SpaceInvaders-v5"} <= set(ids) and len(ids) == len(set(ids))


def test_outputs_layout_and_info():
    with make(num_envs=3) as pool:
        obs, info = pool.reset()
        assert obs.shape == (3, 4, 84, 84) and obs.dtype == np.uint8
        assert set(info) == {"env_id", "elapsed_step", "lives", "reward", "terminated", "players"}
        assert info["env_id"].tolist() == [0, 1, 2] and info["elapsed_step"].tolist() == [0, 0, 0]
        obs, rew, term, trunc, info = pool.step(np.array([0, 1, 2]))
        assert obs.shape == (3, 4, 84, 84) and rew.dtype == np.float32 and term.dtype == bool and trunc.dtype == bool
        assert info["elapsed_step"].tolist() == [1, 1, 1] and info["reward"].dtype == np.float32


def test_observations_are_ales_own_frames_channel_first_with_seed_plus_i():
    """Gray and RGB stacks are ALE's frames; env i is seeded seed + i (EnvPool's rule)."""
    actions = np.random.default_rng(0).integers(0, 4, (12, 2))
    for gray in (True, False):
        ref = AtariVectorEnv("breakout", 2, grayscale=gray, stack_num=2, reward_clipping=False)
        ref_obs = [ref.reset(seed=7)[0]] + [ref.step(a)[0] for a in actions]
        ref.close()
        with make("Breakout-v5", num_envs=2, seed=7, gray_scale=gray, stack_num=2) as pool:
            obs = [pool.reset()[0]] + [pool.step(a)[0] for a in actions]
        for o, r in zip(obs, ref_obs):
            if gray:
                np.testing.assert_array_equal(o, r)
            else:  # ALE: (N, stack, H, W, 3); EnvPool: (N, 3 * stack, H, W), frame by frame
                assert o.shape == (2, 6, 84, 84)
                np.testing.assert_array_equal(o[:, 3:6], r[:, 1].transpose(0, 3, 1, 2))
                np.testing.assert_array_equal(o[:, 0:3], r[:, 0].transpose(0, 3, 1, 2))


def test_auto_reset_table_of_seed_001_and_truncation():
    """max_episode_steps=3: calls 1 and 5 reset (action discarded), call 4 truncates, never terminates."""
    with make(num_envs=2, max_episode_steps=3, seed=3) as pool, make(num_envs=2, seed=3) as fresh:
        first_obs, _ = fresh.reset()
        calls = [pool.step(np.array([2, 3])) for _ in range(5)]
    assert [c[4]["elapsed_step"].tolist() for c in calls] == [[0, 0], [1, 1], [2, 2], [3, 3], [0, 0]]
    np.testing.assert_array_equal(calls[0][0], first_obs)
    assert [c[3].tolist() for c in calls] == [[False, False]] * 3 + [[True, True], [False, False]]
    assert not any(c[2].any() for c in calls)
    assert calls[4][1].tolist() == [0, 0]


@pytest.mark.slow(seconds=3)
def test_sync_determinism_and_sticky_actions_are_seeded():
    def run(seed, sticky):
        rng = np.random.default_rng(0)
        with make(num_envs=2, seed=seed, repeat_action_probability=sticky) as pool:
            return np.stack([pool.reset()[0]] + [pool.step(rng.integers(0, 6, 2))[0] for _ in range(40)])

    np.testing.assert_array_equal(run(1, 0.25), run(1, 0.25))
    assert not np.array_equal(run(1, 0.0), run(2, 0.0))  # noop starts differ by seed


def test_async_batches_and_lockstep_sends(ale_vector_env):
    with make(num_envs=6, batch_size=2) as pool:
        pool.async_reset()
        obs, rew, term, trunc, info = pool.recv()
        ids = info["env_id"]
        assert obs.shape == (2, 4, 84, 84) and len(ids) == 2 and (info["elapsed_step"] == 0).all()
        # ALE steps exactly the last batch: any other ids are refused, naming the expected ones
        wrong = np.array([x for x in range(6) if x not in ids][:2])
        with pytest.raises(ValueError, match=rf"env_id {sorted(ids.tolist())}".replace("[", r"\[").replace("]", r"\]")):
            pool.send(np.zeros(2, int), wrong)
        with pytest.raises(ValueError, match="last batch received"):
            pool.send(np.zeros(1, int), ids[:1])
        pool.send(np.array([1, 2]), ids[::-1])  # any order
        seen = set()
        for _ in range(3):
            info = pool.recv()[4]
            seen |= set(info["env_id"].tolist())
            pool.send(np.zeros(2, int))  # without env_id: the last batch
        assert seen <= set(range(6)) and len(seen) >= 4
        with pytest.raises(ValueError, match="only in sync mode"):
            pool.reset(np.array([0]))


def test_async_reset_returns_one_batch(ale_vector_env):
    with make(num_envs=4, batch_size=2) as pool:
        obs, info = pool.reset()
        assert obs.shape == (2, 4, 84, 84) and (info["elapsed_step"] == 0).all()
        pool.send(np.zeros(2, int), info["env_id"])
        assert pool.recv()[0].shape == (2, 4, 84, 84)


def test_async_results_per_env_match_sync():
    assert_async_matches_sync(make, np.random.default_rng(3).integers(0, 6, (4, 26)))


def test_sync_partial_reset(ale_vector_env):
    with make(num_envs=3) as pool:
        pool.reset()
        pool.step(np.ones(3, int))
        obs, info = pool.reset(np.array([2, 0]))
        assert info["env_id"].tolist() == [2, 0] and (info["elapsed_step"] == 0).all()
        info = pool.step(np.ones(3, int))[4]
        assert info["elapsed_step"].tolist() == [1, 2, 1]
        with pytest.raises(ValueError, match="last batch received"):
            pool.send(np.ones(2, int), np.array([0, 1]))


def test_reward_clip_keeps_the_raw_reward_in_info():
    rng = np.random.default_rng(0)
    with make("SpaceInvaders-v5", num_envs=2, reward_clip=True, seed=0) as pool:
        pool.reset()
        for _ in range(400):
            _, rew, _, _, info = pool.step(rng.integers(0, 6, 2))
            np.testing.assert_array_equal(rew, np.sign(info["reward"]))
            if (info["reward"] > 1).any():
                break
        assert (info["reward"] > 1).any(), "no reward above 1 within 400 random steps"


def test_episodic_life_ends_the_episode_and_the_game_goes_on():
    with make("Breakout-v5", num_envs=1, episodic_life=True, seed=0) as pool, \
            make("Breakout-v5", num_envs=1, seed=0) as whole:
        pool.reset()
        whole.reset()
        for _ in range(300):
            _, _, term, _, info = pool.step(np.ones(1, int))
            _, _, whole_term, _, whole_info = whole.step(np.ones(1, int))
            if term[0]:
                break
        assert term[0] and info["lives"][0] == 4, "a life loss terminates with episodic_life"
        assert not whole_term[0] and whole_info["lives"][0] == 4, "without it, a life loss does not"
        _, _, term, _, info = pool.step(np.ones(1, int))
        assert not term[0] and info["elapsed_step"][0] == 0 and info["lives"][0] == 4  # same game, 4 lives left


def test_dm_observation_carries_lives_and_raw_reward():
    with envs.make_dm("Breakout-v5", num_envs=2, num_threads=2) as pool:
        ts = pool.reset()
        assert ts.step_type.tolist() == [dm_env.StepType.FIRST] * 2
        assert ts.observation._fields == ("obs", "env_id", "elapsed_step", "lives", "reward", "terminated", "players")
        assert ts.observation.lives.tolist() == [5, 5] and ts.observation.obs.shape == (2, 4, 84, 84)
        ts = pool.step(np.ones(2, int))
        assert ts.step_type.tolist() == [dm_env.StepType.MID] * 2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(stack_num=0), "stack_num must be an int >= 1"),
        (dict(gray_scale="yes"), "gray_scale must be a bool"),
        (dict(repeat_action_probability=1.5), r"repeat_action_probability must be in \[0, 1\]"),
        (dict(noop_max=-1), "noop_max must be an int >= 0"),
        (dict(frameskip=4), r"unknown kwarg\(s\) \['frameskip'\]"),
        (dict(backend="process"), "runs on backend='atari'"),
    ],
)
def test_bad_options_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        envs.make_spec("Pong-v5", **kwargs)


def test_without_ale_py_the_error_says_how_to_install():
    code = "import sys; sys.modules['ale_py'] = None\nimport envs\ntry:\n    envs.make('Pong-v5')\nexcept ImportError as e:\n    print(e)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install -e '.[atari]'" in out.stdout, out.stdout + out.stderr


@pytest.mark.slow(seconds=4)
@pytest.mark.parametrize("async_mode", [False, True])
def test_sebulba_loop_runs_on_atari_pools(async_mode):
    import sebulba
    from sebulba.agents import RandomAgent

    spec = envs.make_spec("Pong-v5")
    cfg = sebulba.LoopConfig(env_id="Pong-v5", env_kwargs=dict(num_threads=2), num_envs=4, steps_per_cycle=5,
                             learner_devices=(1, 2), async_mode=async_mode, log_every_s=1000.0)
    shapes = []
    with sebulba.GymnasiumLoop(RandomAgent(spec), cfg) as loop:
        ctx = loop.run(max_cycles=4, middleware=[lambda ctx: shapes.append(ctx.result.trajectory.env_step.obs.shape)])
        assert ctx.env_steps == 4 * 4 * 5
    assert set(shapes) == {(6, 4, 4, 84, 84)}  # [T + 1, envs, stack, H, W], uint8 frames


def test_atari_presets_follow_the_papers():
    from experiments import impala

    exp = impala.make_experiment("Pong-v5")
    assert exp.loop.env_kwargs == {"reward_clip": True, "episodic_life": True}
    assert exp.agent.torso == "impala_resnet" and exp.loop.steps_per_cycle == 20
    # 64 envs per inferencer learned as 2 minibatches: the paper's batch of 32 per optimizer step
    assert exp.loop.num_envs == 64 and exp.agent.num_minibatches == 2
    steps_per_update = exp.loop.num_envs * 20 * exp.loop.num_inferencers
    assert exp.agent.lr_decay_steps == -(-50_000_000 // steps_per_update) * exp.loop.num_inferencers * 2
    # RMSProp 6e-4, epsilon 0.01, clip 40 on summed losses, as in the paper's code
    a = exp.agent
    assert (a.learning_rate, a.rmsprop_eps, a.rmsprop_decay, a.max_grad_norm, a.loss_reduction) == (6e-4, 0.01, 0.99, 40.0, "sum")
    assert a.rmsprop_eps_in_sqrt  # TensorFlow's RMSProp, as the paper
    assert exp.loop.actor_devices == (0,) and 0 not in exp.loop.learner_devices  # separate devices (4 forced CPUs)
    # experiments.r2d2 defines the same absl flags, so it is read in its own process (4 CPU devices too)
    code = (
        "import dataclasses, json\nfrom experiments.r2d2 import make_experiment\n"
        "e = make_experiment('Pong-v5')\n"
        "print(json.dumps([dataclasses.asdict(e.agent), e.loop.env_kwargs, e.loop.actor_devices, e.loop.learner_devices,\n"
        "                  e.loop.stack_on_device]))\n"
    )
    env = child_env(XLA_FLAGS="--xla_force_host_platform_device_count=4")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    a, env_kwargs, actors, learners, stack_on_device = json.loads(out.stdout.strip().splitlines()[-1])
    assert stack_on_device and not exp.loop.stack_on_device  # R2D2's replay keeps single frames
    assert (a["sequence_length"], a["burn_in"], a["n_step"], a["discount"], a["learning_rate"], a["adam_eps"],
            a["batch_size"], a["target_update_period"]) == (80, 40, 5, 0.997, 1e-4, 1e-3, 64, 2500)
    assert a["torso"] == "nature_cnn" and a["core"] == "lstm" and a["core_size"] == 512
    assert a["td_reduction"] == "sum"  # acme's per-sequence sum, which Adam's epsilon 1e-3 assumes
    assert env_kwargs == {"reward_clip": False, "episodic_life": False}
    assert actors == [0] and 0 not in learners


def _threads() -> set[str]:
    return set(os.listdir("/proc/self/task"))


@pytest.mark.parametrize("num_threads", [1, 2, 8])
def test_num_threads_is_the_number_of_ales_workers(num_threads, ale_vector_env):
    """ALE starts num_threads workers, at most one per core."""
    before = _threads()
    with make(num_envs=8, num_threads=num_threads) as pool:
        assert len(_threads() - before) == min(num_threads, os.cpu_count())
        pool.reset()


@pytest.mark.slow(seconds=18)
def test_env_threads_flag_sets_every_inferencers_pool():
    """--env_threads (make_experiment's env_threads) is EnvPool's num_threads of each pool: every
    inferencer's, with frames stacked by the env or on the device."""
    from experiments import impala
    from sebulba.agents.impala.agent import Impala
    from sebulba.loop.loop import GymnasiumLoop

    assert "num_threads" not in impala.make_experiment("Pong-v5").loop.env_kwargs
    for stack_on_device in (False, True):
        exp = impala.make_experiment("Pong-v5", env_threads=2, num_envs=4, async_mode=False,
                                     stack_on_device=stack_on_device)
        assert exp.loop.env_kwargs == {"reward_clip": True, "episodic_life": True, "num_threads": 2}
        before = _threads()
        # a small MLP torso: what is tested is the pools, and the ResNet's compile would take most of the time
        agent = dataclasses.replace(exp.agent, torso="mlp", hidden_sizes=(8,))
        with GymnasiumLoop(Impala(envs.make_spec("Pong-v5", **exp.loop.env_kwargs), agent), exp.loop) as loop:
            pools = [inf.pool for inf in loop.inferencers]
            assert len(pools) == 2 and all(p.config["num_threads"] == 2 for p in pools)
            # at least one worker per pool (num_threads - 1 beside the stepping thread; ALE's vector env: 2)
            assert len(_threads() - before) >= len(pools)


@pytest.mark.slow(seconds=18)
def test_impala_cli_on_pong_runs_and_its_updates_move_the_policy(tmp_path):
    """`python -m experiments.impala --env Pong-v5`, the Atari preset (IMPALA ResNet, RMSProp on
    the summed loss, 2 minibatches per trajectory), cut down to 4 envs and 6 learner steps (12
    optimizer steps) in sync mode with a metrics row per update: it runs end to end, and its
    first updates move the policy off uniform (entropy ln 6 = 1.79; here down to 1.16). With the loss averaged instead, RMSProp's epsilon swamps the
    gradients: every row stays at 1.78 here, and the policy stayed at 1.72-1.78 for 20M frames of
    Pong on the GPU host (BENCHMARKS.md)."""
    out = run_experiment("experiments.impala", "--env=Pong-v5", "--num_envs=4", "--total_env_steps=480",
                         "--async_mode=false", "--log_every_s=0.001", f"--logdir={tmp_path}", "--noprogress",
                         "--checkpoint_every=0", "--env_threads=2")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path)
    assert run_dir.name.startswith("impala-Pong-v5-") and int(last["learner_steps"]) == 6
    assert json.loads((run_dir / "flags.json").read_text())["env_threads"] == 2
    assert out.stderr.count("on CPU devices only: expect about 115 env steps/s") == 1, out.stderr[-3000:]
    entropies = [float(row["entropy"]) for row in csv.DictReader((run_dir / "metrics.csv").open())]
    assert min(entropies) < 1.7, entropies


@pytest.mark.slow(seconds=35)
def test_r2d2_cli_on_pong_runs_and_learns_from_its_replay(tmp_path):
    """`python -m experiments.r2d2 --env Pong-v5` (Nature CNN + LSTM, m 80), cut down to 4 envs
    and a small replay so that it learns from the second cycle on: it runs end to end."""
    out = run_experiment("experiments.r2d2", "--env=Pong-v5", "--num_envs=4", "--total_env_steps=640",
                         "--replay_capacity=16", "--min_replay_size=4", "--batch_size=4", f"--logdir={tmp_path}",
                         "--noprogress", "--checkpoint_every=0")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path)
    assert run_dir.name.startswith("r2d2-Pong-v5-") and int(last["env_steps"]) >= 640
    # the last optimizer steps ran on replayed sequences
    assert float(last["learning"]) == 1 and float(last["replay_size"]) >= 4 and float(last["loss"]) > 0, last


@pytest.mark.slow(seconds=9)
def test_r2d2_pong_preset_replay_that_cannot_fit_is_a_clear_error(tmp_path):
    """The paper-sized replay of stacked frames (--nostack_on_device: 25,000 sequences of 81 stacked
    frames, 53.4 GiB) on a host without that memory: one line naming the sizes and the flags,
    before anything is built (no run directory)."""
    with open("/proc/meminfo") as f:
        free_gib = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:")) / 2**20
    if free_gib >= 60:
        pytest.skip("this host has room for the preset's replay")
    out = run_experiment("experiments.r2d2", "--env=Pong-v5", "--num_envs=4", "--nostack_on_device", f"--logdir={tmp_path}",
                         "--noprogress")
    assert out.returncode != 0
    assert re.search(r"experience state \(e\.g\. its replay\) 53\.\d GiB per learner device", out.stderr), out.stderr[-3000:]
    assert "--replay_capacity" in out.stderr and "--stack_on_device" in out.stderr, out.stderr[-3000:]
    assert len(out.stderr.strip().splitlines()) == 1 and not list(tmp_path.iterdir()), out.stderr[-3000:]


@pytest.mark.parametrize("make_fn", [envs.make_spec, make])
def test_seeds_outside_ales_int32_range_are_refused_at_make(make_fn):
    """ALE's reset takes an int32 seed per env (a larger one is a TypeError from its bindings at
    reset): env i gets seed + i, so seed + num_envs - 1 must be at most 2**31 - 1."""
    with pytest.raises(ValueError, match=r"seed=2147483648 is out of range for 'Pong-v5'.*\[0, 2147483647\].*"
                                         r"num_envs=1 seed must be in \[0, 2147483647\]"):
        make_fn("Pong-v5", seed=2**31)
    with pytest.raises(ValueError, match=r"num_envs=3 seed must be in \[0, 2147483645\]"):
        make_fn("Pong-v5", num_envs=3, seed=2**31 - 2)


def test_the_largest_ale_seeds_reach_ale():
    """seed = 2**31 - 2 with 2 envs: env 1 gets 2**31 - 1, and the frames are ALE's with those seeds."""
    seeds = np.array([2**31 - 2, 2**31 - 1])
    actions = np.random.default_rng(5).integers(0, 4, (20, 2))
    ref = AtariVectorEnv("breakout", 2, reward_clipping=False)
    ref_obs = [ref.reset(seed=seeds)[0]] + [ref.step(a)[0] for a in actions]
    ref.close()
    with make("Breakout-v5", num_envs=2, seed=2**31 - 2) as pool:
        obs = [pool.reset()[0]] + [pool.step(a)[0] for a in actions]
    np.testing.assert_array_equal(np.stack(obs), np.stack(ref_obs))


@pytest.mark.parametrize("batch_size", [3, 2])
def test_stepping_a_subset_says_what_to_do_instead(batch_size, ale_vector_env):
    """ALE's send takes exactly one action per env of its last batch, no env ids: a sync pool cannot
    step a subset (EnvPool can); the error points to async mode or separate pools."""
    with make(num_envs=3, batch_size=batch_size) as pool:
        ids = pool.reset()[1]["env_id"]
        subset = np.array([x for x in range(3) if x != ids[0]][:1])
        with pytest.raises(ValueError, match="last batch received") as e:
            pool.step(np.zeros(1, int), subset)
    message = str(e.value)
    assert "no env ids" in message and "use async mode (batch_size < num_envs)" in message
    assert "send for each batch recv() returns" in message and "separate pools" in message
    assert ("a sync pool steps all its envs together" in message) == (batch_size == 3)


def test_a_frame_limit_beyond_ales_int32_is_refused_at_make():
    with pytest.raises(ValueError, match=r"max_episode_steps \* frame_skip = 4398046511104 frames.*at most 536870911"):
        envs.make_spec("Pong-v5", max_episode_steps=2**40)
    with make(max_episode_steps=536_870_911) as pool:  # the largest: ALE takes it
        assert pool.reset()[0].shape == (1, 4, 84, 84)
