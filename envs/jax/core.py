"""JAX-native envs behind the pool's contract: a suite's env is a `RawJaxEnv` (one env, pure
functions, no auto-reset); `JaxEnv` batches it and applies the contract every backend of the pool
keeps (DESIGN.md "Flags"), so agents' masks are the same in both loops:

- next-step auto-reset: the step after one that ended an episode resets that env instead (the
  action is discarded, reward 0, `first`, elapsed 0);
- `terminated` and `truncated` apart, never both: the time limit (`max_episode_steps`) and a
  suite's own cut truncate, and a terminal state on the limit's step is `terminated` only;
- env i of a batch is keyed `fold_in(key, first_index + i)`, so its stream does not depend on how
  the batch is split over devices;
- multi-player envs (a raw env with `num_players` P > 1: JaxMARL's MPE) as the pool lays them out
  (envs/players.py): a batch of B envs is B x P rows, an env's players consecutive, in player
  order; actions, observations, rewards and flags are per row, the lanes (state, keys, elapsed)
  per env. An env's players end their episode together (its terminated and truncated are the
  env's), and it resets as one.
- images channel-first, as every backend of the pool presents them: a raw env that declares
  `channel_last = True` (a suite whose rank-3 observations are grids [H, W, C]: gymnax's MinAtar,
  Craftax's pixels, XLand-MiniGrid's and Navix's views) has every rank-3 Box leaf of its space
  and of its observations moved to [C, H, W] by JaxEnv, here, not by each adapter.

Everything is pure and jittable: the Anakin loop (`sebulba/loop/anakin.py`) scans `JaxEnv.step`
inside its program; the pool's JAX backend jits it on the host's default device.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.tree import map_space


class RawJaxEnv(Protocol):
    """One env of a JAX suite, unbatched, with no auto-reset and no time limit of its own (the
    adapter applies `max_episode_steps`). Its RNG key, if it needs one to step, lives in its
    state. Spaces are one env's Gymnasium spaces; rank-3 leaves are channel-first [C, H, W] unless
    the env declares `channel_last = True` (then JaxEnv moves them, see the module docstring)."""

    task_id: str  # SUITE/ID, e.g. "gymnax/CartPole-v1"
    observation_space: gym.spaces.Space
    action_space: gym.spaces.Space
    max_episode_steps: int | None  # the suite's time limit (None: none)

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        """(state, obs) of a new episode."""

    def step(self, state: Any, action: jax.Array) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array]:
        """(state, obs, reward f32, terminated bool, truncated bool): truncated for a cut the
        suite makes itself besides the time limit (else False)."""

    # Optional: `channel_last = True`: its rank-3 Box leaves (space and observations) are [H, W, C].
    # Optional: `num_players` P > 1 (default 1) and `player_names` (P names, in row order): a
    # multi-player env, whose obs (reset's and step's) and reward have a leading player axis P and
    # whose action is [P, ...] (one player's spaces above); terminated and truncated stay the env's.
    # Optional: `restart(state, key) -> (state, obs)`, the next episode of an env whose episode
    # ended, from its last state. JaxEnv's auto-reset calls it where a raw env defines it, else
    # reset(key). The built-in tasks define it (envs/native/stateless.py): their reset noise
    # continues each env's own stream, as the pool's and Gymnasium's reset() without a seed.


class Step(NamedTuple):
    """What a batch of envs returned (leading axis B: its rows, envs x players); the same fields
    as the agents' `Step` (`sebulba.types`), which the loops build from it: `first` marks an
    observation that starts an episode."""

    obs: Any
    reward: jax.Array  # float32 [B]
    terminated: jax.Array  # bool [B]
    truncated: jax.Array  # bool [B]
    first: jax.Array  # bool [B]


class Lanes(NamedTuple):
    """The batch's env state between steps (every leaf [B, ...], B envs (not rows), plain
    arrays: shardable along B, donatable and checkpointable)."""

    state: Any  # the raw env states
    key: jax.Array  # uint32 key data [B, ...]: each env's key for its next reset
    elapsed: jax.Array  # int32 [B]: steps since the episode's reset (EnvPool's elapsed_step)
    done: jax.Array  # bool [B]: the last step ended the episode; the next step resets the env


def _tree_where(mask: jax.Array, a: Any, b: Any) -> Any:
    """a where mask (per env), else b. A leaf without the batch axis (MJX's Data has some, its
    contact buffers under vmap: Playground) is a's."""

    def pick(x, y):
        if x.ndim == 0 or x.shape[0] != mask.shape[0]:
            return x
        return jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim)), x, y)

    return jax.tree.map(pick, a, b)


def _is_grid(space: gym.spaces.Space) -> bool:
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3


def channel_first_space(space: gym.spaces.Space) -> gym.spaces.Space:
    """The space with every rank-3 Box leaf [H, W, C] as [C, H, W] (bounds moved with it)."""

    def move(leaf: gym.spaces.Space) -> gym.spaces.Space:
        if not _is_grid(leaf):
            return leaf
        low, high = np.moveaxis(leaf.low, -1, 0), np.moveaxis(leaf.high, -1, 0)
        return gym.spaces.Box(low, high, low.shape, leaf.dtype)

    return map_space(move, space)


