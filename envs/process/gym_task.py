"""Gymnasium ids run by worker processes: configuration, spaces, and the picklable env factory."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np

from envs.atari.games import check_rom, is_ale_entry_point
from envs.config import INT32_MAX, PoolConfig
from envs.process.retry import RetryConfig

_SUPPORTED = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def is_image(space: gym.spaces.Space) -> bool:
    """A channel-last image (H, W, C) that the pool presents channel-first, as EnvPool does."""
    return (
        isinstance(space, gym.spaces.Box)
        and space.dtype == np.uint8
        and len(space.shape) == 3
        and space.shape[-1] in (1, 3, 4)
        and space.shape[0] > 4
    )


def channel_first(space: gym.spaces.Box) -> gym.spaces.Box:
    return gym.spaces.Box(
        np.moveaxis(space.low, -1, 0), np.moveaxis(space.high, -1, 0), dtype=space.dtype
    )


@dataclasses.dataclass(frozen=True)
class GymFactory:
    """Builds one env of a Gymnasium id without its TimeLimit (the pool applies max_episode_steps).

    Carries the EnvSpec itself, so ids registered only in the parent process work in workers.
    """

    spec: gym.envs.registration.EnvSpec
    kwargs: dict[str, Any]

    def __call__(self) -> gym.Env:
        return gym.make(self.spec, **self.kwargs)


def _factory(task_id: str, kwargs: dict[str, Any]) -> GymFactory:
    spec = gym.spec(task_id)
    spec = dataclasses.replace(spec, max_episode_steps=None, disable_env_checker=True, order_enforce=False)
    return GymFactory(spec, dict(kwargs))


@dataclasses.dataclass(frozen=True)
class GymTask:
    """What the process backend needs to run a Gymnasium id."""

    config: PoolConfig
    factory: GymFactory
    observation_space: gym.spaces.Space  # as the pool presents it (images channel-first)
    action_space: gym.spaces.Space
    transpose_obs: bool  # the env's images are channel-last and must be moved
    retry: RetryConfig = RetryConfig()  # how a crashing, raising or hanging worker is survived


# The process backend's recovery kwargs (RetryConfig's; the pool always renews a failed worker).
RETRY_KWARGS = ("max_retry", "step_timeout", "retry_waiting_time", "connect_timeout")


def _retry(kwargs: dict[str, Any]) -> RetryConfig:
    """Pops the recovery kwargs out of kwargs (they are not the env's)."""
    return RetryConfig(retry_type="renew", **{k: kwargs.pop(k) for k in RETRY_KWARGS if k in kwargs})


def _check_ale_game(task_id: str, kwargs: dict[str, Any]) -> None:
    """An id of ALE's AtariEnv whose game (registered, or passed as `game=`) is a ROM ALE would exit
    the process on is refused before the probe env is built."""
    spec = gym.spec(task_id)
    if is_ale_entry_point(spec.entry_point):
        check_rom(kwargs.get("game", spec.kwargs.get("game")), task_id)


def _build_probe(task_id: str, factory: GymFactory) -> gym.Env:
    try:
        return factory()
    except TypeError as e:
        raise ValueError(f"bad kwarg for task {task_id!r}: {e}") from e
    except (ImportError, gym.error.DependencyNotInstalled) as e:
        raise ImportError(f"task {task_id!r} cannot be built on this install: {e}") from e


def _spaces(task_id: str, probe: gym.Env) -> tuple[gym.spaces.Space, gym.spaces.Space]:
    """The probe's spaces, refused unless the pool can batch them."""
    obs_space, act_space = probe.observation_space, probe.action_space
    for what, space in (("observation", obs_space), ("action", act_space)):
        if not isinstance(space, _SUPPORTED):
            raise ValueError(
                f"task {task_id!r} has a {what} space {space} that the pool cannot batch; "
                f"supported: {[s.__name__ for s in _SUPPORTED]}"
            )
    return obs_space, act_space


def _check_seed(probe: gym.Env, config: PoolConfig) -> None:
    """Gymnasium's reset takes any int >= 0, but an env may cap it (its JAX envs, phys2d/* and
    tabular/*, take seeds < 2**63). Seeds within int32, which every env of Gymnasium and ALE takes,
    are not probed; a larger top seed (seed + num_envs - 1) is tried on the probe env, so a seed the
    env rejects fails here rather than in a worker. Respawned workers' seeds grow past it unprobed."""
    top = config.seed + config.num_envs - 1
    if top <= INT32_MAX:
        return
    try:
        probe.reset(seed=top)
    except Exception as e:
        try:
            probe.reset(seed=0)
        except Exception:
            return  # its reset fails whatever the seed: not a seed problem, the workers report it
        raise ValueError(
            f"seed={config.seed} is out of range for {config.task_id!r}: env {config.num_envs - 1} is seeded "
            f"seed + {config.num_envs - 1} = {top}, which its reset rejects ({type(e).__name__}: {e}); "
            f"keep seed + num_envs - 1 in [0, {INT32_MAX}] (int32), the range every env of Gymnasium and ALE takes"
        ) from e


def configure(task_id: str, env_type: str, kwargs: dict[str, Any]) -> GymTask:
    """Validates kwargs by building one probe env in this process, and reads its spaces."""
    _check_ale_game(task_id, kwargs)
    default_steps = gym.spec(task_id).max_episode_steps
    kwargs = dict(kwargs)
    retry = _retry(kwargs)
    config = PoolConfig.create(task_id, env_type, "process", default_steps, kwargs, None)
    factory = _factory(task_id, dict(config.task_kwargs))
    probe = _build_probe(task_id, factory)
    try:
        obs_space, act_space = _spaces(task_id, probe)
        _check_seed(probe, config)
    finally:
        probe.close()
    transpose = is_image(obs_space)
    if transpose:
        obs_space = channel_first(obs_space)
    return GymTask(config, factory, obs_space, act_space, transpose, retry)
