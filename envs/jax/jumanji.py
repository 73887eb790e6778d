"""Jumanji's envs (`jumanji/Snake-v1`, `jumanji/Game2048-v1`, `jumanji/Tetris-v0`, ...) as
RawJaxEnvs, over `jumanji.make(id)`'s `reset(key)` / `step(state, action)` (dm_env-style TimeSteps,
no auto-reset: jumanji's AutoResetWrapper is not used).

- Terminated vs truncated: a LAST TimeStep with discount 0 is terminated, with discount > 0
  truncated. But jumanji 1.1 ends most episodes at the env's own `time_limit` with discount 0 too
  (`termination`, e.g. Snake, Tetris, Maze, PacMan; only LevelBasedForaging truncates), which would
  read as a true end. So for an env that takes a `time_limit` and uses it only to end episodes
  (LIFTED_TIME_LIMIT), the adapter builds it with a limit it never reaches and makes its
  `time_limit` our `max_episode_steps`, which truncates at the same step (its step count = our
  elapsed count): the same stream, with the time limit as truncation. The spaces are those of the
  env with its own limit (Snake's `step_count` in [0, time_limit)). `max_episode_steps` given to
  the pool replaces the env's time limit; an env without one has None.
- Observations: jumanji's NamedTuples (nested ones too, e.g. Maze's `Position`) become dicts, a
  Gymnasium Dict space of Box leaves with the spec's bounds and the env's dtypes (`action_mask`
  stays a bool leaf, which the agents read as any other). Leaves keep jumanji's layout: no jumanji
  observation is a uint8 image, so none goes through the image torsos.
- Actions: DiscreteArray -> Discrete, MultiDiscreteArray (and an integer BoundedArray) ->
  MultiDiscrete, which PPO and IMPALA take (one categorical per entry), a float BoundedArray -> Box.
- Not served: multi-agent envs whose reward is one per agent (Connector, LevelBasedForaging,
  SearchAndRescue: our agents learn from one reward per env), and Sokoban, which downloads its
  levels when built.
- kwargs: the env class's constructor arguments (e.g. Snake's `num_rows`, `time_limit`).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

_PER_AGENT = "it gives one reward per agent; the agents learn from one reward per env"
# Refused by name (and left out of envs.list_all_envs()); another env with a reward per agent is
# refused when it is built, its reward's shape read.
UNSUPPORTED = {"Sokoban-v0": "it downloads its levels (Boxoban) when it is built", "Connector-v3": _PER_AGENT,
               "LevelBasedForaging-v0": _PER_AGENT, "SearchAndRescue-v0": _PER_AGENT}
# Envs whose `time_limit` only ends episodes (read in their step; MMST's also shapes its instances):
# built with _NEVER as theirs, and truncated by the adapter at their own.
LIFTED_TIME_LIMIT = ("Cleaner-v0", "Maze-v0", "PacMan-v1", "RobotWarehouse-v0", "RubiksCube-v0",
                     "RubiksCube-partly-scrambled-v0", "SlidingTilePuzzle-v0", "Snake-v1", "Tetris-v0")
_NEVER = 2**30


def ids() -> list[str]:
    """jumanji's registered ids (Sokoban and the multi-agent ones are refused, with the reason, at make)."""
    import jumanji

    return sorted(jumanji.registered_environments())


def as_dict(x: Any) -> Any:
    """A jumanji observation (NamedTuples, dataclasses, arrays) as nested dicts of arrays."""
    if hasattr(x, "_asdict"):
        return {k: as_dict(v) for k, v in x._asdict().items()}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: as_dict(getattr(x, f.name)) for f in dataclasses.fields(x)}
    return x


def _limits(dtype: np.dtype) -> tuple[Any, Any]:
    if dtype == np.bool_:
        return False, True
    if np.issubdtype(dtype, np.integer):
        return np.iinfo(dtype).min, np.iinfo(dtype).max
    return -np.inf, np.inf