def grid_leaves(space: gym.spaces.Space) -> Any:
    """A pytree of the observation's structure (dicts for Dict, tuples for Tuple): True at each
    rank-3 Box leaf."""
    if isinstance(space, gym.spaces.Dict):
        return {k: grid_leaves(s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(grid_leaves(s) for s in space.spaces)
    return _is_grid(space)


def channel_first(grids: Any, obs: Any) -> Any:
    """obs with each leaf that `grids` (`grid_leaves` of its space) marks moved from [..., H, W, C]
    to [..., C, H, W] (any leading axes: envs, players)."""
    return jax.tree.map(lambda grid, x: jnp.moveaxis(x, -1, -3) if grid else x, grids, obs)


def pool_key() -> jax.Array:
    """The key a pool's envs are folded from: env i of `envs.make(SUITE/ID, seed=s)` is keyed
    `fold_in(pool_key(), s + i)`, a function of s + i alone."""
    return jax.random.key(0)


class JaxEnv:
    """A batch of a RawJaxEnv's envs with the pool's contract (see the module docstring)."""

    def __init__(self, raw: RawJaxEnv, max_episode_steps: int | None = None):
        limit = raw.max_episode_steps if max_episode_steps is None else max_episode_steps
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ValueError(f"max_episode_steps must be a positive int or None, got {limit!r}")
        self.raw = raw
        self.max_episode_steps = limit
        self.num_players = int(getattr(raw, "num_players", 1))  # rows per env
        self.player_names = tuple(getattr(raw, "player_names", ()))
        self._grids = grid_leaves(raw.observation_space) if getattr(raw, "channel_last", False) else None
        self._observation_space = (raw.observation_space if self._grids is None
                                   else channel_first_space(raw.observation_space))

    def present(self, obs: Any) -> Any:
        """A batch of the raw env's observations as the pool presents them (images channel-first)."""
        return obs if self._grids is None else channel_first(self._grids, obs)

    def _rows(self, x: Any) -> Any:
        """Per-env leaves with a player axis [B, P, ...] as rows [B * P, ...]."""
        if self.num_players == 1:
            return x
        return jax.tree.map(lambda a: a.reshape(a.shape[0] * a.shape[1], *a.shape[2:]), x)

    def _per_row(self, x: jax.Array) -> jax.Array:
        """A per-env array [B] repeated for each of its players' rows [B * P]."""
        return x if self.num_players == 1 else jnp.repeat(x, self.num_players)

    @property
    def task_id(self) -> str:
        return self.raw.task_id

    @property
    def observation_space(self) -> gym.spaces.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.spaces.Space:
        return self.raw.action_space

    def _reset_keys(self, key_data: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(keys for this reset, key data for the next one), per env."""
        pairs = jax.vmap(lambda k: jax.random.split(jax.random.wrap_key_data(k)))(key_data)
        return pairs[:, 0], jax.random.key_data(pairs[:, 1])

    def reset(self, key: jax.Array, num_envs: int, first_index: int | jax.Array = 0) -> tuple[Lanes, Step]:
        """Envs first_index .. first_index + num_envs - 1 of a batch keyed by `key` (typed), each
        at the start of an episode."""
        index = first_index + jnp.arange(num_envs)
        key_data = jax.vmap(lambda i: jax.random.key_data(jax.random.fold_in(key, i)))(index)
        now, later = self._reset_keys(key_data)
        state, obs = jax.vmap(self.raw.reset)(now)
        lanes = Lanes(state, later, jnp.zeros(num_envs, jnp.int32), jnp.zeros(num_envs, bool))
        rows = num_envs * self.num_players
        false = jnp.zeros(rows, bool)
        return lanes, Step(self._rows(self.present(obs)), jnp.zeros(rows, jnp.float32), false, false, jnp.ones(rows, bool))

    def reset_as_pool(self, seed: int, num_envs: int, first_index: int | jax.Array = 0) -> tuple[Lanes, Step]:
        """Envs first_index .. first_index + num_envs - 1 of the pool `envs.make(task_id,
        seed=seed)` after its reset, i.e. the Sebulba loop's envs of that seed: both loops then
        step identical env streams. A raw env may define `pool_reset(env, seed, num_envs,
        first_index)` for its own seeding rule (the built-in tasks': Gymnasium's seeds)."""
        own = getattr(self.raw, "pool_reset", None)
        if own is not None:
            return own(self, seed, num_envs, first_index)
        return self.reset(pool_key(), num_envs, first_index=seed + first_index)

    def step(self, lanes: Lanes, action: jax.Array) -> tuple[Lanes, Step]:
        """One step of every env (`action`: one per row): those whose last step ended an episode
        reset instead."""
        P = self.num_players
        if P > 1:
            action = action.reshape(action.shape[0] // P, P, *action.shape[1:])
        state, obs, reward, terminated, truncated = jax.vmap(self.raw.step)(lanes.state, action)
        reward = reward.astype(jnp.float32)
        terminated = terminated.astype(bool)
        elapsed = lanes.elapsed + 1
        cut = truncated.astype(bool)
        if self.max_episode_steps is not None:
            cut = cut | (elapsed >= self.max_episode_steps)
        truncated = cut & ~terminated
        stepped = (state, obs, lanes.key)

        def with_resets(stepped):
            now, later = self._reset_keys(lanes.key)
            restart = getattr(self.raw, "restart", None)
            if restart is None:
                new_state, new_obs = jax.vmap(self.raw.reset)(now)
            else:
                new_state, new_obs = jax.vmap(restart)(lanes.state, now)
            return _tree_where(lanes.done, (new_state, new_obs, later), stepped)

        # A reset is computed only in steps where some env resets (a select of both otherwise).
        state, obs, key = jax.lax.cond(jnp.any(lanes.done), with_resets, lambda s: s, stepped)
        first = lanes.done
        terminated, truncated = terminated & ~first, truncated & ~first
        lanes = Lanes(state, key, jnp.where(first, 0, elapsed), terminated | truncated)
        first, terminated, truncated = (self._per_row(x) for x in (first, terminated, truncated))
        reward = jnp.where(first, 0.0, self._rows(reward))
        return lanes, Step(self._rows(self.present(obs)), reward, terminated, truncated, first)
