"""envs: a batched env pool with EnvPool's interface.

    pool = envs.make("CartPole-v1", env_type="gymnasium", num_envs=16)
    obs, info = pool.reset()
    obs, reward, terminated, truncated, info = pool.step(actions)

Built-in classic-control tasks run in-process, in a compiled C++ step loop (vectorized numpy where
no compiler is found, and for rendering); Gymnasium's MuJoCo tasks in a native MuJoCo pool (the
`mujoco` extra); Atari games (`Pong-v5`, ...) in ALE's C++ threaded vector env (the `atari` extra);
JAX-native envs (`SUITE/ID`: `gymnax/CartPole-v1`, `jumanji/Snake-v1`, ...) in one jitted call
per step on JAX's default device (`envs/jax`); any other Gymnasium id in worker processes. `backend="process"` forces Gymnasium's own
implementation of a built-in id. Which backend serves an id: `envs.registry`; building it:
`envs.backends`.

A gym/gymnasium pool is a `gymnasium.vector.VectorEnv` itself (`reset(seed=..., options=...)`,
Gymnasium's vector wrappers), with EnvPool's one-env spaces; `envs.make_vector_env(task_id,
num_envs)` gives a sync pool with batched spaces and masked info, as `SyncVectorEnv`, and
`gymnasium.make_vec` of a built-in task's id returns it.
"""

from __future__ import annotations

from typing import Any

from envs.atari.games import ATARI_PLAYER_TASKS, ATARI_TASKS
from envs.backends import configure, make_pool
from envs.config import PoolConfig
from envs.manager import AsyncSubprocessEnvManager, BaseEnvManager, BaseEnvTimestep, EnvState, SyncSubprocessEnvManager
from envs.info import DmObservation
from envs.pool import DmEnvPool, EnvPool, GymnasiumEnvPool

DMEnvPool = DmEnvPool  # EnvPool's name for it
from envs.ids import renders_in_workers
from envs.process.errors import WorkerError
from envs.process.mission import decode_mission
from envs.registry import list_all_envs, resolve
from envs.spec import EnvSpec
from envs.vector import make_vector_env


def make(task_id: str, env_type: str = "gymnasium", **kwargs: Any) -> EnvPool:
    """Build a pool of num_envs envs of task_id. kwargs are EnvPool's (envpool.readthedocs.io) plus task ones."""
    return make_pool(task_id, env_type, **kwargs)


def make_gym(task_id: str, **kwargs: Any) -> GymnasiumEnvPool:
    """`make` with env_type "gym" (the same pool as "gymnasium", as EnvPool's `make_gym`)."""
    return make(task_id, env_type="gym", **kwargs)


def make_gymnasium(task_id: str, **kwargs: Any) -> GymnasiumEnvPool:
    """`make` with env_type "gymnasium": a `gymnasium.vector.VectorEnv` with EnvPool's one-env spaces."""
    return make(task_id, env_type="gymnasium", **kwargs)


def make_dm(task_id: str, **kwargs: Any) -> DmEnvPool:
    """`make` with env_type "dm": a `dm_env.Environment` whose TimeSteps hold a batch."""
    return make(task_id, env_type="dm", **kwargs)


def is_atari(task_id: str) -> bool:
    """Whether task_id is an Atari game served by ALE's vector env (`<Game>-v5`)."""
    return task_id in ATARI_TASKS


def is_atari_players(task_id: str) -> bool:
    """Whether task_id is one of ALE's multi-player games (`Combat-v5`, `Joust-v5`, `MazeCraze-v5`,
    `Warlords-v5`), served by multi_agent_ale_py in worker processes."""
    return task_id in ATARI_PLAYER_TASKS


def make_spec(task_id: str, env_type: str = "gymnasium", **kwargs: Any) -> EnvSpec:
    """The spaces and config `make` would give, without building the pool."""
    return configure(task_id, env_type, dict(kwargs)).spec()


# EnvPool's order for the names it has (its typing test reads EnvSpec, EnvPool, DMEnvPool,
# GymnasiumEnvPool in that order), then the rest alphabetically
__all__ = [
    "EnvSpec",
    "EnvPool",
    "DMEnvPool",
    "GymnasiumEnvPool",
    "AsyncSubprocessEnvManager",
    "BaseEnvManager",
    "BaseEnvTimestep",
    "DmEnvPool",
    "DmObservation",
    "EnvState",
    "PoolConfig",
    "SyncSubprocessEnvManager",
    "WorkerError",
    "decode_mission",
    "is_atari",
    "is_atari_players",
    "list_all_envs",
    "make",
    "make_dm",
    "make_gym",
    "make_gymnasium",
    "make_spec",
    "make_vector_env",
    "resolve",
]
