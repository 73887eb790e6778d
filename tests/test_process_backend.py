"""The worker-process backend with real processes: any Gymnasium id, images, failures and
their recovery (respawned workers, truncated episodes), fail-fast with max_retry=0."""

import os
import signal
import warnings

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.process.backend import WorkerError
from tests.support import manager_envs, toy_envs
from tests.support.cli import child_env
from tests.support.orphans import assert_they_end, pids_of_a_killed_parent

toy_envs.register_all()
manager_envs.register_all()
pytestmark = pytest.mark.timeout(120)


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


def test_exception_in_env_reaches_caller_with_traceback_max_retry_0():
    with envs.make("ToyFailing-v0", num_envs=2, num_threads=1, max_retry=0) as pool:
        pool.reset()
        pool.step(np.zeros((2, 2), np.float32))
        with pytest.raises(WorkerError, match=r"(?s)ZeroDivisionError: toy env blew up.*worker traceback.*toy_envs.py"):
            for _ in range(3):
                pool.step(np.zeros((2, 2), np.float32))


def test_killed_worker_is_reported_not_hung_max_retry_0():
    with envs.make("ToySuicide-v0", num_envs=2, num_threads=2, max_retry=0) as pool:
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


def first_draw(seed):
    return gym.utils.seeding.np_random(seed)[0].random()


def test_sigkilled_worker_is_respawned_and_its_episodes_truncated():
    with envs.make("ToyCount-v0", num_envs=4, num_threads=2, length=100, seed=10) as pool:
        obs, _ = pool.reset()
        assert [o[2] for o in obs] == [first_draw(10 + i) for i in range(4)]
        pool.step(np.zeros(4, int))
        pool.step(np.zeros(4, int))
        pid = pool._backend._workers[1].pid  # envs 2 and 3
        os.kill(pid, signal.SIGKILL)
        with pytest.warns(RuntimeWarning, match=r"(?s)env worker 1 .*died with exit code -9.*respawning"):
            obs, rew, term, trunc, info = pool.step(np.zeros(4, int))
        assert trunc.tolist() == [False, False, True, True] and not term.any()
        assert info["elapsed_step"].tolist() == [3, 3, 3, 3] and rew[2:].tolist() == [0.0, 0.0]
        assert obs[2][0] == 2  # the last observation the dead worker wrote
        assert pool._backend._workers[1].pid != pid
        obs, rew, term, trunc, info = pool.step(np.zeros(4, int))  # envs 2, 3: the reset step
        assert info["elapsed_step"].tolist() == [4, 4, 0, 0] and not trunc.any()
        assert obs[2].tolist() == [0, 1, first_draw(10 + 4 + 2)]  # reseeded: seed + num_envs + env id
        for t in range(1, 4):
            _, _, _, trunc, info = pool.step(np.zeros(4, int))
            assert info["elapsed_step"].tolist() == [4 + t, 4 + t, t, t] and not trunc.any()


def test_sebulba_style_async_run_survives_crashing_workers():
    """An actor's send/recv loop over envs whose workers SIGKILL themselves every 6th step."""
    steps, truncated = 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with envs.make("ToyCrashAt-v0", num_envs=4, batch_size=2, num_threads=2, crash_at=6) as pool:
            pool.async_reset()
            seen = set()
            for _ in range(100):
                *_, trunc, info = pool.recv()
                ids = info["env_id"]
                seen.update(ids.tolist())
                truncated += int(trunc.sum())
                steps += len(ids)
                pool.send(np.zeros(len(ids), int), ids)
            gens = pool._backend._generation
    assert steps == 200 and seen == {0, 1, 2, 3}
    assert truncated >= 2 and min(gens) >= 1  # both workers crashed, were respawned, and went on


def test_raising_env_is_survived_with_a_warning_carrying_its_traceback():
    with envs.make("ToyFailing-v0", num_envs=2, num_threads=1) as pool:
        pool.reset()
        for _ in range(2):
            pool.step(np.zeros((2, 2), np.float32))
        with pytest.warns(RuntimeWarning, match=r"(?s)ZeroDivisionError: toy env blew up.*toy_envs.py"):
            *_, trunc, info = pool.step(np.zeros((2, 2), np.float32))
        assert trunc.tolist() == [True, True]
        *_, trunc, info = pool.step(np.zeros((2, 2), np.float32))
        assert info["elapsed_step"].tolist() == [0, 0] and not trunc.any()


