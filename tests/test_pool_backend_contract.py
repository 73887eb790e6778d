"""The backend contract (envs/contract.py): every backend `envs/backends.py` starts declares every
member a pool reads, so the pool reads them as plain attributes; a user's backend with only the
required members gets the contract's defaults; configuring and starting take one shape."""

import collections.abc

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.backends import Configured, configure, pool_class
from envs.config import PoolConfig
from envs.contract import Backend, BackendBase
from envs.pool import DmEnvPool, GymnasiumEnvPool
from envs.ready import Batch, Chunk

# Every member a pool reads besides the step interface: the contract's annotated attributes.
MEMBERS = sorted(BackendBase.__annotations__)
CAPABILITIES = ("prime_reset", "snapshot", "restore", "render", "make_xla", "xla_backend")


def _compiled() -> bool:
    from envs.native.kernel.build import library

    return library() is not None


def _atari_kernel() -> bool:
    pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[atari]'")
    from envs.atari.build import library

    return library() is not None


def _ale_vector_env() -> bool:
    """ALE's vector env: where the Atari kernel is unavailable (SEBULBA_NATIVE_KERNEL=0 here)."""
    return pytest.importorskip("ale_py") is not None


def _mujoco() -> bool:
    pytest.importorskip("mujoco", reason="the mujoco extra is not installed: pip install -e '.[mujoco]'")
    from envs.mujoco.build import library

    return library() is not None


# (task id, kwargs, the backend class it starts, what it needs)
CASES = [
    ("CartPole-v1", {}, "KernelPool", _compiled),
    ("SignalCorridor-v0", {}, "NativeBackend", None),  # a Dict task: numpy only
    ("CartPole-v1", {"backend": "process", "num_threads": 1}, "ProcessBackend", None),
    ("gymnax/CartPole-v1", {}, "JaxBackend", lambda: pytest.importorskip("gymnax") is not None),
    ("Pong-v5", {}, "AtariNativeBackend", _atari_kernel),
    ("Pong-v5", {}, "AtariBackend", _ale_vector_env),
    ("Pong-v5", {"render_mode": "rgb_array"}, "AtariSingleBackend", lambda: pytest.importorskip("ale_py") is not None),
    ("Hopper-v5", {}, "MujocoBackend", _mujoco),
    ("CheetahRun-v1", {}, "DmcBackend", _mujoco),  # dm_control's suite on the same kernel
]


def test_the_contract_names_every_member_a_pool_reads():
    assert MEMBERS == sorted(["observation_space", "action_space", "extra_info", "player_names", "lockstep",
                              "reset_options", "max_seed", "info_dtypes", *CAPABILITIES])  # fmt: skip
    assert Backend.__abstractmethods__ == {"send", "collect", "gather", "close"}


@pytest.mark.parametrize("task_id, kwargs, cls_name, needs", CASES, ids=[c[2] for c in CASES])
def test_every_backend_implements_the_contract(task_id, kwargs, cls_name, needs, monkeypatch):
    if needs is not None and not needs():
        pytest.skip(f"{cls_name}: its native library is unavailable here")
    if needs is _ale_vector_env:
        monkeypatch.setenv("SEBULBA_NATIVE_KERNEL", "0")
    configured = configure(task_id, "gymnasium", {"num_envs": 2, **kwargs})
    assert isinstance(configured, Configured)
    backend = configured.start()
    try:
        assert type(backend).__name__ == cls_name
        assert isinstance(backend, BackendBase)
        # The compiled pool has its own step interface, driven by its own pool class.
        assert isinstance(backend, Backend) == (cls_name != "KernelPool")
        assert issubclass(pool_class(backend, "gymnasium"), GymnasiumEnvPool)
        assert issubclass(pool_class(backend, "dm"), DmEnvPool)
        values = {name: getattr(backend, name) for name in MEMBERS}  # plain reads: each is declared
        assert isinstance(values["observation_space"], gym.spaces.Space)
        assert isinstance(values["action_space"], gym.spaces.Space)
        assert isinstance(values["extra_info"], collections.abc.Mapping)
        assert all(isinstance(np.dtype(d), np.dtype) for d in values["extra_info"].values())
        assert isinstance(values["player_names"], tuple) and all(isinstance(p, str) for p in values["player_names"])
        assert type(values["lockstep"]) is bool and type(values["reset_options"]) is bool
        assert values["max_seed"] is None or isinstance(values["max_seed"], int)
        assert isinstance(values["info_dtypes"], collections.abc.Mapping)
        for name in CAPABILITIES:
            assert values[name] is None or callable(values[name]), name
        assert (values["snapshot"] is None) == (values["restore"] is None)
        # The configured shape describes the started backend: make_spec's spaces are the pool's.
        assert configured.observation_space == backend.observation_space
        assert configured.action_space == backend.action_space
        assert dict(configured.extra_info) == dict(backend.extra_info)
        assert tuple(configured.player_names) == backend.player_names
    finally:
        backend.close()


