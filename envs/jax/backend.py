"""The pool's backend over a JAX-native env (`envs.make("gymnax/CartPole-v1", num_envs=16)`): a
`JaxEnv` of num_envs lanes on the host's default device, stepped by one jitted call per send
(donated lanes, no eager op per step), so a JAX env has EnvPool's whole API (gym/gymnasium/dm,
sync and async, reset(env_id), reset(seed=...), snapshots, `xla()`) and the Sebulba loop,
evaluation and `load_policy` run on it as on any pool.

- The contract is JaxEnv's own (next-step auto-reset, the time limit truncates, terminated wins):
  an explicit reset of env i is the step that an ended episode's next send would be (its action
  discarded), so resets, auto-resets and reseeds draw from one per-env key stream.
- Seeds: env i of a pool made with seed s is keyed `fold_in(pool_key(), s + i)`, a function of
  s + i only, so `reset(seed=s)` replays a pool made with seed=s (EnvPool's rule) and this pool's
  envs equal `JaxEnv.reset(pool_key(), num_envs, first_index=s)` (what the Anakin loop needs for
  identical env streams).
- Every send, of any envs, is the same program over all lanes with masks (which envs step, which
  reset): one compile per pool shape. Sends are dispatched at once (JAX runs them
  asynchronously); results come to the host when the pool collects them, one transfer per send.
- Multi-player envs (JaxMARL's MPE): the backend works in envs, as every backend of a multi-player
  pool (envs/players.py): an env's action is (P, ...), its results carry a player axis; the
  JaxEnv's rows (env-major) are that axis reshaped.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.config import INT32_MAX, PoolConfig
from envs.contract import Backend
from envs.jax.core import JaxEnv, Lanes, pool_key
from envs.ready import Batch, Chunk


class _Programs:
    """The jitted functions of one JaxEnv, shared by the pools of the same task and settings. A
    send of any envs is one program over all num_envs lanes (the others kept as they were), so a
    pool compiles it once, whatever its batch sizes and env ids: on a CPU host the dispatch, not
    the env arithmetic, is what a send of a JAX env costs."""

    def __init__(self, env: JaxEnv):
        self.env = env
        space = env.action_space
        self.action = jax.ShapeDtypeStruct(tuple(space.shape or ()), jax.dtypes.canonicalize_dtype(space.dtype))
        self.init = jax.jit(self._init, static_argnums=1)
        self.send = jax.jit(self._send, donate_argnums=0)
        self.reseed = jax.jit(self._reseed, donate_argnums=0)

    def _keys(self, seeds: jax.Array) -> jax.Array:
        return jax.vmap(lambda s: jax.random.key_data(jax.random.fold_in(pool_key(), s)))(seeds)

    def _init(self, seed: jax.Array, n: int) -> Lanes:
        """Lanes whose every env resets on its first send (as a fresh pool's envs)."""
        key = self._keys(seed + jnp.arange(n, dtype=jnp.int32))
        state, _ = jax.vmap(self.env.raw.reset)(jax.vmap(jax.random.wrap_key_data)(key))  # a template
        return Lanes(state, key, jnp.zeros(n, jnp.int32), jnp.ones(n, bool))

    def _send(self, lanes: Lanes, action: jax.Array, sent: jax.Array, reset: jax.Array) -> tuple[Lanes, tuple]:
        """Steps the envs `sent` (bool [n]); those also in `reset` reset instead (an explicit reset is
        the step after an end: its action discarded). Multi-player: actions [n, P, ...], results
        [n, P, ...] (elapsed [n])."""
        n, P = sent.shape[0], self.env.num_players
        action = action.astype(self.action.dtype)
        if P > 1:
            action = action.reshape(n * P, *action.shape[2:])
        stepped, step = self.env.step(lanes._replace(done=lanes.done | reset), action)
        if P > 1:
            step = jax.tree.map(lambda x: x.reshape(n, P, *x.shape[1:]), step)

        def pick(new, old):
            if new.ndim == 0 or new.shape[0] != sent.shape[0]:  # not batched (MJX's contact buffers)
                return new
            return jnp.where(sent.reshape(sent.shape + (1,) * (new.ndim - 1)), new, old)

        lanes = jax.tree.map(pick, stepped, lanes)
        return lanes, (step.obs, step.reward, step.terminated, step.truncated, lanes.elapsed)

    def _reseed(self, lanes: Lanes, ids: jax.Array, seeds: jax.Array) -> Lanes:
        return lanes._replace(key=lanes.key.at[ids].set(self._keys(seeds)))


@functools.lru_cache(maxsize=32)
def _cached(task_id: str, max_episode_steps: int | None, kwargs: tuple) -> _Programs:
    from envs.jax.registry import make_jax_env

    return _Programs(make_jax_env(task_id, max_episode_steps, **dict(kwargs)))


def programs(task_id: str, max_episode_steps: int | None, kwargs: dict[str, Any]) -> _Programs:
    """The jitted functions of a JAX id's env (cached per id, limit and kwargs when these hash)."""
    try:
        return _cached(task_id, max_episode_steps, tuple(sorted(kwargs.items())))
    except TypeError:  # an unhashable kwarg: no cache
        from envs.jax.registry import make_jax_env

        return _Programs(make_jax_env(task_id, max_episode_steps, **kwargs))


class JaxBackend(Backend):
    """A pool backend (envs.contract.Backend) over a JaxEnv's lanes."""

    max_seed = INT32_MAX

    def __init__(self, config: PoolConfig, progs: _Programs):
        self._p = progs
        self.observation_space = progs.env.observation_space
        self.action_space = progs.env.action_space
        n = self.num_envs = config.num_envs
        self.num_players = progs.env.num_players
        self.player_names = progs.env.player_names
        self._all_ids = np.arange(n, dtype=np.int32)
        self._all, self._none = np.ones(n, bool), np.zeros(n, bool)
        players = (self.num_players,) if self.num_players > 1 else ()
        self._noop = np.zeros((n, *players, *progs.action.shape), progs.action.dtype)
        self._lanes = progs.init(jnp.int32(config.seed), n)
        self._sent: list[tuple[np.ndarray | None, Any]] = []  # (ids, results on the device)
        if config.render_mode is not None:
            self.render = self._render

    def _render(self, ids: np.ndarray) -> np.ndarray:
        """Frames (k, H, W, 3) uint8 of envs ids, drawn by the raw env (its `render(state)`)."""
        return render_states(self._p.env.raw, jax.device_get(self._lanes.state), ids)

    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        if ids is None:
            sent = self._all
            action = self._noop if reset else action
        else:
            sent = np.zeros(self.num_envs, bool)
            sent[ids] = True
            if not reset:
                full = np.zeros_like(self._noop)
                full[ids] = action
                action = full
            else:
                action = self._noop
        self._lanes, out = self._p.send(self._lanes, action, sent, sent if reset else self._none)
        self._sent.append((ids, out))

    def collect(self, block: bool) -> list[Chunk]:
        sent, self._sent = self._sent, []
        chunks = []
        for ids, out in sent:
            obs, reward, terminated, truncated, elapsed = jax.device_get(out)
            if ids is None:  # every env, in order: arrays the caller owns
                obs = jax.tree.map(np.array, obs)
                batch = Batch(self._all_ids.copy(), obs, np.array(reward), np.array(terminated), np.array(truncated),
                              np.array(elapsed))  # fmt: skip
            else:  # fancy indexing copies
                obs = jax.tree.map(lambda x: np.asarray(x)[ids], obs)
                batch = Batch(ids, obs, *(np.asarray(x)[ids] for x in (reward, terminated, truncated, elapsed)))
            chunks.append(Chunk(batch.env_id, batch, ids is None))
        return chunks

    def gather(self, ids: np.ndarray | None) -> Batch:
        raise AssertionError("JAX chunks always carry their batch")

    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict | None) -> None:
        if seeds is None:
            return
        chosen = np.array([i for i in ids.tolist() if seeds[i] is not None], np.int32)
        if len(chosen):
            given = np.array([seeds[i] for i in chosen.tolist()], np.int32)
            self._lanes = self._p.reseed(self._lanes, chosen, given)

    def snapshot(self) -> Any:
        return jax.device_get(self._lanes)

    def restore(self, state: Any) -> None:
        mine = jax.tree.structure(self._lanes)
        if jax.tree.structure(state) != mine or any(
            np.shape(a) != b.shape for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(self._lanes))
        ):
            raise ValueError(f"snapshot does not fit this pool ({self._p.env.task_id} x {self.num_envs})")
        self._lanes = jax.device_put(state)

    def close(self) -> None:
        self._sent = []


