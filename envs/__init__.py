"""envs: a batched env pool with EnvPool's interface.

    pool = envs.make("CartPole-v1", env_type="gymnasium", num_envs=16)
    obs, info = pool.reset()
    obs, reward, terminated, truncated, info = pool.step(actions)

Built-in classic-control tasks run as vectorized numpy in-process; Atari games (`Pong-v5`, ...)
run in ALE's C++ threaded vector env (the `atari` extra); any other Gymnasium id runs in worker
processes. `backend="process"` forces Gymnasium's own implementation of a built-in id.

`envs.make_vector_env(task_id, num_envs)` gives a sync pool as a `gymnasium.vector.VectorEnv` (batched
spaces, seeded reset, masked info), and `gymnasium.make_vec` of a built-in task's id returns it.
"""

from __future__ import annotations

from typing import Any

from envs.atari.games import ATARI_TASKS
from envs.config import PoolConfig
from envs.manager import AsyncSubprocessEnvManager, BaseEnvManager, BaseEnvTimestep, EnvState, SyncSubprocessEnvManager
from envs.pool import DmEnvPool, DmObservation, EnvPool, GymnasiumEnvPool
from envs.process.errors import WorkerError
from envs.registry import list_all_envs, resolve
from envs.spec import EnvSpec
from envs.vector import make_vector_env


def _build(task_id: str, env_type: str, kwargs: dict[str, Any], start: bool) -> tuple[PoolConfig, Any]:
    backend = kwargs.pop("backend", None)
    name, native = resolve(task_id, backend)
    if name == "native":
        config = PoolConfig.create(task_id, env_type, name, native.max_episode_steps, kwargs, {})
        if not start:
            return config, (native.observation_space(), native.action_space(), {})
        if config.render_mode is None:  # the compiled pool draws nothing: rendering pools stay on numpy
            from envs.native.kernel.build import library
            from envs.native.kernel_pool import TASK_CODES, KernelPool

            lib = library() if native.task_id in TASK_CODES else None  # Dict tasks: numpy only
            if lib is not None:
                return config, KernelPool(lib, native, config)
        from envs.native.backend import NativeBackend

        return config, NativeBackend(native, config)
    if name == "mujoco":
        from envs.mujoco import backend as mujoco_backend

        if not mujoco_backend.mujoco_available():
            raise ImportError(mujoco_backend.INSTALL_HINT)
        task = mujoco_backend.configure(task_id, env_type, kwargs)
        if not start:
            return task.config, (task.observation_space, task.action_space, task.extra_info)
        from envs.mujoco.build import library, why_unavailable

        lib = library()
        if lib is None:
            raise RuntimeError(f"backend='mujoco': the native MuJoCo pool is unavailable ({why_unavailable()})")
        return task.config, mujoco_backend.MujocoBackend(task, lib)
    if name == "atari":
        from envs.atari import task as atari_task

        task = atari_task.configure(task_id, env_type, kwargs)
        if task.backend == "single":  # mode, difficulty or render_mode: one ALEInterface per env
            from envs.atari.single import AtariSingleBackend as backend_cls
        else:
            from envs.atari.backend import AtariBackend as backend_cls
        if not start:
            return task.config, (task.observation_space, task.action_space, backend_cls.extra_info)
        return task.config, backend_cls(task)
    from envs.process import gym_task

    task = gym_task.configure(task_id, env_type, kwargs)
    if task.config.render_mode is not None:
        raise ValueError(
            f"render_mode={task.config.render_mode!r}: {task_id!r} runs in worker processes, which do not render; "
            "rendering is built in for the classic-control tasks and Atari games"
        )
    if not start:
        return task.config, (task.observation_space, task.action_space, {})
    from envs.process.backend import ProcessBackend

    return task.config, ProcessBackend(task)


def make(task_id: str, env_type: str = "gymnasium", **kwargs: Any) -> EnvPool:
    """Build a pool of num_envs envs of task_id. kwargs are EnvPool's (seed 001) plus task ones."""
    config, backend = _build(task_id, env_type, dict(kwargs), start=True)
    if type(backend).__name__ == "KernelPool":
        from envs.native.kernel_pool import CompiledDmPool, CompiledGymnasiumPool

        return (CompiledDmPool if env_type == "dm" else CompiledGymnasiumPool)(config, backend)
    return (DmEnvPool if env_type == "dm" else GymnasiumEnvPool)(config, backend)


def make_gym(task_id: str, **kwargs: Any) -> EnvPool:
    return make(task_id, env_type="gym", **kwargs)


def make_gymnasium(task_id: str, **kwargs: Any) -> EnvPool:
    return make(task_id, env_type="gymnasium", **kwargs)


def make_dm(task_id: str, **kwargs: Any) -> EnvPool:
    return make(task_id, env_type="dm", **kwargs)


def is_atari(task_id: str) -> bool:
    """Whether task_id is an Atari game served by ALE's vector env (`<Game>-v5`)."""
    return task_id in ATARI_TASKS


def make_spec(task_id: str, env_type: str = "gymnasium", **kwargs: Any) -> EnvSpec:
    """The spaces and config `make` would give, without building the pool."""
    config, (obs_space, act_space, extra_info) = _build(task_id, env_type, dict(kwargs), start=False)
    return EnvSpec(config, obs_space, act_space, extra_info)


__all__ = [
    "AsyncSubprocessEnvManager",
    "BaseEnvManager",
    "BaseEnvTimestep",
    "DmEnvPool",
    "DmObservation",
    "EnvPool",
    "EnvSpec",
    "EnvState",
    "GymnasiumEnvPool",
    "PoolConfig",
    "SyncSubprocessEnvManager",
    "WorkerError",
    "is_atari",
    "list_all_envs",
    "make",
    "make_dm",
    "make_gym",
    "make_gymnasium",
    "make_spec",
    "make_vector_env",
]
