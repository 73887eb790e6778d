"""EnvSpec: a pool's spaces and config without building the pool (`envs.make_spec`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dm_env
import gymnasium as gym
import numpy as np
from dm_env import specs

from envs.config import PoolConfig
from envs.info import dm_observation
from envs.mujoco.dmc.ids import DMC_IDS
from envs.players import PLAYERS


def space_to_dm_spec(space: gym.spaces.Space, name: str) -> Any:
    """The dm_env spec of one env's Gymnasium space: a dict/tuple of specs for a Dict/Tuple space
    (leaves named by their path, "obs/pos"), as dm_env specs nest."""
    if isinstance(space, gym.spaces.Dict):
        return {k: space_to_dm_spec(s, f"{name}/{k}") for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(space_to_dm_spec(s, f"{name}/{i}") for i, s in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Discrete):
        return specs.DiscreteArray(int(space.n), dtype=space.dtype, name=name)
    return specs.BoundedArray(space.shape, space.dtype, *_bounds(space), name=name)


def _bounds(space: gym.spaces.Space) -> tuple[Any, Any]:
    """A leaf space's (minimum, maximum): scalars where every element shares them (as EnvPool's
    specs hold them), else per element; a ValueError for a space with none."""
    if isinstance(space, gym.spaces.Discrete):
        return int(space.start), int(space.start + space.n - 1)
    if isinstance(space, gym.spaces.Box):
        low, high = space.low, space.high
        if low.size and (low == low.flat[0]).all() and (high == high.flat[0]).all():
            return low.flat[0], high.flat[0]
        return low, high
    if isinstance(space, gym.spaces.MultiDiscrete):
        return space.start, space.start + space.nvec - 1
    if isinstance(space, gym.spaces.MultiBinary):
        return 0, 1
    raise ValueError(f"no spec for space {space}")


class ArraySpec:
    """One entry of `EnvSpec.state_array_spec` / `action_array_spec`, as EnvPool's
    (`envpool.python.protocol.ArraySpec`): dtype, per-env shape (-1: one per player), and minimum
    and maximum (element-wise arrays where the bounds differ per element). Unbounded entries carry
    EnvPool's defaults, its C++ `std::numeric_limits<T>::min()` and `max()` (for floats that
    minimum is the smallest positive normal number, as EnvPool's is)."""

    def __init__(self, dtype: Any, shape: Sequence[int], minimum: Any = None, maximum: Any = None):
        self.dtype = np.dtype(dtype)
        self.shape = list(shape)
        if self.dtype == np.bool_:
            limits = (False, True)
        elif np.issubdtype(self.dtype, np.integer):
            limits = (np.iinfo(self.dtype).min, np.iinfo(self.dtype).max)
        else:
            limits = (np.finfo(self.dtype).tiny, np.finfo(self.dtype).max)
        self.minimum = limits[0] if minimum is None else minimum
        self.maximum = limits[1] if maximum is None else maximum

    def __repr__(self) -> str:
        return f"ArraySpec(shape={self.shape}, dtype={self.dtype}, minimum={self.minimum}, maximum={self.maximum})"


def _space_array_specs(space: gym.spaces.Space, key: str, lead: Sequence[int]) -> dict[str, ArraySpec]:
    """A space's EnvPool array specs under `key` ("obs", "action"): a Dict/Tuple space's leaves as
    "key:a" then "key:a.b" (EnvPool's names), `lead` (e.g. [-1]: per player) before each shape."""
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        items = space.spaces.items() if isinstance(space, gym.spaces.Dict) else enumerate(space.spaces)
        out = {}
        for k, sub in items:
            out.update(_space_array_specs(sub, f"{key}{'.' if ':' in key else ':'}{k}", lead))
        return out
    return {key: ArraySpec(space.dtype, [*lead, *space.shape], *_bounds(space))}


