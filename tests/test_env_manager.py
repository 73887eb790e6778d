"""DI-engine's env managers (seed 004) with real Gymnasium envs and real worker processes:
API, env states, auto-reset, episode_num, seeding, shared memory, and the fault drills."""

import os
import signal
import time

import gymnasium as gym
import pytest

import envs
from envs import (
    AsyncSubprocessEnvManager,
    BaseEnvManager,
    EnvState,
    SyncSubprocessEnvManager,
)
from envs.process.errors import EnvRaised, WorkerTimeout
from tests.support.orphans import assert_they_end, pids_of_a_killed_parent
from tests.support.manager_envs import (
    BigObsEnv,
    CountEnv,
    DieOnResetEnv,
    HangEnv,
    HangOnResetEnv,
    RaiseEnv,
)

pytestmark = pytest.mark.timeout(120)

MANAGERS = [BaseEnvManager, SyncSubprocessEnvManager, AsyncSubprocessEnvManager]
SUBPROCESS = [SyncSubprocessEnvManager, AsyncSubprocessEnvManager]
FAST = dict(retry_waiting_time=0.0)


def all_ready(mgr, n=None):
    """ready_obs once every env that is not DONE/ERROR has answered (async managers answer later)."""
    n = len([s for s in mgr.env_states if s in (EnvState.RUN, EnvState.RESET)]) if n is None else n
    deadline = time.monotonic() + 60
    obs = mgr.ready_obs
    while len(obs) < n:
        assert time.monotonic() < deadline, f"envs not ready: {mgr.env_states}"
        obs = mgr.ready_obs
    return obs


def step_all(mgr, action=1):
    """Step every ready env and return all their timesteps (async: until each has answered)."""
    ids = set(all_ready(mgr))
    out = mgr.step({i: action for i in ids})
    while set(out) != ids:
        out.update(mgr.step({}))
    return out


@pytest.fixture(params=MANAGERS, ids=lambda c: c.__name__)
def manager_cls(request):
    return request.param


def test_exports():
    assert envs.BaseEnvTimestep._fields == ("obs", "reward", "done", "info")
    assert [s.name for s in EnvState] == ["VOID", "INIT", "RUN", "RESET", "DONE", "ERROR"]


def test_api_states_and_auto_reset(manager_cls):
    mgr = manager_cls(env_fn=[lambda: CountEnv(3), lambda: CountEnv(4)], cfg=dict(FAST))
    assert mgr.env_num == 2 and mgr.closed and mgr.env_states == [EnvState.VOID] * 2
    with mgr:
        mgr.launch()
        obs = all_ready(mgr)
        assert sorted(obs) == [0, 1] and mgr.env_states == [EnvState.RUN] * 2
        assert obs[0].tolist()[:2] == [0, 1] and mgr.active_env == [0, 1]
        for t in (1, 2):
            ts = step_all(mgr)
            assert ts[0].obs[0] == t and ts[0].reward == 1.0 and not ts[0].done
            assert ts[0].info["t"] == t and ts[0].info["terminated"] is False
        ts = step_all(mgr)
        assert ts[0].done and ts[0].info["terminated"] and not ts[0].info["truncated"]
        assert ts[0].obs[0] == 3  # the final observation; the auto-reset's is in ready_obs
        assert not ts[1].done
        obs = all_ready(mgr)
        assert obs[0].tolist()[:2] == [0, 2] and obs[1][0] == 3  # env 0 reset a second time
        assert not mgr.done
    assert mgr.closed and mgr.env_states == [EnvState.VOID] * 2


def test_auto_reset_off_and_manual_reset(manager_cls):
    with manager_cls([lambda: CountEnv(2)] * 2, dict(auto_reset=False, **FAST)) as mgr:
        mgr.launch()
        step_all(mgr)
        ts = step_all(mgr)
        assert all(t.done for t in ts.values())
        assert mgr.env_states == [EnvState.DONE] * 2 and mgr.done and mgr.active_env == []
        assert mgr.ready_obs == {}
        with pytest.raises(ValueError, match=r"env 0 is not ready \(state DONE\)"):
            mgr.step({0: 1})
        mgr.reset({1: {"options": {"start": 1}}})
        obs = all_ready(mgr, 1)
        assert list(obs) == [1] and obs[1][0] == 1 and mgr.env_states == [EnvState.DONE, EnvState.RUN]
        ts = mgr.step({1: 0})
        while not ts:
            ts = mgr.step({})
        assert ts[1].done  # started at t=1 of 2


