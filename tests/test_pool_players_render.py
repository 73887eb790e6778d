"""Rendering multi-player pools: one frame per env (not per row), drawn in the workers by the env
itself (PettingZoo's render, the multi-player Atari games' RGB screen), through the pool's
`render(env_ids)` as single-player pools; bad requests refused in one line."""

import warnings

import numpy as np
import pytest

import envs
from envs.registry import multi_agent_ale_available

pytest.importorskip("mpe2")

SPREAD = "pettingzoo/mpe2/simple_spread_v3"
DYING = "pettingzoo/tests.support/dying_agents"  # a PettingZoo env that draws nothing


def pettingzoo_frames(seed, actions):
    """PettingZoo's own simple_spread frames: after reset(seed), then after each step's actions."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from mpe2 import simple_spread_v3

        env = simple_spread_v3.parallel_env(render_mode="rgb_array")
    env.reset(seed=seed)
    frames = [env.render()]
    for a in actions:
        env.step({agent: int(a[i]) for i, agent in enumerate(env.possible_agents)})
        frames.append(env.render())
    env.close()
    return frames


def test_a_pettingzoo_pool_renders_pettingzoos_own_frame_of_each_env():
    """Env g (seeded 7 + g) shows the frame PettingZoo's env draws for that seed and those actions,
    in the order env_ids names them; workers of two envs each answer together."""
    actions = [np.array([1, 2, 3]), np.array([4, 4, 1])]
    with envs.make(SPREAD, num_envs=3, num_threads=2, seed=7, render_mode="rgb_array") as pool:
        assert pool.metadata["render_modes"] == ["rgb_array", "human"]
        pool.reset()
        frames = [pool.render([2, 0])]
        for a in actions:
            pool.step(np.tile(a, 3))  # rows: env-major, each env's players in order
            frames.append(pool.render([2, 0]))
        assert pool.render().shape == (1, 700, 700, 3)  # env 0 by default
    for env_id, k in ((2, 0), (0, 1)):
        own = pettingzoo_frames(7 + env_id, actions)
        for t, frame in enumerate(frames):
            np.testing.assert_array_equal(frame[k], own[t], err_msg=f"env {env_id}, step {t}")
    assert frames[0].shape == (2, 700, 700, 3) and frames[0].dtype == np.uint8
    assert not np.array_equal(frames[0][0], frames[0][1])  # two seeds, two worlds
    assert not np.array_equal(frames[0][0], frames[2][0])  # the agents moved


def test_a_turn_based_game_renders():
    pytest.importorskip("pygame")
    with envs.make("pettingzoo/classic/tictactoe_v3", num_envs=2, num_threads=1, render_mode="rgb_array") as pool:
        pool.reset()
        before = pool.render([0, 1])
        pool.step(np.array([4, 0, 4, 0]))  # each env's first mover takes the centre
        after = pool.render([0, 1])
    assert before.shape == after.shape and before.shape[0] == 2 and before.shape[-1] == 3
    assert not np.array_equal(before[0], after[0])


@pytest.mark.skipif(not multi_agent_ale_available(), reason="needs the atari-multiplayer extra")
def test_a_multi_player_atari_pool_renders_the_screen():
    """One raw RGB screen per env (Combat's is 256 x 160), not the players' resized observations;
    the screens move on as the game does."""
    with envs.make("Combat-v5", num_envs=2, num_threads=1, seed=1, render_mode="rgb_array") as pool:
        pool.reset()
        first = pool.render([0, 1])
        for _ in range(8):
            pool.step(np.full(4, 2))  # UP for both tanks of both envs
        later = pool.render([1])
    assert first.shape == (2, 256, 160, 3) and first.dtype == np.uint8 and first.std() > 10
    assert not np.array_equal(first[1], later[0])


def test_bad_render_requests_are_one_line():
    with envs.make(SPREAD, num_envs=2, num_threads=1, render_mode="rgb_array") as pool:
        with pytest.raises(RuntimeError, match=r"render\(\) of envs \[0, 1\] that were never reset"):
            pool.render([0, 1])
        pool.reset()
        with pytest.raises(ValueError, match=r"env_id out of range \[0, 2\): \[2\]"):
            pool.render([2])
        pool.send(np.zeros(6, int))
        with pytest.raises(RuntimeError, match=r"render\(\) of envs \[0\] whose step is in flight: recv\(\)"):
            pool.render(0)
        pool.recv()
        assert pool.render(1).shape == (1, 700, 700, 3)  # the pool still works
    with envs.make(SPREAD, num_envs=1, num_threads=1) as pool:
        pool.reset()
        with pytest.raises(RuntimeError, match="render\\(\\) needs a pool made with render_mode='rgb_array'"):
            pool.render()
    with pytest.raises(ValueError, match=r"render_mode='rgb_array': '.*dying_agents' does not draw frames \(.*"
                                         r"unexpected keyword argument 'render_mode'\)"):
        envs.make(DYING, render_mode="rgb_array")
    with pytest.raises(ValueError, match="render_mode must be one of"):
        envs.make(SPREAD, render_mode="window")
    with pytest.raises(ValueError, match="'CartPole-v1' runs in worker processes, which do not render Gymnasium's envs"):
        envs.make("CartPole-v1", backend="process", render_mode="rgb_array")


def test_an_async_pool_renders_envs_beside_steps_in_flight():
    """Async mode: rendering envs of a worker whose other envs are stepping waits for those steps;
    their results still come with the next recv()."""
    with envs.make(SPREAD, num_envs=4, batch_size=2, num_threads=1, seed=3, render_mode="rgb_array") as pool:
        pool.async_reset()
        first = np.unique(pool.recv()[-1]["env_id"])
        pool.send(np.zeros(6, int), first)
        rest = np.setdiff1d(np.arange(4), first).astype(np.int32)
        assert pool.render(rest).shape == (2, 700, 700, 3)
        got = np.unique(pool.recv()[-1]["env_id"])
        got2 = np.unique(pool.recv()[-1]["env_id"])
    assert sorted(got.tolist() + got2.tolist()) == [0, 1, 2, 3]


@pytest.mark.timeout(120)
def test_a_respawned_workers_envs_render_again_once_stepped():
    """A worker killed: its envs are fresh (no episode to draw) until their next step resets them;
    the other worker's envs render throughout."""
    import os
    import signal

    with envs.make(SPREAD, num_envs=2, num_threads=2, seed=5, render_mode="rgb_array") as pool:
        pool.reset()
        os.kill(pool._backend._workers[1].pid, signal.SIGKILL)
        with pytest.warns(RuntimeWarning, match="respawning env worker 1"):
            pool.step(np.zeros(6, int))
        assert pool.render(0).shape == (1, 700, 700, 3)
        with pytest.raises(RuntimeError, match=r"render\(\) of envs \[1\] that were never reset \(or whose worker was respawned"):
            pool.render(1)
        pool.step(np.zeros(6, int))  # env 1's reset step
        np.testing.assert_array_equal(pool.render(1)[0], pettingzoo_frames(5 + 2 + 1, [])[0])  # reseeded seed + num_envs + id