def _box(spec: Any, leaf: jax.ShapeDtypeStruct) -> gym.spaces.Box:
    dtype, shape = np.dtype(leaf.dtype), tuple(leaf.shape)
    low, high = _limits(dtype)
    if hasattr(spec, "minimum"):
        low, high = np.asarray(spec.minimum), np.asarray(spec.maximum)
    low = np.broadcast_to(np.asarray(low), shape).astype(dtype)
    high = np.broadcast_to(np.asarray(high), shape).astype(dtype)
    return gym.spaces.Box(low, high, shape, dtype)


def observation_space(spec: Any, leaf: Any) -> gym.spaces.Space:
    """The Gymnasium space of an observation spec, with the dtypes and shapes of `leaf` (the
    observation `as_dict` gives, as ShapeDtypeStructs)."""
    from jumanji import specs

    if isinstance(leaf, dict):
        return gym.spaces.Dict({k: observation_space(spec._specs[k], v) for k, v in leaf.items()})
    if not isinstance(spec, specs.Array):
        raise ValueError(f"jumanji observation spec {spec!r} is not supported")
    return _box(spec, leaf)


def action_space(spec: Any, task_id: str) -> gym.spaces.Space:
    from jumanji import specs

    if isinstance(spec, specs.DiscreteArray):
        return gym.spaces.Discrete(int(spec.num_values))
    if isinstance(spec, specs.BoundedArray) and len(spec.shape) == 1 and np.issubdtype(spec.dtype, np.integer):
        low = np.broadcast_to(np.asarray(spec.minimum, np.int64), spec.shape)
        high = np.broadcast_to(np.asarray(spec.maximum, np.int64), spec.shape)
        return gym.spaces.MultiDiscrete(high - low + 1, start=low)  # MultiDiscreteArray is a BoundedArray
    if isinstance(spec, specs.BoundedArray) and np.issubdtype(spec.dtype, np.floating):
        return _box(spec, jax.ShapeDtypeStruct(spec.shape, np.float32))
    raise ValueError(f"{task_id}: its action spec {spec!r} is not supported (Discrete, a vector of integers or a float box)")


class JumanjiEnv:
    """A RawJaxEnv over one jumanji env: state = jumanji's state (it holds its own key)."""

    def __init__(self, name: str, **kwargs: Any):
        import jumanji

        self.task_id = f"jumanji/{name}"
        if name in UNSUPPORTED:
            raise ValueError(f"{self.task_id} is not supported: {UNSUPPORTED[name]}")
        params = inspect.signature(jumanji.registration.load(jumanji.registration._REGISTRY[name].entry_point)).parameters
        valid = sorted(p for p, v in params.items() if v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY))
        unknown = sorted(set(kwargs) - set(valid))
        if unknown:
            raise ValueError(f"unknown kwarg(s) {unknown} for {self.task_id}; its parameters are {valid}")
        own = jumanji.make(name, **kwargs)  # with its own time limit: its spaces
        self.max_episode_steps = None
        self.env = own
        if name in LIFTED_TIME_LIMIT:
            self.max_episode_steps = int(own.time_limit)
            self.env = jumanji.make(name, **{**kwargs, "time_limit": _NEVER})
        key = jax.random.key_data(jax.random.key(0))
        state, ts = jax.eval_shape(self.env.reset, key)
        action = jax.eval_shape(self.env.action_spec.generate_value)
        _, next_ts = jax.eval_shape(self.env.step, state, action)
        if next_ts.reward.shape != ():
            raise ValueError(f"{self.task_id} is not supported: it gives one reward per agent (shape "
                             f"{next_ts.reward.shape}); the agents learn from one reward per env")
        self.observation_space = observation_space(own.observation_spec, as_dict(ts.observation))
        self.action_space = action_space(own.action_spec, self.task_id)
        self._action_dtype = self.env.action_spec.dtype

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        state, ts = self.env.reset(jax.random.key_data(key))
        return state, as_dict(ts.observation)

    def step(self, state: Any, action: jax.Array):
        state, ts = self.env.step(state, jnp.asarray(action).astype(self._action_dtype))
        last = ts.step_type == 2  # dm_env's StepType.LAST
        ended = ts.discount == 0
        return (state, as_dict(ts.observation), jnp.asarray(ts.reward, jnp.float32), last & ended, last & ~ended)


make = JumanjiEnv