def test_episode_num(manager_cls):
    with manager_cls([lambda: CountEnv(2)] * 2, dict(episode_num=2, **FAST)) as mgr:
        mgr.launch()
        for _ in range(3):
            step_all(mgr)
        assert mgr.env_states == [EnvState.RUN] * 2  # first episode done, second running
        ts = step_all(mgr)
        assert all(t.done for t in ts.values()) and mgr.done and mgr.env_states == [EnvState.DONE] * 2
        mgr.reset()  # a full reset starts the episode counts afresh
        all_ready(mgr, 2)
        assert not mgr.done


def test_seed_and_dynamic_seed(manager_cls):
    def first_draw(seed):
        return gym.utils.seeding.np_random(seed)[0].random()

    mgr = manager_cls([lambda: CountEnv(1)] * 2, dict(FAST))
    mgr.seed(7)
    with mgr:
        mgr.launch()
        obs = all_ready(mgr)
        assert [obs[i][2] for i in (0, 1)] == [first_draw(7), first_draw(8)]
        step_all(mgr)  # episodes of length 1: each step auto-resets
        obs = all_ready(mgr)
        assert obs[0][2] != first_draw(7)  # dynamic: later episodes follow the env's generator
        mgr.seed([3, 4], dynamic_seed=False)
        for _ in range(2):
            step_all(mgr)
            obs = all_ready(mgr)
            assert [obs[i][2] for i in (0, 1)] == [first_draw(3), first_draw(4)]
    with pytest.raises(ValueError, match="seed list must have env_num=2"):
        mgr.seed([1])
    with pytest.raises(ValueError, match="seed for env 0 must be an int"):
        mgr.seed({0: "x"})


def test_closed_and_not_ready_errors(manager_cls):
    mgr = manager_cls([lambda: CountEnv(5)] * 2, dict(FAST))
    for call in (lambda: mgr.step({0: 0}), mgr.reset):
        with pytest.raises(RuntimeError, match="closed .*call launch"):
            call()
    mgr.launch()
    try:
        with pytest.raises(RuntimeError, match="launch.. called on a running"):
            mgr.launch()
        all_ready(mgr)
        with pytest.raises(ValueError, match=r"actions key 2 is not an env id in \[0, 2\)"):
            mgr.step({2: 0})
        with pytest.raises(ValueError, match="actions must be a dict"):
            mgr.step([0, 0])
        mgr.step({0: 0})
        if manager_cls is not AsyncSubprocessEnvManager:
            mgr.step({0: 0})  # answered: ready again
    finally:
        mgr.close()
    mgr.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        mgr.step({0: 0})


def test_async_step_returns_before_slow_envs():
    slow = lambda: HangEnv(hang_at=2)
    cfg = dict(wait_num=1, step_timeout=30, **FAST)
    with AsyncSubprocessEnvManager([slow, lambda: CountEnv(100)], cfg) as mgr:
        mgr.launch()
        all_ready(mgr)
        step_all(mgr)
        ts = mgr.step({0: 0, 1: 0})
        assert list(ts) == [1]  # env 0 is still in its step
        assert list(mgr.ready_obs) == [1]
        with pytest.raises(ValueError, match="env 0 is not ready .*still running"):
            mgr.step({0: 0})


def test_bad_cfg_and_env_fn():
    with pytest.raises(ValueError, match=r"unknown SyncSubprocessEnvManager cfg key\(s\) \['wait_num'\]"):
        SyncSubprocessEnvManager([CountEnv], dict(wait_num=2))
    with pytest.raises(ValueError, match=r"unknown BaseEnvManager cfg key\(s\) \['nope'\]"):
        BaseEnvManager([CountEnv], dict(nope=1))
    for cfg, msg in [
        (dict(retry_type="respawn"), "retry_type must be one of"),
        (dict(max_retry=-1), "max_retry must be an int >= 0"),
        (dict(step_timeout=0), "step_timeout must be > 0"),
        (dict(auto_reset=1), "auto_reset must be a bool"),
        (dict(episode_num=0), "episode_num must be an int >= 1"),
    ]:
        with pytest.raises(ValueError, match=msg):
            BaseEnvManager([CountEnv], cfg)
    with pytest.raises(ValueError, match="env_fn must be a non-empty list"):
        BaseEnvManager([], {})
    with pytest.raises(ValueError, match=r"env_fn\[1\] must be a callable"):
        BaseEnvManager([CountEnv, 3], {})