class EnvSpec:
    """What `make_spec` returns: the single env's spaces (channel-first) and the pool config.

    `observation_spec()` has the structure of a dm TimeStep's `observation` (obs, env_id,
    elapsed_step and the task's extra info fields), as EnvPool's specs do; `extra_info` names
    those extra fields and their dtypes (Atari: lives, the raw reward; a subarray dtype is a value
    per env of that shape, e.g. Humanoid-v5's tendon_length).
    """

    def __init__(
        self,
        config: PoolConfig,
        observation_space: gym.spaces.Space,
        action_space: gym.spaces.Space,
        extra_info: Mapping[str, np.dtype] | None = None,
        player_names: Sequence[str] = (),
    ):
        self._config = config
        self.observation_space = observation_space
        self.action_space = action_space
        self.extra_info = dict(extra_info or {})
        # A multi-player task's players in row order (PettingZoo's possible_agents); () if unnamed.
        self.player_names = tuple(player_names)

    @property
    def id(self) -> str:
        """The task id (as Gymnasium's `EnvSpec.id`, which Gymnasium's tools print)."""
        return self._config.task_id

    @property
    def config(self) -> dict[str, Any]:
        return self._config.as_dict()

    @property
    def pool_config(self) -> PoolConfig:
        return self._config

    def observation_spec(self) -> Any:
        """Specs of one env's TimeStep.observation: `.obs`, `.env_id`, `.elapsed_step`, extras and
        `.players` (`.env_id`; a multi-player pool's also `.id` and `.alive`: one row's). The
        spaces are one player's."""
        n = self._config.num_envs
        fields = self.dm_observation_fields
        if fields is None:
            obs = space_to_dm_spec(self.observation_space, "obs")
        elif isinstance(self.observation_space, gym.spaces.Dict):
            obs = {k: space_to_dm_spec(s, k) for k, s in self.observation_space.spaces.items()}
        else:
            obs = space_to_dm_spec(self.observation_space, fields[0])
        env_id = specs.BoundedArray((), np.int32, 0, n - 1, name="env_id")
        elapsed = specs.Array((), np.int32, name="elapsed_step")
        extra = {k: specs.Array(np.dtype(d).shape, np.dtype(d).base, name=k) for k, d in self.extra_info.items()}
        p = self._config.max_num_players
        extra[PLAYERS] = {"env_id": specs.BoundedArray((), np.int32, 0, n - 1, name="players/env_id")}  # EnvPool's
        if p > 1:  # one (env, player) row's ids (envs/players.py)
            extra[PLAYERS].update(id=specs.BoundedArray((), np.int32, 0, p - 1, name="players/id"),
                                  alive=specs.Array((), bool, name="players/alive"))
        return dm_observation(obs, env_id, elapsed, extra, fields)

    @property
    def dm_observation_fields(self) -> tuple[str, ...] | None:
        """The fields a dm TimeStep's observation holds the observation in: None for one `obs`
        field; for EnvPool's DMC pools a field per observation key (their state keys
        obs:position, obs:velocity, ...), or `pixels` for a from_pixels pool (obs:pixels)."""
        if not (self._config.task_id in DMC_IDS and self._config.backend == "mujoco"):
            return None
        if isinstance(self.observation_space, gym.spaces.Dict):
            return tuple(self.observation_space.spaces)
        return ("pixels",)

    def action_spec(self) -> specs.Array:
        return space_to_dm_spec(self.action_space, "action")

    @property
    def gymnasium_observation_space(self) -> gym.spaces.Space:
        """EnvPool's name for `observation_space` (its spaces are Gymnasium's: the same space)."""
        return self.observation_space

    @property
    def gymnasium_action_space(self) -> gym.spaces.Space:
        """EnvPool's name for `action_space`."""
        return self.action_space

    @property
    def reward_threshold(self) -> float | None:
        """The return at which the task counts as solved, None for none: Gymnasium's registered
        `reward_threshold` for the id (EnvPool's configs copy gym's: CartPole-v1 475, Acrobot-v1
        -100, Ant-v5 6000, ...)."""
        try:
            return gym.spec(self._config.task_id).reward_threshold
        except gym.error.Error:
            return None

    @property
    def action_array_spec(self) -> dict[str, ArraySpec]:
        """EnvPool's internal action entries: "env_id", "players.env_id" (EnvPool's common ones),
        then the action's (a Discrete action [-1] bounded 0..n-1, a Box one [-1, *shape]: one per
        player), so `action_array_spec["action"].maximum + 1` is a Discrete space's n."""
        i32 = np.int32
        return {"env_id": ArraySpec(i32, []), "players.env_id": ArraySpec(i32, [-1]),
                **_space_array_specs(self.action_space, "action", [-1])}

    @property
    def state_array_spec(self) -> dict[str, ArraySpec]:
        """EnvPool's internal state entries, in its order: its common ones ("info:env_id",
        "info:players.env_id", "elapsed_step", "done", "reward", "discount", "step_type", "trunc"),
        then the observation ("obs", or "obs:key" per leaf of a Dict/Tuple space) and the task's
        info fields ("info:lives", ...)."""
        i32 = np.int32
        out = {"info:env_id": ArraySpec(i32, []), "info:players.env_id": ArraySpec(i32, [-1]),
               "elapsed_step": ArraySpec(i32, []), "done": ArraySpec(np.bool_, []),
               "reward": ArraySpec(np.float32, [-1]), "discount": ArraySpec(np.float32, [-1], 0.0, 1.0),
               "step_type": ArraySpec(i32, []), "trunc": ArraySpec(np.bool_, [])}
        out.update(_space_array_specs(self.observation_space, "obs", []))
        out.update({f"info:{k}": ArraySpec(np.dtype(d).base, list(np.dtype(d).shape)) for k, d in self.extra_info.items()})
        return out

    def reward_spec(self) -> specs.Array:
        return specs.Array((), np.float32, name="reward")

    def discount_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((), np.float32, 0.0, 1.0, name="discount")

    def __repr__(self) -> str:
        return f"EnvSpec({self._config.task_id!r}, obs={self.observation_space}, action={self.action_space})"


__all__ = ["ArraySpec", "EnvSpec", "dm_env", "space_to_dm_spec"]
