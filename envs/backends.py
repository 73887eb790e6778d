"""Building a task's backend: the one place that maps the backend `registry.resolve` names (native
numpy or compiled, MuJoCo, Atari, JAX-native envs, worker processes) to the object that steps the envs, and each
backend to the pool class that serves it (`pool_class`)."""

from __future__ import annotations

from typing import Any

from envs.config import PoolConfig
from envs.pool import DmEnvPool, EnvPool, GymnasiumEnvPool
from envs.atari.games import ATARI_PLAYER_TASKS
from envs.ids import is_pettingzoo_id, renders_in_workers
from envs.registry import resolve


def build(task_id: str, env_type: str, kwargs: dict[str, Any], start: bool) -> tuple[PoolConfig, Any]:
    """(config, backend) of task_id's pool: the backend `registry.resolve` names, configured from
    kwargs (its own checks), and built when `start`; otherwise (observation space, action space,
    extra info), what `make_spec` needs, and nothing is built."""
    backend = kwargs.pop("backend", None)
    name, native = resolve(task_id, backend)
    if name == "native":
        config = PoolConfig.create(task_id, env_type, name, native.max_episode_steps, kwargs, {})
        if not start:
            return config, (native.observation_space(), native.action_space(), {})
        if config.render_mode is None:  # the compiled pool draws nothing: rendering pools stay on numpy
            from envs.native.kernel.build import library
            from envs.native.kernel_pool import KernelPool
            from envs.native.tasks import TASK_CODES

            lib = library() if native.task_id in TASK_CODES else None  # Dict tasks: numpy only
            if lib is not None:
                return config, KernelPool(lib, native, config)
        from envs.native.backend import NativeBackend

        return config, NativeBackend(native, config)
    if name == "jax":
        from envs.jax import backend as jax_backend

        config, progs = jax_backend.configure(task_id, env_type, kwargs)
        if not start:
            return config, (progs.env.observation_space, progs.env.action_space, {}, progs.env.player_names)
        return config, jax_backend.JaxBackend(config, progs)
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
    if task_id in ATARI_PLAYER_TASKS:
        from envs.atari.multiplayer_task import configure
    elif is_pettingzoo_id(task_id):
        from envs.process.pettingzoo_task import configure
    else:
        from envs.process.gym_task import configure
    task = configure(task_id, env_type, kwargs)
    if task.config.render_mode is not None and not renders_in_workers(task_id):
        raise ValueError(
            f"render_mode={task.config.render_mode!r}: {task_id!r} runs in worker processes, which do not render "
            "Gymnasium's envs; rendering is built in for the classic-control tasks, Atari games (multi-player ones "
            "too), MuJoCo v5 tasks and PettingZoo envs"
        )
    if not start:
        return task.config, (task.observation_space, task.action_space, task.extra_info, task.player_names)
    from envs.process.backend import ProcessBackend

    return task.config, ProcessBackend(task)


def pool_class(backend: Any, env_type: str) -> type[EnvPool]:
    """The pool class over a built backend: the compiled native pool has its own (the step loop in C)."""
    from envs.native.kernel_pool import CompiledDmPool, CompiledGymnasiumPool, KernelPool

    if isinstance(backend, KernelPool):
        return CompiledDmPool if env_type == "dm" else CompiledGymnasiumPool
    return DmEnvPool if env_type == "dm" else GymnasiumEnvPool


def make_pool(task_id: str, env_type: str = "gymnasium", **kwargs: Any) -> EnvPool:
    """A started pool of task_id (`envs.make`, which is this; here so that modules under the
    package, `envs.vector`, build pools without importing the package)."""
    config, backend = build(task_id, env_type, dict(kwargs), start=True)
    return pool_class(backend, env_type)(config, backend)
