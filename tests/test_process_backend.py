"""The worker-process backend with real processes: any Gymnasium id, images, failures."""

import signal

import numpy as np
import pytest

import envs
from envs.process.backend import WorkerError
from tests.support import toy_envs

toy_envs.register_all()


def test_user_registered_env_with_channel_first_images():
    with envs.make("ToyImage-v0", num_envs=3, num_threads=2) as pool:
        assert pool.observation_space.shape == (3, 8, 6)
        obs, info = pool.reset()
        assert obs.shape == (3, 3, 8, 6) and obs.dtype == np.uint8
        assert (obs[:, 2] == 7).all() and (obs[:, 0] == 0).all()
        obs, rew, term, trunc, info = pool.step(np.array([0, 1, 2]))
        assert (obs[:, 0] == 1).all() and rew.tolist() == [0.0, 1.0, 2.0]


def test_discrete_observations_and_task_kwargs():
    with envs.make("FrozenLake-v1", num_envs=2, is_slippery=False, max_episode_steps=7) as pool:
        assert pool.config["max_episode_steps"] == 7 and pool.config["is_slippery"] is False
        obs, _ = pool.reset()
        assert obs.tolist() == [0, 0]
        obs, *_ = pool.step(np.array([2, 1]))  # right, down on a non-slippery lake
        assert obs.tolist() == [1, 4]


def test_gymnasium_time_limit_is_the_pools():
    spec = envs.make_spec("FrozenLake-v1")
    assert spec.config["max_episode_steps"] == 100  # Gymnasium's registered limit
    with envs.make("FrozenLake-v1", num_envs=1, max_episode_steps=2, is_slippery=False) as pool:
        pool.reset()
        pool.step(np.array([0]))
        _, _, term, trunc, info = pool.step(np.array([0]))
        assert trunc[0] and not term[0] and info["elapsed_step"][0] == 2


def test_exception_in_env_reaches_caller_with_traceback():
    with envs.make("ToyFailing-v0", num_envs=2, num_threads=1) as pool:
        pool.reset()
        pool.step(np.zeros((2, 2), np.float32))
        with pytest.raises(WorkerError, match=r"(?s)ZeroDivisionError: toy env blew up.*worker traceback.*toy_envs.py"):
            for _ in range(3):
                pool.step(np.zeros((2, 2), np.float32))


def test_killed_worker_is_reported_not_hung():
    with envs.make("ToySuicide-v0", num_envs=2, num_threads=2) as pool:
        pool.reset()
        with pytest.raises(WorkerError, match=f"died with exit code -{int(signal.SIGKILL)}"):
            for _ in range(3):
                pool.step(np.zeros((2, 2), np.float32))


def test_close_stops_workers():
    pool = envs.make("CartPole-v1", backend="process", num_envs=4, num_threads=2)
    procs = list(pool._backend._procs)
    assert all(p.is_alive() for p in procs)
    pool.close()
    assert not any(p.is_alive() for p in procs)


def test_thread_affinity_pins_workers():
    import os

    with envs.make("CartPole-v1", backend="process", num_envs=2, num_threads=2, thread_affinity_offset=0) as pool:
        cpus = [os.sched_getaffinity(p.pid) for p in pool._backend._procs]
    n = os.cpu_count()
    assert cpus == [{0 % n}, {1 % n}]
