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
- `reset(seed=..., options={"reset_mask": ...})`, and info in Gymnasium's vector layout: every
  key a batched array (or dict) plus its boolean mask `_key` (`VectorEnv._add_info`).

A sync pool only (batch_size == num_envs): Gymnasium's `step` takes an action for every env and
returns every env. The underlying pool is `VectorEnvPool.pool`.

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
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envs.closing import ClosedOnExit
from envs.native.tasks import NATIVE_TASKS

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

    `reset(seed=s)` seeds env i with s + i, as the pool seeds its envs at `make`. A pool cannot be
    re-seeded once built, so a seed other than the one the pool was built with, or any seed once
    the pool has been reset or stepped, closes the pool and builds a new one with that seed (for
    worker-process tasks this starts new workers); `pool` then names the new pool. A list of seeds
    is taken only in that form, `[s, s + 1, ..., s + num_envs - 1]`.
    `options={"reset_mask": mask}` resets only the envs where mask is True (not with a seed); the
    other envs keep their episodes, and the returned batch holds their last observations."""

    def __init__(self, task_id: str, num_envs: int = 1, **kwargs: Any):
        import envs  # the package imports this module

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
        self._make = envs.make
        self._task_id = task_id
        self._kwargs = dict(kwargs)
        self._pool = envs.make(task_id, env_type="gymnasium", num_envs=num_envs, **kwargs)
        cfg = self._pool.config
        self._seed = int(cfg["seed"])
        self._fresh = True  # the pool has been neither reset nor stepped: its first reset is seed's
        self._last_obs: Any = None

        self.num_envs = num_envs
        self.single_observation_space = self._pool.observation_space
        self.single_action_space = self._pool.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = self._pool.render_mode
        self.metadata = _metadata(task_id, cfg["backend"])
        self.spec = _spec(task_id, num_envs, self._kwargs)

    # ------------------------------------------------------------------ Gymnasium's API
    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (or those of `options["reset_mask"]`); see the class docstring for seeds."""
        seed = self._check_seed(seed)
        mask = self._check_options(options)
        if seed is not None:
            if mask is not None:
                raise ValueError(
                    "reset(seed=...) with options['reset_mask']: the pool seeds all its envs together when it is "
                    "built, so a seed resets every env; pass the seed without a reset_mask"
                )
            if not (self._fresh and seed == self._seed):
                self._rebuild(seed)
            self._np_random, self._np_random_seed = seeding.np_random(seed)  # as VectorEnv.reset
        self._fresh = False
        if mask is None:
            obs, info = self._pool.reset()
            self._last_obs = obs
            return obs, _vector_info(info, self.num_envs)
        if self._last_obs is None:
            raise ValueError("options['reset_mask'] needs a full reset() first: the other envs have no episode yet")
        ids = np.flatnonzero(mask).astype(np.int32)
        obs, info = self._pool.reset(ids)
        self._last_obs = _scatter(self._last_obs, obs, ids)
        return self._last_obs, _scatter_info(info, ids, self.num_envs)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Step every env with its action (a batch of `action_space`); next-step auto-reset."""
        if isinstance(actions, Mapping):  # the pool would read it as EnvPool's {"action", "env_id"}
            raise ValueError(
                f"actions must be one batched array of {self.action_space}, got a dict with keys {sorted(actions)}"
            )
        obs, reward, terminated, truncated, info = self._pool.step(actions)
        self._fresh = False
        self._last_obs = obs
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
        """The pool under the face (a new one after a re-seeding reset)."""
        return self._pool

    def __repr__(self) -> str:
        return f"VectorEnvPool({self._task_id}, num_envs={self.num_envs}, backend={self._pool.config['backend']!r})"

    # ------------------------------------------------------------------ internals
    def _check_seed(self, seed: Any) -> int | None:
        if seed is None:
            return None
        if isinstance(seed, (list, tuple, np.ndarray)):
            seeds = list(np.asarray(seed, dtype=object).ravel()) if isinstance(seed, np.ndarray) else list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"a list of seeds must have one per env (num_envs={self.num_envs}), got {len(seeds)}")
            if all(s is None for s in seeds):
                return None
            first = seeds[0]
            if _is_int(first) and all(_is_int(s) and int(s) == int(first) + i for i, s in enumerate(seeds)):
                return self._check_seed(int(first))
            raise ValueError(
                f"seeds {seeds[:8]}{'...' if len(seeds) > 8 else ''}: the pool seeds env i with seed + i, so a list "
                f"of seeds must be [s, s + 1, ..., s + {self.num_envs - 1}] (or pass the int s)"
            )
        if not _is_int(seed):
            raise ValueError(f"seed must be an int, a list of ints or None, got {seed!r} ({type(seed).__name__})")
        if int(seed) < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        return int(seed)

    def _check_options(self, options: Mapping[str, Any] | None) -> np.ndarray | None:
        """options["reset_mask"] checked as Gymnasium's vector envs check it (not popped: wrappers
        such as RecordEpisodeStatistics read it after the env)."""
        if not options:
            return None
        other = sorted(set(options) - {"reset_mask"})
        if other:
            raise ValueError(
                f"reset options {other} are not supported: the pool's envs reset without options "
                "(only options['reset_mask'] is taken)"
            )
        mask = options["reset_mask"]
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
        if mask.shape != (self.num_envs,):
            raise ValueError(f"`options['reset_mask']` must have shape `({self.num_envs},)`, got {mask.shape}")
        if mask.dtype != np.bool_:
            raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
        if not mask.any():
            raise ValueError(
                f"`options['reset_mask']` must contain a boolean array with at least one True value, got reset_mask={mask}"
            )
        return None if mask.all() else mask

    def _rebuild(self, seed: int) -> None:
        """A new pool seeded `seed`; the old one is closed once the new one is built."""
        pool = self._make(self._task_id, env_type="gymnasium", num_envs=self.num_envs, **{**self._kwargs, "seed": seed})
        old, self._pool, self._seed, self._last_obs = self._pool, pool, seed, None
        old.close()


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


# ---------------------------------------------------------------------- info and observations
def _mask_of(info: Mapping[Hashable, Any], key: Hashable, n: int) -> np.ndarray | None:
    m = info.get(f"_{key}")
    return m if isinstance(m, np.ndarray) and m.dtype == np.bool_ and m.shape == (n,) else None


def _mask_names(info: Mapping[Hashable, Any], n: int) -> set[str]:
    return {f"_{k}" for k in info if _mask_of(info, k, n) is not None}


def _vector_info(info: Mapping[Hashable, Any], n: int) -> dict[Hashable, Any]:
    """The pool's info in Gymnasium's vector layout: every key gets its mask `_key` (all True
    where the pool has none: every env returned it); nested dicts likewise."""
    out: dict[Hashable, Any] = {}
    masks = _mask_names(info, n)
    for k, v in info.items():
        if k in masks:
            continue
        out[k] = _vector_info(v, n) if isinstance(v, Mapping) else v
        m = _mask_of(info, k, n)
        out[f"_{k}"] = np.ones(n, np.bool_) if m is None else m
    return out


def _scatter_info(info: Mapping[Hashable, Any], ids: np.ndarray, n: int) -> dict[Hashable, Any]:
    """The info of envs ids (a partial reset) over all n envs, masked True only at ids."""
    out: dict[Hashable, Any] = {}
    k_ids = len(ids)
    masks = _mask_names(info, k_ids)
    for k, v in info.items():
        if k in masks:
            continue
        if isinstance(v, Mapping):
            full = _scatter_info(v, ids, n)
        else:
            v = np.asarray(v)
            full = np.empty(n, object) if v.dtype == object else np.zeros((n, *v.shape[1:]), v.dtype)
            full[ids] = v
        mask = np.zeros(n, np.bool_)
        own = _mask_of(info, k, k_ids)
        mask[ids] = True if own is None else own
        out[k], out[f"_{k}"] = full, mask
    return out


def _scatter(last: Any, new: Any, ids: np.ndarray) -> Any:
    """A copy of the batch `last` with rows ids replaced by `new` (arrays, or dicts/tuples of them)."""
    if isinstance(last, Mapping):
        return {k: _scatter(last[k], new[k], ids) for k in last}
    if isinstance(last, tuple):
        return tuple(_scatter(a, b, ids) for a, b in zip(last, new))
    out = np.array(last, copy=True)
    out[ids] = new
    return out


# ---------------------------------------------------------------------- metadata and spec
def _reference_entry_point(task_id: str, backend: str) -> Any:
    """The Gymnasium env class the task reproduces or runs (its metadata has render_fps)."""
    if backend == "native":
        return NATIVE_TASKS[task_id].reference_entry_point
    if backend == "atari":
        from envs.atari.games import ALE_ENTRY_POINT

        return ALE_ENTRY_POINT
    spec = gym.registry.get(task_id)
    return None if spec is None else spec.entry_point


def _metadata(task_id: str, backend: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"] if backend in ("native", "atari", "mujoco") else []}
    entry_point = _reference_entry_point(task_id, backend)
    try:
        creator = gym.envs.registration.load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
        fps = getattr(creator, "metadata", {}).get("render_fps")
    except Exception:  # noqa: BLE001 - render_fps is informative only
        fps = None
    if fps is not None:
        metadata["render_fps"] = fps
    metadata["autoreset_mode"] = AutoresetMode.NEXT_STEP
    return metadata


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