def test_hung_worker_is_killed_after_step_timeout_and_respawned():
    with envs.make("ToyHang-v0", num_envs=2, num_threads=2, hang_at=2, step_timeout=1.0) as pool:
        pool.reset()
        pool.step(np.zeros(2, int))
        with pytest.warns(RuntimeWarning, match=r"did not answer within step_timeout=1 s"):
            *_, trunc, info = pool.step(np.zeros(2, int))
        assert trunc.tolist() == [True, True]  # both workers' envs hang in their second step
        *_, trunc, info = pool.step(np.zeros(2, int))
        assert info["elapsed_step"].tolist() == [0, 0]
        *_, trunc, info = pool.step(np.zeros(2, int))  # a fresh HangEnv hangs only at its own step 2...
        assert info["elapsed_step"].tolist() == [1, 1]


def test_worker_failing_past_max_retry_raises_and_closes_the_pool():
    pool = envs.make("ToySuicide-v0", num_envs=2, num_threads=1, fail_at=1, max_retry=1)
    pool.reset()
    with pytest.warns(RuntimeWarning, match="respawning"):
        pool.step(np.zeros((2, 2), np.float32))  # dies: respawned, truncated
    pool.step(np.zeros((2, 2), np.float32))  # the reset step of the fresh envs
    with pytest.raises(WorkerError, match=r"(?s)died with exit code -9.*2 faults in a row exceed max_retry=1"):
        pool.step(np.zeros((2, 2), np.float32))
    assert pool.closed


def test_bad_recovery_kwargs():
    with pytest.raises(ValueError, match="max_retry must be an int >= 0"):
        envs.make("CartPole-v1", backend="process", max_retry=-1)
    with pytest.raises(ValueError, match="step_timeout must be > 0"):
        envs.make("CartPole-v1", backend="process", step_timeout=0)


def test_sebulba_loop_survives_a_crashing_env():
    """The real loop (RandomAgent, sync mode) over envs whose worker SIGKILLs itself every 7 steps."""
    import sebulba
    from sebulba.agents import RandomAgent

    spec = envs.make_spec("ToyCrashAt-v0")
    cfg = sebulba.LoopConfig(
        env_id="ToyCrashAt-v0", env_kwargs={"crash_at": 7}, num_envs=4, steps_per_cycle=5,
        log_every_s=1000.0, async_mode=False, inferencers_per_device=1,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sebulba.GymnasiumLoop(RandomAgent(spec), cfg) as loop:
            ctx = loop.run(max_cycles=6)
    assert ctx.env_steps == 6 * 4 * 5
    crashes = [w for w in caught if "died with exit code -9" in str(w.message)]
    assert len(crashes) >= 2


def test_worker_that_cannot_start_reports_why(tmp_path):
    """A script without a `__main__` guard: each worker re-runs it on import and tries to start
    workers of its own, which multiprocessing refuses. The parent gets WorkerDied pointing at the
    worker's stderr, and that stderr carries multiprocessing's own explanation (not an error from
    cleaning up a process that never started)."""
    import subprocess
    import sys

    script = tmp_path / "no_main_guard.py"
    script.write_text("import envs\nenvs.make('CartPole-v1', backend='process', num_envs=2, num_threads=1)\n")
    env = child_env()
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=100, env=env)
    assert run.returncode != 0
    last_line = run.stderr.strip().splitlines()[-1]
    assert last_line.startswith("envs.process.errors.WorkerDied"), run.stderr
    assert "exited during startup" in last_line
    assert "bootstrapping phase" in run.stderr, run.stderr  # the worker's own reason reached stderr
    assert "can only join a started process" not in run.stderr, run.stderr


ORPHANED_POOL = """
import os, signal
import numpy as np
import envs
from tests.support import manager_envs
manager_envs.register_all()
pool = envs.make("ToyHang-v0", num_envs=2, num_threads=2, hang_at=2, step_timeout=3600.0)
pool.reset()
pool.step(np.zeros(2, int))
pool.send(np.zeros(2, int))  # both workers now hang in their envs' second step
print(*[p.pid for p in pool._backend._procs], flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_workers_end_with_a_killed_parent():
    """A trainer SIGKILLed (the OOM killer, a scheduler) while its envs hang in a step: its workers
    end too, rather than live on as orphans holding its stdout and stderr."""
    assert_they_end(pids_of_a_killed_parent(ORPHANED_POOL))