@pytest.mark.parametrize("task_id, kwargs, cls_name, needs", CASES, ids=[c[2] for c in CASES])
def test_a_sync_pool_steps_any_subset_of_its_envs(task_id, kwargs, cls_name, needs, monkeypatch):
    """EnvPool's partial step: the envs named step, the others wait; recv returns those envs, in
    env id order. ALE's vector env (lockstep) refuses, saying why."""
    if needs is not None and not needs():
        pytest.skip(f"{cls_name}: its native library is unavailable here")
    if needs is _ale_vector_env:
        monkeypatch.setenv("SEBULBA_NATIVE_KERNEL", "0")
    with envs.make_gymnasium(task_id, num_envs=3, seed=0, **kwargs) as pool:
        assert type(pool._backend).__name__ == cls_name
        pool.action_space.seed(0)
        actions = np.stack([pool.action_space.sample() for _ in range(3)])
        pool.reset()
        if pool._backend.lockstep:
            with pytest.raises(ValueError, match="last batch received"):
                pool.step(actions[:2], np.array([2, 0]))
            return
        *_, info = pool.step(actions[:2], np.array([2, 0]))
        assert info["env_id"].tolist() == [0, 2] and info["elapsed_step"].tolist() == [1, 1]
        *_, info = pool.step(actions)
        assert info["env_id"].tolist() == [0, 1, 2] and info["elapsed_step"].tolist() == [2, 1, 2]


def test_make_spec_and_make_read_the_same_configured_shape():
    spec = envs.make_spec("CartPole-v1", num_envs=3)
    with envs.make("CartPole-v1", num_envs=3) as pool:
        assert spec.observation_space == pool.spec.observation_space
        assert spec.action_space == pool.spec.action_space
        assert spec.extra_info == pool.spec.extra_info == {}
        assert spec.player_names == pool.spec.player_names == ()
        assert spec.config == pool.config


class Minimal(Backend):
    """A user's backend: its spaces and the four required methods, nothing else."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, num_envs: int):
        self._all = np.arange(num_envs, dtype=np.int32)
        self._elapsed = np.zeros(num_envs, np.int32)
        self._sent: list[tuple[np.ndarray, bool]] = []
        self.closed = False

    def send(self, ids, action, reset):
        self._sent.append((self._all.copy() if ids is None else ids, reset))

    def collect(self, block):
        out = []
        for ids, reset in self._sent:
            self._elapsed[ids] = 0 if reset else self._elapsed[ids] + 1
            k = len(ids)
            zeros = np.zeros(k, bool)
            batch = Batch(ids, np.zeros((k, 2), np.float32), np.full(k, float(not reset), np.float32), zeros,
                          zeros.copy(), self._elapsed[ids].copy())  # fmt: skip
            out.append(Chunk(ids, batch))
        self._sent = []
        return out

    def gather(self, ids):
        raise AssertionError("every chunk carries its batch")

    def close(self):
        self.closed = True


def _minimal_pool(num_envs: int = 3) -> GymnasiumEnvPool:
    config = PoolConfig.create("Minimal-v0", "gymnasium", "native", None, {"num_envs": num_envs}, {})
    return GymnasiumEnvPool(config, Minimal(num_envs))


def test_a_backend_with_only_the_required_members_gets_the_defaults():
    backend = Minimal(1)
    assert dict(backend.extra_info) == {} and dict(backend.info_dtypes) == {}
    assert backend.player_names == () and backend.lockstep is False and backend.reset_options is False
    assert backend.max_seed is None
    assert all(getattr(backend, name) is None for name in CAPABILITIES)


def test_a_pool_over_a_minimal_backend_runs_and_refuses_what_it_lacks():
    pool = _minimal_pool()
    obs, info = pool.reset()
    assert obs.shape == (3, 2) and info["env_id"].tolist() == [0, 1, 2]
    obs, reward, terminated, truncated, info = pool.step(np.array([0, 1, 0]))
    assert reward.tolist() == [1.0, 1.0, 1.0] and info["elapsed_step"].tolist() == [1, 1, 1]
    assert pool.extra_info == {} and pool.spec.extra_info == {} and pool.spec.player_names == ()
    with pytest.raises(ValueError, match="cannot reseed its envs"):
        pool.reset(seed=1)
    with pytest.raises(ValueError, match="take no reset options"):
        pool.reset(options={"difficulty": 1})
    with pytest.raises(NotImplementedError, match="can be snapshotted"):
        pool.snapshot()
    with pytest.raises(NotImplementedError, match="can be snapshotted"):
        pool.restore(b"")
    pool.close()
    assert pool._backend.closed


def test_a_backend_missing_a_required_method_is_refused_when_made():
    class NoGather(Backend):
        def send(self, ids, action, reset): ...

        def collect(self, block):
            return []

        def close(self): ...

    with pytest.raises(TypeError, match="gather"):
        NoGather()
