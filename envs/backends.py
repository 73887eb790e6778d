"""Building a task's backend: the one place that maps the backend `registry.resolve` names (native
numpy or compiled, MuJoCo, Atari, JAX-native envs, worker processes) to the object that steps the envs, and each
backend to the pool class that serves it (`pool_class`). Every backend is configured and started through
one shape, `Configured`; what a started one offers the pool is envs/contract.py's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from envs.config import PoolConfig
from envs.contract import BackendBase
from envs.pool import DmEnvPool, EnvPool, GymnasiumEnvPool
from envs.atari.games import ATARI_PLAYER_TASKS
from envs.ids import is_pettingzoo_id, renders_in_workers
from envs.mujoco.dmc.ids import DMC_IDS
from envs.registry import resolve
from envs.spec import EnvSpec

NO_INFO, NO_PLAYERS = BackendBase.extra_info, BackendBase.player_names  # the contract's defaults


class Configured(NamedTuple):
    """A task's pool, configured (kwargs checked) and not started: what `make_spec` reads, and
    `start()`, which builds the backend (envs, worker processes, compiled programs)."""

    config: PoolConfig
    observation_space: gym.spaces.Space
    action_space: gym.spaces.Space
    extra_info: Mapping[str, np.dtype]
    player_names: tuple[str, ...]
    start: Callable[[], BackendBase]

    def spec(self) -> EnvSpec:
        return EnvSpec(self.config, self.observation_space, self.action_space, self.extra_info, self.player_names)


def configure(task_id: str, env_type: str, kwargs: dict[str, Any]) -> Configured:
    """task_id's pool on the backend `registry.resolve` names, configured from kwargs (its own
    checks); nothing is built until `start()`."""
    backend = kwargs.pop("backend", None)
    name, native = resolve(task_id, backend)
    if name == "native":
        config = PoolConfig.create(task_id, env_type, name, native.max_episode_steps, kwargs, {})

        def start_native() -> BackendBase:
            if config.render_mode is None:  # the compiled pool draws nothing: rendering pools stay on numpy
                from envs.native.kernel.build import library
                from envs.native.kernel_pool import KernelPool
                from envs.native.tasks import TASK_CODES

                lib = library() if native.task_id in TASK_CODES else None  # Dict tasks: numpy only
                if lib is not None:
                    return KernelPool(lib, native, config)
            from envs.native.backend import NativeBackend

            return NativeBackend(native, config)

        return Configured(config, native.observation_space(), native.action_space(), NO_INFO, NO_PLAYERS, start_native)
    if name == "jax":
        from envs.jax import backend as jax_backend

        config, progs = jax_backend.configure(task_id, env_type, kwargs)
        env = progs.env
        return Configured(config, env.observation_space, env.action_space, NO_INFO, env.player_names,
                          lambda: jax_backend.JaxBackend(config, progs))  # fmt: skip
    if name == "mujoco":
        from envs.mujoco import backend as mujoco_backend

        if not mujoco_backend.mujoco_available():
            raise ImportError(mujoco_backend.INSTALL_HINT)
        if task_id in DMC_IDS:
            from envs.mujoco.dmc import backend as dmc_backend

            task, backend_cls = dmc_backend.configure(task_id, env_type, kwargs), dmc_backend.DmcBackend
        else:
            task, backend_cls = mujoco_backend.configure(task_id, env_type, kwargs), mujoco_backend.MujocoBackend

        def start_mujoco() -> BackendBase:
            from envs.mujoco.build import library, why_unavailable

            lib = library()
            if lib is None:
                raise RuntimeError(f"backend='mujoco': the native MuJoCo pool is unavailable ({why_unavailable()})")
            return backend_cls(task, lib)

        return Configured(task.config, task.observation_space, task.action_space, task.extra_info, NO_PLAYERS,
                          start_mujoco)  # fmt: skip
    if name == "atari":
        from envs.atari import task as atari_task

        task = atari_task.configure(task_id, env_type, kwargs)
        if task.backend == "single":  # mode, difficulty or render_mode: one ALEInterface per env
            from envs.atari.single import AtariSingleBackend as backend_cls
        else:
            from envs.atari.build import library as atari_kernel

            lib = atari_kernel()
            if lib is not None:  # ALE's envs on our threads (envs/atari/native.py)
                from envs.atari.native import AtariNativeBackend

                return Configured(task.config, task.observation_space, task.action_space, AtariNativeBackend.extra_info,
                                  NO_PLAYERS, lambda: AtariNativeBackend(task, lib))  # fmt: skip
            from envs.atari.backend import AtariBackend as backend_cls  # ALE's vector env
        return Configured(task.config, task.observation_space, task.action_space, backend_cls.extra_info, NO_PLAYERS,
                          lambda: backend_cls(task))  # fmt: skip
    if task_id in ATARI_PLAYER_TASKS:
        from envs.atari.multiplayer_task import configure as configure_task
    elif is_pettingzoo_id(task_id):
        from envs.process.pettingzoo_task import configure as configure_task
    else:
        from envs.process.gym_task import configure as configure_task
    task = configure_task(task_id, env_type, kwargs)
    if task.config.render_mode is not None and not renders_in_workers(task_id):
        raise ValueError(
            f"render_mode={task.config.render_mode!r}: {task_id!r} runs in worker processes, which do not render "
            "Gymnasium's envs; rendering is built in for the classic-control tasks, Atari games (multi-player ones "
            "too), MuJoCo v5 tasks and PettingZoo envs"
        )

    def start_process() -> BackendBase:
        from envs.process.backend import ProcessBackend

        return ProcessBackend(task)

    return Configured(task.config, task.observation_space, task.action_space, task.extra_info, task.player_names,
                      start_process)  # fmt: skip


def pool_class(backend: BackendBase, env_type: str) -> type[EnvPool]:
    """The pool class over a built backend: the compiled native pool has its own (the step loop in C)."""
    from envs.native.kernel_pool import CompiledDmPool, CompiledGymnasiumPool, KernelPool

    if isinstance(backend, KernelPool):
        return CompiledDmPool if env_type == "dm" else CompiledGymnasiumPool
    return DmEnvPool if env_type == "dm" else GymnasiumEnvPool


def make_pool(task_id: str, env_type: str = "gymnasium", **kwargs: Any) -> EnvPool:
    """A started pool of task_id (`envs.make`, which is this; here so that modules under the
    package, `envs.vector`, build pools without importing the package)."""
    configured = configure(task_id, env_type, dict(kwargs))
    backend = configured.start()
    return pool_class(backend, env_type)(configured.config, backend)