def render_states(raw: Any, states: Any, ids: np.ndarray) -> np.ndarray:
    """Frames (k, H, W, 3) uint8 of the envs `ids` of a batch of raw states, by `raw.render`."""
    return np.stack([raw.render(jax.tree.map(lambda x: np.asarray(x)[i], states)) for i in np.asarray(ids).tolist()])


def configure(task_id: str, env_type: str, kwargs: dict[str, Any]) -> tuple[PoolConfig, _Programs]:
    """The pool config of a JAX id (its env built: that checks the task's kwargs) and its programs."""
    from envs.config import check_seed_range

    # max_episode_steps: the user's (max_num_players is checked below, against the env's players)
    given = PoolConfig.create(task_id, env_type, "jax", None, {k: v for k, v in kwargs.items() if k != "max_num_players"},
                              None)
    progs = programs(task_id, given.max_episode_steps, dict(given.task_kwargs))
    if given.render_mode is not None and not callable(getattr(progs.env.raw, "render", None)):
        raise ValueError(f"render_mode={given.render_mode!r}: {task_id} draws no frames in the pool (of the JAX-native "
                         "envs, pgx's connect four, tic-tac-toe and othello do)")
    config = PoolConfig.create(task_id, env_type, "jax", progs.env.max_episode_steps, kwargs, None,
                               progs.env.num_players)
    check_seed_range(config, JaxBackend.max_seed, "a JAX env's key")
    return config, progs
