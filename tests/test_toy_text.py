"""EnvPool's toy-text ids that Gymnasium lacks (envs/toy_text.py): Catch-v0 and NChain-v0 as
EnvPool's sources define them, Taxi-v3 and CliffWalking-v0 as the Gymnasium tasks they are, all
served by the pool with EnvPool's interface (a subset of EnvPool's toy_text_test.py, rewritten)."""

import gymnasium as gym
import numpy as np
import pytest

import envs


@pytest.mark.parametrize("task_id, obs, actions, steps, threshold", [
    ("Catch-v0", gym.spaces.Box(0.0, 1.0, (10, 5), np.float32), 3, None, None),
    ("NChain-v0", gym.spaces.Discrete(5), 2, 1000, None),
    ("Taxi-v3", gym.spaces.Discrete(500), 6, 200, 8.0),
    ("CliffWalking-v0", gym.spaces.Discrete(48), 4, None, None),
])
def test_the_ids_are_served_with_envpools_spaces(task_id, obs, actions, steps, threshold):
    assert task_id in envs.list_all_envs()
    spec = envs.make_spec(task_id)
    assert spec.observation_space == obs and spec.action_space == gym.spaces.Discrete(actions)
    assert spec.reward_threshold == threshold
    if steps is not None:
        assert spec.config["max_episode_steps"] == steps


@pytest.mark.slow(seconds=3)
def test_catch_rewards_a_caught_ball_and_punishes_a_missed_one():
    """EnvPool's test: following the ball catches it (reward 1 on the 9th step, the only nonzero
    one, and the episode ends); moving away from it misses (-1)."""
    n, rows = 6, 10
    pool = envs.make_dm("Catch-v0", num_envs=n, seed=3)
    for chase, want in ((True, 1.0), (False, -1.0)):
        obs = pool.reset().observation.obs
        ball = np.argmax(obs[:, 0], 1)
        assert np.all(obs.sum((1, 2)) == 2) and np.all(np.argmax(obs[:, -1], 1) == 2)  # paddle starts mid-row
        for t in range(rows - 1):
            paddle = np.argmax(obs[:, -1], 1)
            toward = np.sign(ball - paddle) + 1
            away = np.where(ball >= 2, 0, 2)  # to the far wall
            ts = pool.step(toward if chase else away)
            obs = ts.observation.obs
            if t + 1 < rows - 1:  # the ball falls straight down its column
                np.testing.assert_array_equal(np.argmax(obs[:, t + 1], 1), ball)
            if t < rows - 2:
                assert np.all(ts.reward == 0) and np.all(ts.step_type == 1)
            else:
                assert np.all(ts.reward == want) and np.all(ts.last()) and np.all(ts.discount == 0)
    pool.close()


def test_nchain_moves_slips_and_pays_as_envpools():
    """Action 0 walks the chain (0 reward; 10 at its end, staying there), action 1 goes back to the
    start for 2; one action in five is swapped. Checked transition by transition on a seeded run."""
    env = gym.make("NChain-v0")
    state, _ = env.reset(seed=0)
    slips, steps = 0, 4000
    rng = np.random.default_rng(1)
    for _ in range(steps):
        action = int(rng.integers(2))
        nxt, reward, terminated, truncated, _ = env.step(action)
        taken = 1 if (reward == 2.0 and nxt == 0) else 0
        if taken:
            assert nxt == 0
        elif state < 4:
            assert (nxt, reward) == (state + 1, 0.0)
        else:
            assert (nxt, reward) == (4, 10.0)
        slips += taken != action
        assert not terminated
        if truncated:  # the time limit: 1,000 steps
            state, _ = env.reset()
            continue
        state = nxt
    assert abs(slips / steps - 0.2) < 0.03, slips / steps


@pytest.mark.slow(seconds=4)
def test_nchain_random_returns_match_envpools_figures():
    """EnvPool's own check: a uniformly random policy's 1,000-step return is 1,310 +- 30 on
    average, with a spread of 78 +- 15, over many envs."""
    pool = envs.make_gymnasium("NChain-v0", num_envs=64, seed=0)
    pool.reset()
    rng, total, done = np.random.default_rng(0), np.zeros(64), np.zeros(64, bool)
    steps = 0
    while not done.all():
        _, reward, terminated, truncated, _ = pool.step(rng.integers(2, size=64))
        total += reward
        done |= terminated | truncated
        steps += 1
    pool.close()
    assert steps == 1000 and abs(total.mean() - 1310) < 30 and abs(total.std() - 78) < 15, (total.mean(), total.std())


@pytest.mark.parametrize("old, new", [("Taxi-v3", "Taxi-v4"), ("CliffWalking-v0", "CliffWalking-v1")])
def test_the_older_ids_are_gymnasiums_tasks(old, new):
    """EnvPool's Taxi-v3 and CliffWalking-v0 are Gymnasium's Taxi-v4 and CliffWalking-v1 with their
    default arguments (v4 changed only the rainy and fickle options; v1 added the slippery one)."""
    a, b = gym.make(old), gym.make(new)
    rng = np.random.default_rng(0)
    for episode in range(3):
        assert a.reset(seed=episode)[0] == b.reset(seed=episode)[0]
        for _ in range(100):
            action = int(rng.integers(a.action_space.n))
            got, want = a.step(action), b.step(action)
            assert got[:4] == want[:4]
            if got[2] or got[3]:
                break