@pytest.mark.parametrize("shared", [True, False])
def test_shared_memory_observations(shared):
    with SyncSubprocessEnvManager([lambda: BigObsEnv(length=3)] * 2, dict(shared_memory=shared)) as mgr:
        mgr.launch()
        assert mgr.uses_shared_memory(0) is shared
        assert all_ready(mgr)[0].shape == (100, 1000)
        first = None
        for t in (1, 2):
            ts = step_all(mgr)
            assert ts[0].obs.shape == (100, 1000) and (ts[0].obs == t).all() and (ts[1].obs == t).all()
            first = ts[0].obs if first is None else first
        assert (first == 1).all()  # a copy: the next step did not overwrite it
        ts = step_all(mgr)
        assert ts[0].done and (ts[0].obs == 3).all()  # final obs, then the auto-reset's
        assert (all_ready(mgr)[0] == 0).all()
    with SyncSubprocessEnvManager([lambda: CountEnv()], {}) as mgr:
        mgr.launch()
        assert not mgr.uses_shared_memory(0)  # 24 bytes: below the threshold, pickled


# ---------------------------------------------------------------------------- fault drills
@pytest.mark.parametrize("cls", SUBPROCESS, ids=lambda c: c.__name__)
def test_sigkilled_worker_is_respawned_and_episode_truncated(cls):
    with cls([lambda: CountEnv(10)] * 2, dict(FAST)) as mgr:
        mgr.launch()
        step_all(mgr)
        step_all(mgr)
        pid = mgr.worker_pid(1)
        os.kill(pid, signal.SIGKILL)
        ts = step_all(mgr)
        assert not ts[0].done and ts[0].obs[0] == 3
        assert ts[1].done and ts[1].info["truncated"] and ts[1].info["abnormal"]
        assert "died with exit code -9" in ts[1].info["fault"]
        assert mgr.worker_pid(1) != pid
        obs = all_ready(mgr)
        assert obs[1][0] == 0 and obs[0][0] == 3  # env 1 starts a new episode in a fresh worker
        ts = step_all(mgr)
        assert ts[1].obs[0] == 1 and ts[0].obs[0] == 4
        assert mgr.env_states == [EnvState.RUN] * 2


@pytest.mark.parametrize("cls", SUBPROCESS, ids=lambda c: c.__name__)
def test_hung_step_raises_timeout_naming_the_env(cls):
    cfg = dict(step_timeout=1.0, **FAST)
    with cls([lambda: CountEnv(100), lambda: HangEnv(hang_at=2)], cfg) as mgr:
        mgr.launch()
        step_all(mgr)
        pid = mgr.worker_pid(1)
        start = time.monotonic()
        with pytest.raises(TimeoutError, match=r"env 1: step did not finish within step_timeout=1 s") as info:
            step_all(mgr)
        assert time.monotonic() - start < 20
        assert isinstance(info.value, WorkerTimeout)
        ts = info.value.timesteps
        assert ts[1].done and ts[1].info["truncated"] and ts[1].info["abnormal"]
        if cls is SyncSubprocessEnvManager:
            assert ts[0].obs[0] == 2
        assert mgr.worker_pid(1) != pid  # killed and respawned
        obs = all_ready(mgr)
        assert obs[1][0] == 0
        step_all(mgr)  # the fresh env does not hang (it hangs only in its first life... per process)


@pytest.mark.parametrize("retry_type", ["reset", "renew"])
@pytest.mark.parametrize("cls", SUBPROCESS, ids=lambda c: c.__name__)
def test_exception_in_env_reaches_caller_with_traceback(cls, retry_type):
    with cls([lambda: CountEnv(100), lambda: RaiseEnv(fail_at=2)], dict(retry_type=retry_type, **FAST)) as mgr:
        mgr.launch()
        step_all(mgr)
        pid = mgr.worker_pid(1)
        with pytest.raises(EnvRaised, match=r"(?s)env 1's worker .*ZeroDivisionError: manager toy env blew up.*worker traceback.*manager_envs.py") as info:
            step_all(mgr)
        assert info.value.timesteps[1].info["abnormal"]
        assert (mgr.worker_pid(1) == pid) is (retry_type == "reset")
        obs = all_ready(mgr)
        assert obs[1][0] == 0 and mgr.env_states == [EnvState.RUN] * 2
        step_all(mgr)  # step 1 of the new episode works


@pytest.mark.parametrize("retry_type", ["reset", "renew"])
def test_exception_in_process_is_the_original(retry_type):
    with BaseEnvManager([lambda: RaiseEnv(fail_at=1)], dict(retry_type=retry_type, max_retry=5, **FAST)) as mgr:
        mgr.launch()
        with pytest.raises(ZeroDivisionError, match="blew up") as info:
            mgr.step({0: 0})
        assert any(f.name == "step" and str(f.path).endswith("manager_envs.py") for f in info.traceback)
        resets = mgr.ready_obs[0][1]  # reset in place: the same env's second reset; renew: a fresh env's first
        assert resets == (2 if retry_type == "reset" else 1)


