"""A `gymnasium.vector.VectorEnv` face for the pool (`envs.make_vector_env`).

The pool itself (`GymnasiumEnvPool`) keeps EnvPool's conventions: one env's spaces as
`observation_space`/`action_space`, `reset(env_id)` instead of a seed, info without masks. The
face here follows Gymnasium's vector API exactly, so Gymnasium's vector wrappers
(`gymnasium.wrappers.vector.*`) and code written for `SyncVectorEnv` run on a pool unchanged:

- batched `observation_space`/`action_space` (`gymnasium.vector.utils.batch_space`) next to
  `single_observation_space`/`single_action_space`;
- `metadata["autoreset_mode"] = AutoresetMode.NEXT_STEP`: the pool's auto-reset rule is
  Gymnasium's next-step mode (an env whose episode ended is reset on its next step, whose action
  is ignored and whose output is the first observation, reward 0, not terminated or truncated);
- info in Gymnasium's vector layout: every key a batched array (or dict) plus its boolean mask
  `_key` (`VectorEnv._add_info`).

`reset(seed=..., options=...)` is the pool's own (`EnvPool.reset`, envs/resets.py): the pool is a
`VectorEnv` too, with EnvPool's one-env spaces and info without masks; this face adds Gymnasium's
batched spaces and masked info. A sync pool only (batch_size == num_envs): Gymnasium's `step`
takes an action for every env and returns every env. The underlying pool is `VectorEnvPool.pool`.

Importing `envs` also registers the face as the `vector_entry_point` of the built-in tasks'
Gymnasium ids (CartPole-v1, Acrobot-v1, MountainCar-v0, MountainCarContinuous-v0, Pendulum-v1),
so `gymnasium.make_vec(id, num_envs, vectorization_mode="vector_entry_point")` - and
`make_vec`'s default mode, which prefers a registered vector entry point - returns it, while
`"sync"` and `"async"` still build Gymnasium's own vector envs of Gymnasium's own env and
`gymnasium.make(id)` is untouched. CartPole-v1 had Gymnasium's `CartPoleVectorEnv` as its
vector entry point; `GYMNASIUM_VECTOR_ENTRY_POINTS` keeps what each id had before.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from envs.closing import ClosedOnExit
from envs.metadata import vector_metadata
from envs.native.tasks import NATIVE_TASKS
from envs.resets import mask_names, mask_of

# kwargs of `gymnasium.make_vec` that configure Gymnasium's own vectorizers, never a pool's.
_VECTORIZER_KWARGS = {
    "vector_kwargs": "configure the pool through its own kwargs (seed, num_threads, ...)",
    "wrappers": "wrap the vector env with gymnasium.wrappers.vector wrappers instead",
    "vectorization_mode": "this is the vector_entry_point mode",
}
_ENTRY_POINT_PREFIX = "vector_entry_point_"
# attribute of this module named in a vector_entry_point string -> the task id it makes
_ENTRY_POINT_IDS: dict[str, str] = {}
# task id -> the vector_entry_point its Gymnasium spec had before `register_vector_entry_points`
GYMNASIUM_VECTOR_ENTRY_POINTS: dict[str, Any] = {}


def make_vector_env(task_id: str, num_envs: int = 1, **kwargs: Any) -> VectorEnvPool:
    """A `gymnasium.vector.VectorEnv` over a sync pool of num_envs envs of task_id.

    kwargs are `envs.make`'s (seed, num_threads, max_episode_steps, render_mode, backend, task
    kwargs), except env_type (always Gymnasium's API) and an async batch_size (refused)."""
    return VectorEnvPool(task_id, num_envs, **kwargs)


class VectorEnvPool(gym.vector.VectorEnv, ClosedOnExit):
    """Gymnasium's vector-env API over a sync pool; build it with `envs.make_vector_env` or
    `gymnasium.make_vec(id, vectorization_mode="vector_entry_point")` for a built-in task.

    `reset(seed=s)` reseeds env i with s + i, as the pool seeds its envs at `make` (a list: one
    seed or None per env); `options={"reset_mask": mask}` resets only the envs where mask is True,
    and the returned batch holds the others' last observations (`EnvPool.reset`)."""

    def __init__(self, task_id: str, num_envs: int = 1, **kwargs: Any):
        from envs.backends import make_pool  # envs.make (the package imports this module)

        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise ValueError(f"num_envs must be an int, got {num_envs!r} ({type(num_envs).__name__})")
        num_envs = int(num_envs)
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        for name, hint in _VECTORIZER_KWARGS.items():
            if name in kwargs:
                raise ValueError(f"{name}={kwargs[name]!r} is a gymnasium.make_vec argument, not a pool's: {hint}")
        if "env_type" in kwargs:
            raise ValueError(
                f"env_type={kwargs['env_type']!r}: the vector env has Gymnasium's API; "
                "use envs.make(..., env_type=...) for a pool of another type"
            )
        batch_size = kwargs.get("batch_size")
        if batch_size is not None and batch_size != num_envs:
            raise ValueError(
                f"batch_size={batch_size!r}: a Gymnasium vector env steps all its envs together, so it needs a "
                f"sync pool (batch_size == num_envs == {num_envs}); for async batches use envs.make(...) directly"
            )
        self._task_id = task_id
        self._pool = make_pool(task_id, env_type="gymnasium", num_envs=num_envs, **kwargs)
        if self._pool.config.max_num_players > 1:
            self._pool.close()
            raise ValueError(
                f"{task_id!r} is multi-player ({self._pool.config.max_num_players} rows per env): Gymnasium's vector API has "
                "one row per env; use envs.make(...) for its (env, player) rows"
            )

        self.num_envs = num_envs
        self.single_observation_space = self._pool.observation_space
        self.single_action_space = self._pool.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = self._pool.render_mode
        self.metadata = vector_metadata(task_id, self._pool.config["backend"])
        self.spec = _spec(task_id, num_envs, dict(kwargs))

    # ------------------------------------------------------------------ Gymnasium's API
    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (or those of `options["reset_mask"]`), reseeded when seed is given."""
        obs, info = self._pool.reset(seed=seed, options=options)
        if _is_int(seed):
            super().reset(seed=int(seed))  # VectorEnv's np_random, seeded as Gymnasium's reset seeds it
        return obs, _vector_info(info, self.num_envs)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Step every env with its action (a batch of `action_space`); next-step auto-reset."""
        if isinstance(actions, Mapping):  # the pool would read it as EnvPool's {"action", "env_id"}
            raise ValueError(
                f"actions must be one batched array of {self.action_space}, got a dict with keys {sorted(actions)}"
            )
        obs, reward, terminated, truncated, info = self._pool.step(actions)
        return obs, reward, terminated, truncated, _vector_info(info, self.num_envs)

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One rgb_array frame per env, as SyncVectorEnv's render. Needs render_mode="rgb_array"."""
        if self.render_mode is None:
            gym.logger.warn(
                f"{self!r}.render() called without a render_mode: pass render_mode='rgb_array' when making it"
            )
            return None
        return tuple(self._pool.render(np.arange(self.num_envs, dtype=np.int32)))

    def close_extras(self, **kwargs: Any) -> None:
        self._pool.close()

    @property
    def pool(self) -> Any:
        """The pool under the face."""
        return self._pool

    def __repr__(self) -> str:
        return f"VectorEnvPool({self._task_id}, num_envs={self.num_envs}, backend={self._pool.config['backend']!r})"


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


# ---------------------------------------------------------------------- info and observations
def _vector_info(info: Mapping[Hashable, Any], n: int) -> dict[Hashable, Any]:
    """The pool's info in Gymnasium's vector layout: every key gets its mask `_key` (all True
    where the pool has none: every env returned it); nested dicts likewise."""
    out: dict[Hashable, Any] = {}
    masks = mask_names(info, n)
    for k, v in info.items():
        if k in masks:
            continue
        out[k] = _vector_info(v, n) if isinstance(v, Mapping) else v
        m = mask_of(info, k, n)
        out[f"_{k}"] = np.ones(n, np.bool_) if m is None else m
    return out


# ---------------------------------------------------------------------- metadata and spec
def _spec(task_id: str, num_envs: int, kwargs: dict[str, Any]) -> gym.envs.registration.EnvSpec | None:
    """The Gymnasium spec `make_vec` would set (so `gymnasium.make_vec(vec.spec)` builds the same
    vector env), for an id whose vector entry point is this face; None for other ids."""
    registered = gym.registry.get(task_id)
    if registered is None or registered.vector_entry_point != _entry_point_name(task_id):
        return None
    spec = copy.deepcopy(registered)
    spec.kwargs = {**registered.kwargs, **kwargs}
    if registered.max_episode_steps is not None:
        spec.kwargs.setdefault("max_episode_steps", registered.max_episode_steps)
    if num_envs != 1:
        spec.kwargs["num_envs"] = num_envs
    spec.kwargs["vectorization_mode"] = gym.VectorizeMode.VECTOR_ENTRY_POINT.value
    return spec


# ---------------------------------------------------------------------- vector_entry_point
def _entry_point_name(task_id: str) -> str:
    return f"{__name__}:{_ENTRY_POINT_PREFIX}" + re.sub(r"\W", "_", task_id)


def _entry_point(task_id: str) -> Any:
    def vector_entry_point(num_envs: int = 1, **kwargs: Any) -> VectorEnvPool:
        return make_vector_env(task_id, num_envs, **kwargs)

    vector_entry_point.__qualname__ = vector_entry_point.__name__ = _entry_point_name(task_id).partition(":")[2]
    vector_entry_point.__doc__ = f"make_vector_env({task_id!r}, num_envs, **kwargs), as gymnasium.make_vec calls it."
    return vector_entry_point


def __getattr__(name: str) -> Any:
    """The `vector_entry_point_<id>` functions named by the registered vector_entry_point strings
    (strings keep the specs picklable for worker processes and JSON-serialisable)."""
    task_id = _ENTRY_POINT_IDS.get(name)
    if task_id is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _entry_point(task_id)


def register_vector_entry_points() -> list[str]:
    """Makes this face the `vector_entry_point` of every built-in task whose Gymnasium id is
    registered with the env the task reproduces (an id re-registered with another env is left
    alone). The spec is changed in place, nothing else of it. Idempotent; returns the ids."""
    done = []
    for task_id, task in NATIVE_TASKS.items():
        spec = gym.registry.get(task_id)
        if spec is None or spec.entry_point != task.reference_entry_point:
            continue
        name = _entry_point_name(task_id)
        _ENTRY_POINT_IDS[name.partition(":")[2]] = task_id
        if spec.vector_entry_point != name:
            GYMNASIUM_VECTOR_ENTRY_POINTS[task_id] = spec.vector_entry_point
            spec.vector_entry_point = name
        done.append(task_id)
    return done


register_vector_entry_points()

__all__ = ["GYMNASIUM_VECTOR_ENTRY_POINTS", "VectorEnvPool", "make_vector_env", "register_vector_entry_points"]
