"""The pool's configuration: EnvPool's standard kwargs, validated before anything is built."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

ENV_TYPES = ("gym", "gymnasium", "dm")
INT32_MAX = 2**31 - 1
BACKENDS = ("native", "process", "atari", "mujoco", "jax")

# Standard kwargs of envpool.make (envpool.readthedocs.io), with their defaults. None means "derived".
STANDARD_KWARGS: dict[str, Any] = {
    "num_envs": 1,
    "batch_size": None,  # num_envs
    "num_threads": None,  # backend-specific default
    "seed": 42,
    "max_episode_steps": None,  # the task's default
    "max_num_players": 1,
    "thread_affinity_offset": -1,
    "render_mode": None,  # None, "rgb_array" (`pool.render(env_ids)` returns frames) or "human" (shows one)
    "render_env_id": 0,  # the env `pool.render()` draws when no env_ids are given
}
RENDER_MODES = (None, "rgb_array", "human")


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int,)) and not hasattr(value, "__index__"):
        raise ValueError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    return int(value)


def _check_players(task_id: str, given: int, num_players: int) -> int:
    """max_num_players: a task's player count (rows per env), fixed by the task."""
    if given == num_players:
        return given
    if num_players == 1:
        raise ValueError(f"max_num_players must be 1: {task_id!r} is single-player, got {given}")
    raise ValueError(
        f"max_num_players={given}: {task_id!r} has {num_players} players, one batch row each, so max_num_players "
        f"must be {num_players} (or left out)"
    )


def check_seed_range(config: PoolConfig, max_env_seed: int, taker: str) -> None:
    """Env i is seeded seed + i, so seed + num_envs - 1 must not pass the largest seed the backend
    takes: refused here, at make, rather than inside the backend at the first reset."""
    top = config.seed + config.num_envs - 1
    if top > max_env_seed:
        raise ValueError(
            f"seed={config.seed} is out of range for {config.task_id!r}: env i is seeded seed + i and {taker} "
            f"takes seeds in [0, {max_env_seed}], so with num_envs={config.num_envs} seed must be in "
            f"[0, {max_env_seed - config.num_envs + 1}]"
        )


class ConfigDict(dict):
    """A pool's config: a dict whose keys also read as attributes (`spec.config.num_envs`, as
    EnvPool's config namedtuple; `config["num_envs"]` as EnvPool's `pool.config` dict). A key
    named like a dict method (`items`, `get`, ...) reads only as `config[key]`."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"the pool's config has no key {name!r}; its keys are {sorted(self)}") from None

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {k for k in self if isinstance(k, str) and k.isidentifier()})


@dataclasses.dataclass(frozen=True)
class PoolConfig:
    """Resolved settings of one pool. Build it with `PoolConfig.create`, which validates."""

    task_id: str
    env_type: str
    backend: str
    num_envs: int
    batch_size: int
    num_threads: int
    seed: int
    max_episode_steps: int | None
    max_num_players: int
    thread_affinity_offset: int
    render_mode: str | None
    render_env_id: int
    task_kwargs: Mapping[str, Any]

    @property
    def is_async(self) -> bool:
        return self.batch_size < self.num_envs

    def as_dict(self) -> ConfigDict:
        out = ConfigDict({f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "task_kwargs"})
        out.update(self.task_kwargs)
        return out

    def __post_init__(self) -> None:
        if self.env_type not in ENV_TYPES:
            raise ValueError(f"env_type must be one of {ENV_TYPES}, got {self.env_type!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {self.num_envs}")
        if not 1 <= self.batch_size <= self.num_envs:
            raise ValueError(
                f"batch_size must be in [1, num_envs={self.num_envs}], got {self.batch_size}"
            )
        if self.num_threads < 0:
            raise ValueError(f"num_threads must be >= 0, got {self.num_threads}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if self.max_episode_steps is not None and self.max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {self.max_episode_steps}")
        if self.max_num_players < 1:
            raise ValueError(f"max_num_players must be >= 1, got {self.max_num_players}")
        if self.thread_affinity_offset < -1:
            raise ValueError(
                f"thread_affinity_offset must be -1 (no pinning) or a core id >= 0, got {self.thread_affinity_offset}"
            )
        if self.render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES}, got {self.render_mode!r}")
        if not 0 <= self.render_env_id < self.num_envs:
            raise ValueError(f"render_env_id must be an env id in [0, num_envs={self.num_envs}), got {self.render_env_id}")

    @classmethod
    def create(
        cls,
        task_id: str,
        env_type: str,
        backend: str,
        default_max_episode_steps: int | None,
        kwargs: Mapping[str, Any],
        task_kwarg_names: Mapping[str, Any] | None,
        num_players: int = 1,
    ) -> PoolConfig:
        """Splits kwargs into standard and task-specific ones and validates both.

        task_kwarg_names maps the task's own kwargs to defaults; None means the task accepts any
        extra kwarg (it is checked later by building a probe env).
        """
        std = {k: kwargs[k] for k in STANDARD_KWARGS if k in kwargs}
        extra = {k: v for k, v in kwargs.items() if k not in STANDARD_KWARGS}
        if task_kwarg_names is not None:
            unknown = sorted(set(extra) - set(task_kwarg_names))
            if unknown:
                allowed = sorted(set(STANDARD_KWARGS) | set(task_kwarg_names))
                raise ValueError(
                    f"unknown kwarg(s) {unknown} for task {task_id!r}; accepted kwargs are {allowed}"
                )
            extra = {**task_kwarg_names, **extra}
        for name in ("num_envs", "seed", "max_num_players", "thread_affinity_offset"):
            if name in std:
                std[name] = _check_int(name, std[name])
        num_envs = std.get("num_envs", STANDARD_KWARGS["num_envs"])
        batch_size = std.get("batch_size")
        batch_size = num_envs if batch_size is None else _check_int("batch_size", batch_size)
        num_threads = std.get("num_threads")
        if num_threads is None:
            # Process backend: one worker per core but one, which the caller (the agent) needs;
            # measured on 2 cores, 1 worker steps 16 CartPoles 1.2x faster than 2.
            num_threads = min(batch_size, max(1, (os.cpu_count() or 1) - 1)) if backend == "process" else 0
        num_threads = _check_int("num_threads", num_threads)
        max_steps = std.get("max_episode_steps")
        max_steps = default_max_episode_steps if max_steps is None else _check_int("max_episode_steps", max_steps)
        return cls(
            task_id=task_id,
            env_type=env_type,
            backend=backend,
            num_envs=num_envs,
            batch_size=batch_size,
            num_threads=num_threads,
            seed=std.get("seed", STANDARD_KWARGS["seed"]),
            max_episode_steps=max_steps,
            max_num_players=_check_players(task_id, std.get("max_num_players", num_players), num_players),
            thread_affinity_offset=std.get("thread_affinity_offset", -1),
            render_mode=std.get("render_mode"),
            render_env_id=_check_int("render_env_id", std.get("render_env_id", 0)),
            task_kwargs=dict(extra),
        )
