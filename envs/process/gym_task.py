"""Gymnasium ids run by worker processes: configuration, spaces, and the picklable env factory."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from envs.atari.games import check_rom, is_ale_entry_point
from envs.config import INT32_MAX, PoolConfig
from envs.process.retry import RetryConfig
from envs.ids import find_spec
from envs.process.mission import MISSION_KWARG, MissionAsBytes, check_mission_bytes, default_mission_bytes, mission_keys
from envs.tree import Path, check_batchable, is_structured, leaf_spaces, map_space


def is_image(space: gym.spaces.Space) -> bool:
    """A channel-last image (H, W, C) that the pool presents channel-first, as EnvPool does."""
    return (
        isinstance(space, gym.spaces.Box)
        and space.dtype == np.uint8
        and len(space.shape) == 3
        and space.shape[-1] in (1, 3, 4)
        and space.shape[0] > 4
    )


def channel_first(space: gym.spaces.Space) -> gym.spaces.Space:
    """The space as the pool presents it: every image leaf channel-first."""
    if not is_image(space):
        return space
    return gym.spaces.Box(np.moveaxis(space.low, -1, 0), np.moveaxis(space.high, -1, 0), dtype=space.dtype)


# A Dict observation's top-level keys the pool leaves out (e.g. MiniGrid's `mission` string).
DROP_KWARG = "drop_observation_keys"


@dataclasses.dataclass(frozen=True)
class GymFactory:
    """Builds one env of a Gymnasium id without its TimeLimit (the pool applies max_episode_steps).

    Carries the EnvSpec itself, so ids registered only in the parent process work in workers.
    """

    spec: gym.envs.registration.EnvSpec
    kwargs: dict[str, Any]
    drop_observation_keys: tuple[str, ...] = ()  # Dict observation keys the pool leaves out
    mission_bytes: int | None = None  # MiniGrid's missions as this many uint8 (envs/process/mission.py)
    mission_bytes_given: bool = False  # passed by the user: an env without a mission is told so

    def __call__(self) -> gym.Env:
        env = gym.make(self.spec, **self.kwargs)
        drop = self.drop_observation_keys
        if drop:
            space = env.observation_space
            if not isinstance(space, gym.spaces.Dict):
                env.close()
                raise ValueError(f"{DROP_KWARG}={list(drop)}: {self.spec.id!r} has no Dict observation ({space})")
            missing = [k for k in drop if k not in space.spaces]
            if missing:
                env.close()
                raise ValueError(f"{DROP_KWARG}: {self.spec.id!r} has no observation keys {missing}; its keys: {list(space.spaces)}")
            env = gym.wrappers.FilterObservation(env, [k for k in space.spaces if k not in drop])
        missions = mission_keys(env.observation_space)
        if missions and self.mission_bytes is not None:
            env = MissionAsBytes(env, missions, self.mission_bytes)
        elif self.mission_bytes_given:
            env.close()
            raise ValueError(f"{MISSION_KWARG}: {self.spec.id!r} has no mission in its observation ({env.observation_space})")
        return env


def _factory(task_id: str, kwargs: dict[str, Any], drop: tuple[str, ...], mission: tuple[int, bool]) -> GymFactory:
    spec = find_spec(task_id)
    spec = dataclasses.replace(spec, max_episode_steps=None, disable_env_checker=True, order_enforce=False)
    return GymFactory(spec, dict(kwargs), drop, *mission)


@dataclasses.dataclass(frozen=True)
class GymTask:
    """What the process backend needs to run a Gymnasium id."""

    config: PoolConfig
    factory: Callable[[], Any]  # GymFactory; for PettingZoo ids a PettingZooFactory (envs/process/pettingzoo_task.py)
    observation_space: gym.spaces.Space  # as the pool presents it (images channel-first)
    action_space: gym.spaces.Space
    obs_leaves: tuple[Path, ...]  # the observation's leaves: () for a single array
    image_leaves: tuple[Path, ...]  # leaves that are channel-last images, moved channel-first
    retry: RetryConfig = RetryConfig()  # how a crashing, raising or hanging worker is survived
    num_players: int = 1  # > 1: the spaces are one player's, and each env holds a row per player
    player_names: tuple[str, ...] = ()  # a multi-player task's players, in row order (PettingZoo's possible_agents)
    reset_options: bool = True  # the envs' reset takes options (Atari games take none)
    extra_info: Mapping[str, np.dtype] = dataclasses.field(default_factory=dict)  # info every step has (dm fields)


# The process backend's recovery kwargs (RetryConfig's; the pool always renews a failed worker).
RETRY_KWARGS = ("max_retry", "step_timeout", "retry_waiting_time", "connect_timeout")


def retry_config(kwargs: dict[str, Any]) -> RetryConfig:
    """Pops the recovery kwargs out of kwargs (they are not the env's)."""
    return RetryConfig(retry_type="renew", **{k: kwargs.pop(k) for k in RETRY_KWARGS if k in kwargs})


def _check_ale_game(task_id: str, kwargs: dict[str, Any]) -> None:
    """An id of ALE's AtariEnv whose game (registered, or passed as `game=`) is a ROM ALE would exit
    the process on is refused before the probe env is built."""
    spec = find_spec(task_id)
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
    """The probe's spaces, refused unless the pool can batch them: observations may be Dict and
    Tuple trees of array leaves (refused by the path of a leaf that is not), actions one array."""
    obs_space, act_space = probe.observation_space, probe.action_space
    check_batchable(obs_space, "observation", task_id)
    if is_structured(act_space):
        raise ValueError(f"task {task_id!r} has an action space {act_space}: the pool takes one action array per env")
    check_batchable(act_space, "action", task_id)
    return obs_space, act_space


def _drop_keys(task_id: str, kwargs: dict[str, Any]) -> tuple[str, ...]:
    """Pops drop_observation_keys (top-level keys of a Dict observation the pool leaves out, e.g.
    MiniGrid's `mission` string) out of kwargs, checked as far as can be before the env exists."""
    drop = kwargs.pop(DROP_KWARG, ())
    if isinstance(drop, str):
        drop = (drop,)
    if not isinstance(drop, (list, tuple)) or not all(isinstance(k, str) for k in drop):
        raise ValueError(f"{DROP_KWARG} must be a list of Dict observation keys (str), got {drop!r}")
    return tuple(drop)


def _mission_bytes(task_id: str, kwargs: dict[str, Any]) -> tuple[int, bool]:
    """Pops mission_bytes (EnvPool's MiniGrid config: the bytes a mission is served in) out of
    kwargs: (the bytes, whether the user gave them)."""
    if MISSION_KWARG not in kwargs:
        return default_mission_bytes(task_id), False
    return check_mission_bytes(kwargs.pop(MISSION_KWARG)), True


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
    default_steps = find_spec(task_id).max_episode_steps
    kwargs = dict(kwargs)
    retry = retry_config(kwargs)
    drop = _drop_keys(task_id, kwargs)
    mission = _mission_bytes(task_id, kwargs)
    config = PoolConfig.create(task_id, env_type, "process", default_steps, kwargs, None)
    factory = _factory(task_id, dict(config.task_kwargs), drop, mission)
    return task_of_probe(task_id, config, factory, _build_probe(task_id, factory), retry)


def task_of_probe(task_id: str, config: PoolConfig, factory: Any, probe: Any, retry: Any) -> GymTask:
    """The task of a probe env built by `factory` (closed here): its spaces (image leaves channel
    first), the seed range checked against config, config.max_num_players rows per env."""
    try:
        obs_space, act_space = _spaces(task_id, probe)
        _check_seed(probe, config)
    finally:
        probe.close()
    leaves = tuple(leaf_spaces(obs_space))
    images = tuple(path for path, leaf in leaves if is_image(leaf))
    names = tuple(map(str, getattr(probe, "players", ()))) if config.max_num_players > 1 else ()
    return GymTask(
        config, factory, map_space(channel_first, obs_space), act_space, tuple(p for p, _ in leaves), images, retry,
        num_players=config.max_num_players, player_names=names,
    )  # fmt: skip