def test_hung_reset_is_retried_then_given_up():
    cfg = dict(reset_timeout=0.5, max_retry=1, **FAST)
    with SyncSubprocessEnvManager([lambda: CountEnv(100), lambda: HangOnResetEnv()], cfg) as mgr:
        with pytest.warns(RuntimeWarning, match=r"env 1 failed 2 times .*reset did not finish within reset_timeout=0.5 s"):
            mgr.launch()
        assert mgr.env_states == [EnvState.RUN, EnvState.ERROR]
        assert mgr.step({0: 0})[0].obs[0] == 1


def test_unpicklable_env_fn_is_a_clear_error():
    import threading

    lock = threading.Lock()
    with pytest.raises(ValueError, match=r"env_fn\[0\] cannot be sent to a worker process: cloudpickle failed"):
        SyncSubprocessEnvManager([lambda: (lock, CountEnv())[1]], {})


def test_worker_failing_past_max_retry_goes_to_error_others_keep_working():
    with SyncSubprocessEnvManager([lambda: CountEnv(100), lambda: DieOnResetEnv()], dict(max_retry=2, **FAST)) as mgr:
        with pytest.warns(RuntimeWarning, match=r"env 1 failed 3 times in a row \(max_retry=2\).*died with exit code -9"):
            mgr.launch()
        assert mgr.env_states == [EnvState.RUN, EnvState.ERROR]
        assert "given up" in mgr.env_errors[1] and list(mgr.ready_obs) == [0]
        assert mgr.active_env == [0]
        for t in (1, 2, 3):
            assert mgr.step({0: 0})[0].obs[0] == t
        with pytest.raises(ValueError, match=r"env 1 is not ready \(state ERROR; env 1 failed 3 times"):
            mgr.step({1: 0})
        with pytest.raises(ValueError, match="env 1 is in ERROR and cannot be reset"):
            mgr.reset({1: None})


def test_step_faults_past_max_retry_and_every_env_failing():
    with SyncSubprocessEnvManager([lambda: CountEnv(100), lambda: RaiseEnv(fail_at=1)], dict(max_retry=1, **FAST)) as mgr:
        mgr.launch()
        with pytest.raises(EnvRaised):
            mgr.step({0: 0, 1: 0})  # fault 1: recovered (reset in place)
        with pytest.warns(RuntimeWarning, match="env 1 failed 2 times"), pytest.raises(EnvRaised) as info:
            mgr.step({0: 0, 1: 0})  # fault 2: given up
        assert info.value.timesteps[1].info["error"].startswith("env 1 failed 2 times")
        assert info.value.timesteps[0].obs[0] == 2
        assert mgr.env_states == [EnvState.RUN, EnvState.ERROR]
        assert mgr.step({0: 0})[0].obs[0] == 3
    mgr = SyncSubprocessEnvManager([lambda: DieOnResetEnv()], dict(max_retry=0))
    with pytest.warns(RuntimeWarning), pytest.raises(envs.WorkerError, match="no env could be started"):
        mgr.launch()
    assert mgr.closed


def test_worker_that_does_not_start_within_connect_timeout():
    import time as _time

    mgr = SyncSubprocessEnvManager([lambda: CountEnv(), lambda: (_time.sleep(3600), CountEnv())[1]], dict(connect_timeout=0.5, max_retry=1))
    with pytest.warns(RuntimeWarning, match=r"env 1 failed 2 times .*in start: env 1's worker .*did not start within 0.5 s"):
        mgr.launch()
    with mgr:
        assert mgr.env_states == [EnvState.RUN, EnvState.ERROR]


ORPHANED_MANAGER = """
import os, signal, time
from envs import AsyncSubprocessEnvManager
from tests.support.manager_envs import CountEnv, HangEnv
mgr = AsyncSubprocessEnvManager([lambda: HangEnv(hang_at=1), lambda: CountEnv(100)], dict(wait_num=1, step_timeout=3600))
mgr.launch()
while len(mgr.ready_obs) < 2:
    time.sleep(0.01)
mgr.step({0: 0, 1: 0})  # env 0's worker now hangs in its step
print(mgr.worker_pid(0), mgr.worker_pid(1), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_workers_end_with_a_killed_manager():
    """The manager's process SIGKILLed while an env hangs in its step and another waits for a
    command: both workers end too."""
    assert_they_end(pids_of_a_killed_parent(ORPHANED_MANAGER))
