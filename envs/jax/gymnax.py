"""gymnax's envs (`gymnax/CartPole-v1`, `gymnax/Breakout-MinAtar`, `gymnax/Catch-bsuite`,
`gymnax/FourRooms-misc`, ...) as RawJaxEnvs, over gymnax's `reset_env`/`step_env`, which neither
auto-reset nor truncate (our JaxEnv does both).

- Terminated vs the time limit: in gymnax 1.0 (the extra's pin), `step_env`'s done is
  `is_terminated` alone, every family (classic control, MinAtar, bsuite, misc), and the limit is
  `is_truncated(state) = state.time >= max_steps_in_episode`, one step per `step_env` from 0: our
  elapsed count, so `max_steps_in_episode` becomes the JaxEnv's `max_episode_steps` (gymnax 0.0.x
  folded the limit into `is_terminal`: that is why the pin is >= 1.0). A terminal state on the
  limit's step is terminated only (gymnax's own `step` reports both: DeepSea ends on its limit's
  step every episode).
- Spaces: Gymnasium spaces of one env whose dtype and shape are what `reset_env` returns (gymnax's
  spaces say int32 where Catch returns float32, float32 where FourRooms returns int32); images
  (MinAtar's [10, 10, C], Pong-misc's [30, 40, 3]: every rank-3 observation of gymnax is
  channel-last) are presented channel-first [C, H, W] by JaxEnv (`channel_last = True`), as the
  pool presents images.
- kwargs: the env's parameters (`EnvParams` fields, e.g. `gravity=9.8`, `max_steps_in_episode`)
  and its constructor's arguments (e.g. DeepSea's `size`); anything else is a one-line ValueError
  naming the valid ones.
- Import: gymnax imports seaborn at module level for two render helpers (Pong-misc's colours,
  MinAtar's visualiser), 1.5 s of a process's start with the scipy.stats it pulls in;
  importing this module puts a stand-in in its place that imports it when one of its names is
  read (`import_gymnax`).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.import_on_use import import_on_use

# gymnax ids that cannot run here: why (shown when one is asked for).
UNSUPPORTED = {"MNISTBandit-bsuite": "it downloads MNIST when it is built"}


import_on_use("seaborn")  # this module is imported before gymnax (envs/jax/registry.py), and craftax's before it


def import_gymnax() -> types.ModuleType:
    """`import gymnax`, with seaborn imported only when a render helper uses it (this module's
    import put its stand-in in place)."""
    import gymnax

    return gymnax


def ids() -> list[str]:
    """gymnax's registered ids (those in UNSUPPORTED are refused, with the reason, at make)."""
    return list(import_gymnax().registered_envs)


def _bounds(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    v = np.broadcast_to(np.asarray(value, np.float64), shape)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(v, info.min, info.max).astype(dtype)
    return v.astype(dtype)


def space(space: Any, leaf: jax.ShapeDtypeStruct, what: str, task_id: str, discrete: Any = np.int64) -> gym.spaces.Space:
    """A gymnax-style space (gymnax's, Craftax's: read by class name) as the Gymnasium space of one
    env, with the dtype and shape of `leaf` (what the env returns), in the env's own layout."""
    kind = type(space).__name__
    dtype = np.dtype(leaf.dtype)
    if kind == "Discrete":
        if leaf.shape != ():
            raise ValueError(f"{task_id}: its {what} space is Discrete but the env returns shape {leaf.shape}")
        return gym.spaces.Discrete(int(space.n), dtype=discrete)
    if kind == "Box":
        shape = tuple(leaf.shape)
        low, high = _bounds(space.low, shape, dtype), _bounds(space.high, shape, dtype)
        return gym.spaces.Box(low, high, shape, dtype)
    raise ValueError(f"{task_id}: its {what} space {kind} is not supported (Discrete and Box are)")


def check_kwargs(task_id: str, kwargs: dict[str, Any], *valid: Any) -> None:
    unknown = sorted(set(kwargs) - set().union(*valid))
    if unknown:
        raise ValueError(f"unknown kwarg(s) {unknown} for {task_id}; its parameters are {sorted(set().union(*valid))}")


class GymnaxStyleEnv:
    """A RawJaxEnv over an env with gymnax's `reset_env(key, params)` / `step_env(key, state,
    action, params)` (gymnax's, Craftax's): state = (its state, key data for its next step).
    `step_params` are the params it steps with (the time limit lifted where its done includes it).
    Its rank-3 observations are channel-last (`channel_last`: JaxEnv presents them channel-first)."""

    channel_last = True

    def __init__(self, task_id: str, env: Any, params: Any, step_params: Any, max_episode_steps: int):
        self.task_id, self.env, self.params, self._step_params = task_id, env, params, step_params
        self.max_episode_steps = max_episode_steps
        obs = jax.eval_shape(lambda k: self.env.reset_env(k, self.params)[0], jax.random.key(0))
        if not isinstance(obs, jax.ShapeDtypeStruct):
            raise ValueError(f"{self.task_id}: structured observations are not supported")
        self.observation_space = space(self.env.observation_space(self.params), obs, "observation", task_id, np.int32)
        act = self.env.action_space(self.params)
        act_leaf = jax.ShapeDtypeStruct(tuple(getattr(act, "shape", ()) or ()), np.float32)
        self.action_space = space(act, act_leaf, "action", task_id)
        self._obs_dtype = self.observation_space.dtype

    def _obs(self, obs: jax.Array) -> jax.Array:
        return obs.astype(self._obs_dtype)

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        key, now = jax.random.split(key)
        obs, state = self.env.reset_env(now, self.params)
        return (state, jax.random.key_data(key)), self._obs(obs)

    def step(self, state: Any, action: jax.Array):
        state, key_data = state
        key, now = jax.random.split(jax.random.wrap_key_data(key_data))
        obs, state, reward, terminated, _ = self.env.step_env(now, state, action, self._step_params)
        state = (state, jax.random.key_data(key))
        return state, self._obs(obs), jnp.asarray(reward, jnp.float32), jnp.asarray(terminated, bool), jnp.bool_(False)


class GymnaxEnv(GymnaxStyleEnv):
    """A gymnax env: its step_env's done is is_terminated alone (gymnax >= 1.0), so it steps with
    its own params."""

    def __init__(self, name: str, **kwargs: Any):
        gymnax = import_gymnax()
        task_id = f"gymnax/{name}"
        if name in UNSUPPORTED:
            raise ValueError(f"{task_id} is not supported: {UNSUPPORTED[name]}")
        factory = gymnax.registration._registry[name]
        ctor = [p for p in inspect.signature(factory).parameters if p not in ("self", "args", "kwargs")]
        probe, _ = gymnax.make(name)
        fields = [f.name for f in dataclasses.fields(probe.default_params)]
        check_kwargs(task_id, kwargs, ctor, fields)
        env, default = gymnax.make(name, **{k: v for k, v in kwargs.items() if k in ctor})
        given = {k: v for k, v in kwargs.items() if k in fields and k not in ctor}
        params = default.replace(**given) if given else default
        limit = params.max_steps_in_episode
        if float(limit) != int(limit) or int(limit) < 1:
            raise ValueError(f"{task_id}: max_steps_in_episode must be a positive int, got {limit!r}")
        super().__init__(task_id, env, params, params, int(limit))


make = GymnaxEnv
