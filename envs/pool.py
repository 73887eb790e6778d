"""EnvPool: EnvPool's Python interface (envpool.readthedocs.io) over any backend.

The pool owns the contract: argument checks, which envs are in flight, the queue of finished
envs, and the output format (Gymnasium tuple or dm_env.TimeStep). Backends only step envs; what a
pool reads from one, and each member's default, is envs/contract.py.
"""

from __future__ import annotations

import pickle
from typing import Any, NoReturn

import functools
from collections.abc import Mapping, Sequence

import dm_env
import gymnasium as gym
import numpy as np
from dm_env import specs
from gymnasium.utils import seeding

from envs.closing import ClosedOnExit
from envs.config import ConfigDict, PoolConfig
from envs.contract import Backend, BackendBase  # Backend: also envs.pool.Backend, its home before envs.contract
from envs.info import dm_observation
from envs.metadata import vector_metadata
from envs.players import array_to_envs, rows_to_envs, unpack_action, with_players
from envs.ready import Batch, Chunk, ReadyQueue
from envs.resets import Seeds, env_seeds, reset_mask_ids, scatter, scatter_info
from envs.spec import EnvSpec
from envs.xla import make_xla


# The unsigned dtype of each integer width, and max's reduction without ndarray.max's wrapper: the
# range checks of send() view ids and actions unsigned (negative values wrap to huge ones) on every step.
_UNSIGNED = {k.itemsize: k for k in map(np.dtype, (np.uint8, np.uint16, np.uint32, np.uint64))}
_UMAX = np.maximum.reduce


class EnvPool(ClosedOnExit):
    """A batch of envs with EnvPool's API. Build it with `envs.make`."""

    _last_batch: Batch | None = None  # the last batch returned (gym/gymnasium pools)
    _backend: Backend  # the step interface this class drives (the compiled pool's own: envs/native/kernel_pool.py)

    def __init__(self, config: PoolConfig, backend: BackendBase):
        self._cfg = config
        # Plain attributes for the hot path (a dataclass property costs a call per step).
        self._async = config.is_async
        self._num_envs = config.num_envs
        self._batch_size = config.batch_size
        self._backend = backend
        self._spec = EnvSpec(config, backend.observation_space, backend.action_space, backend.extra_info,
                             backend.player_names)
        self._ready = ReadyQueue()
        self._pending = np.zeros(config.num_envs, bool)  # sent, not yet received
        self._num_pending = 0
        self._last_ids: np.ndarray | None = None
        self._closed = False
        self._lockstep = backend.lockstep  # sends must name the last batch received
        space = backend.action_space
        self._discrete_n = int(space.n) if isinstance(space, gym.spaces.Discrete) else None
        self._discrete_start = int(space.start) if self._discrete_n is not None else 0
        self._integer_actions = np.issubdtype(space.dtype, np.integer)
        self._all_ids = np.arange(config.num_envs, dtype=np.int32)
        # Multi-player (EnvPool's max_num_players): an env's action is (P, *one player's action).
        self._players = config.max_num_players
        self._action_shape = tuple(space.shape or ()) if self._players == 1 else (self._players, *(space.shape or ()))
        self._full_action_shape = (config.num_envs, *self._action_shape)

    # ------------------------------------------------------------------ properties
    @property
    def spec(self) -> EnvSpec:
        return self._spec

    @property
    def config(self) -> ConfigDict:
        """The pool's settings, EnvPool's kwargs and the task's: `config["seed"]` or `config.seed`."""
        return self._cfg.as_dict()

    @property
    def observation_space(self) -> gym.spaces.Space:
        return self._spec.observation_space

    @property
    def action_space(self) -> gym.spaces.Space:
        return self._spec.action_space

    @property
    def num_envs(self) -> int:
        return self._cfg.num_envs

    @property
    def batch_size(self) -> int:
        return self._cfg.batch_size

    @property
    def num_players(self) -> int:
        """Rows per env (max_num_players): 1, or P for a multi-player task (envs/players.py)."""
        return self._players

    @property
    def is_async(self) -> bool:
        """Whether the pool is async (batch_size < num_envs), as EnvPool's `is_async`."""
        return self._async

    @property
    def closed(self) -> bool:
        return self._closed

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        """Does nothing but warn, as EnvPool's `seed` (abandoned there): a pool's seeds are fixed
        when it is made (`envs.make(..., seed=...)`) and a reset takes `seed=` to reseed."""
        import warnings

        warnings.warn("seed() does nothing here, as EnvPool's abandoned seed(): pass seed= to envs.make (or to "
                      "reset) instead", stacklevel=2)

    @property
    def render_mode(self) -> str | None:
        return self._cfg.render_mode

    def __len__(self) -> int:
        return self._cfg.num_envs

    def __str__(self) -> str:
        return repr(self)

    def __repr__(self) -> str:
        c = self._cfg
        return (
            f"EnvPool({c.task_id!r}, env_type={c.env_type!r}, backend={c.backend!r}, "
            f"num_envs={c.num_envs}, batch_size={c.batch_size})"
        )

    # ------------------------------------------------------------------ API
    def reset(
        self,
        env_id: np.ndarray | None = None,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Any:
        """Reset envs env_id (default all) and return their first observations, in env_id's order.

        `seed` and `options` are Gymnasium's (envs/resets.py): an int s reseeds env i with s + i, as
        `make`'s seed does, so the envs replay what a pool made with seed=s gives; a list holds one
        seed (or None: keep) per env of the pool; None keeps every env's random stream.
        `options["reset_mask"]` resets the envs where it is True (a sync Gymnasium pool then returns
        every env, the others' last observations); other options go to the envs' own reset
        (worker-process pools only: the other backends' envs take none)."""
        if seed is None and options is None:
            return self._reset(env_id)
        self._check_open("reset")
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict, got {options!r} ({type(options).__name__})")
        task_options = {k: v for k, v in (options or {}).items() if k != "reset_mask"}
        masked = options is not None and "reset_mask" in options
        if masked:
            if env_id is not None:
                raise ValueError("pass either env_id or options['reset_mask'], not both")
            if self._cfg.env_type == "dm" or self._async:
                raise ValueError(
                    "options['reset_mask'] is Gymnasium's partial reset, which returns every env: it needs a gym or "
                    f"gymnasium pool in sync mode (this one: env_type={self._cfg.env_type!r}, batch_size="
                    f"{self._batch_size} of num_envs={self._num_envs}); reset envs by id with reset(env_id) instead"
                )
            if self._players > 1:
                raise ValueError("options['reset_mask'] is for single-player pools; reset a multi-player pool's envs by id")
            env_id = reset_mask_ids(options, self._num_envs)
            if env_id is not None and self._last_full_obs() is None:
                raise ValueError("options['reset_mask'] needs a full reset() first: the other envs have no episode yet")
        if task_options and not self._backend.reset_options:
            hint = "" if self._cfg.backend == "process" else \
                "; worker-process pools (backend='process') pass them to Gymnasium's envs"
            raise ValueError(
                f"reset options {sorted(task_options)}: {self._cfg.task_id} runs on the {self._cfg.backend} backend, "
                f"whose envs take no reset options (only options['reset_mask'] is taken){hint}"
            )
        seeds = env_seeds(seed, self._num_envs, self._backend.max_seed)
        if seeds is not None or task_options:
            self._prime_reset(env_id, seeds, task_options or None)
        if seeds is not None and not isinstance(seed, (list, tuple, np.ndarray)):
            self._np_random, self._np_random_seed = seeding.np_random(int(seed))  # as VectorEnv.reset
        if not masked or env_id is None:
            return self._reset(env_id)
        return self._masked_reset(env_id)

    def _prime_reset(self, env_id: Any, seeds: Seeds | None, options: dict[str, Any] | None) -> None:
        """Hands seeds and options to the backend for the reset that follows, once that reset is
        known to go through (ids in range, distinct, not in flight), so a refused one changes no
        env's random stream. (The compiled pool's backend checks in flight envs itself.)"""
        prime = self._backend.prime_reset
        if prime is None:
            raise ValueError(f"reset(seed=...): the {self._cfg.backend} backend cannot reseed its envs")
        ids = self._check_ids(env_id, None)
        if ids is not None and self._lockstep and self._async:
            self._refuse_single_reset()
        ids = self._all_ids if ids is None else ids
        if self._num_pending and np.count_nonzero(self._pending[ids]):
            busy = ids[self._pending[ids]]
            raise ValueError(f"envs {busy[:16].tolist()} are not ready: they were sent and not yet received; call recv() first")
        if len(ids) > 1 and len(np.unique(ids)) != len(ids):
            vals, counts = np.unique(ids, return_counts=True)
            raise ValueError(f"env_id has duplicates: {vals[counts > 1].tolist()}")
        prime(ids, seeds, options)

    def _last_full_obs(self) -> Any:
        """The observations of every env at its last result (a sync pool's last full batch)."""
        return None

    def _masked_reset(self, ids: np.ndarray) -> Any:
        raise AssertionError("only gym/gymnasium pools take options['reset_mask']")

    def _reset(self, env_id: np.ndarray | None) -> Any:
        """EnvPool's reset(env_id)."""
        self._check_open("reset")
        ids = self._check_ids(env_id, None)
        if self._lockstep and self._async:
            # ALE can step only the batch it returned last, so an async reset returns one batch,
            # exactly as EnvPool's own reset() does (async_reset(), then recv()).
            if ids is not None:
                self._refuse_single_reset()
            self.async_reset()
            return self._format(self._receive(self._assemble(self._take_batch(), None)), is_reset=True)
        self._mark_sent(ids)
        self._backend.send(ids, None, reset=True)
        want = self._all_ids if ids is None else ids
        while not self._ready.contains(want).all():
            self._collect()
        batch = self._receive(self._assemble(self._ready.take_ids(want), want))
        return self._format(batch, is_reset=True)

    def _refuse_single_reset(self) -> None:
        raise ValueError(
            f"{self._cfg.task_id}: this backend resets single envs only in sync mode "
            "(batch_size == num_envs); call reset() without env_id"
        )

    def async_reset(self) -> None:
        """Send a reset to every env; collect the observations with `recv`."""
        self._check_open("async_reset")
        self._mark_sent(None)
        self._backend.send(None, None, reset=True)

    def send(self, action: Any, env_id: np.ndarray | None = None) -> None:
        """Send actions for envs env_id: an array (+ env_id), or a dict with "action" and "env_id".
        Multi-player pools take rows (env, player): see envs/players.py."""
        if self._closed:
            self._check_open("send")
        if self._players > 1:
            action, env_id = self._player_actions(action, env_id)
        elif isinstance(action, dict):
            action, env_id = self._unpack_action(action, env_id)
        ids = self._check_ids(env_id, action)
        if self._lockstep:
            self._check_lockstep(ids)
        action = self._check_action(action, self._num_envs if ids is None else len(ids))
        self._mark_sent(ids)
        self._backend.send(ids, action, reset=False)

    def _player_actions(self, action: Any, env_id: Any) -> tuple[np.ndarray, Any]:
        """(actions (k, P, ...), env ids) of a multi-player send's (env, player) rows."""
        if isinstance(action, Mapping):
            if env_id is not None:
                raise ValueError("pass env_id either inside the action dict or as an argument, not both")
            return rows_to_envs(action, self._num_envs, self._players)
        rows = array_to_envs(action, self._players, len(self._action_shape) - 1)
        if env_id is not None and np.ndim(env_id) == 1 and len(env_id) == len(rows) * self._players:
            raise ValueError(
                f"the array form's env_id names envs, one per env ({len(rows)} for {len(rows) * self._players} rows), got "
                f"one per row: pass info['env_id'][::{self._players}], or the dict form with players.id"
            )
        return rows, env_id

    @staticmethod
    def _unpack_action(action: dict[str, Any], env_id: Any) -> tuple[Any, Any]:
        """(action, env_id) of EnvPool's action-dict form (envs.players.unpack_action)."""
        if env_id is not None:
            raise ValueError("pass env_id either inside the action dict or as an argument, not both")
        return unpack_action(action)

    def recv(self) -> Any:
        """Results of the first batch_size envs to finish (sync: the envs in flight, in env id
        order: all envs, or those a partial step sent, as EnvPool's sync recv returns them)."""
        if self._closed:
            self._check_open("recv")
        need = self._batch_size
        if self._num_pending < need:
            if self._num_pending == 0:
                raise RuntimeError("recv() called with nothing in flight: call send(), step() or async_reset() first")
            if self._async:
                raise RuntimeError(
                    f"recv() needs batch_size={need} envs but only {self._num_pending} are in flight; "
                    f"send actions for more envs first"
                )
            ids = np.flatnonzero(self._pending).astype(np.int32)  # a partial step's envs
            batch = self._receive(self._assemble(self._take_batch(len(ids)), ids))
            return self._format(batch, is_reset=False)
        order = None if self._async else self._all_ids
        batch = self._receive(self._assemble(self._take_batch(need), order))
        return self._format(batch, is_reset=False)

    def _take_batch(self, count: int | None = None) -> list[Chunk]:
        count = self._batch_size if count is None else count
        while self._ready.count < count:
            self._collect()
        return self._ready.take(count)

    def step(self, action: Any, env_id: np.ndarray | None = None) -> Any:
        """send(action, env_id) then recv()."""
        self.send(action, env_id)
        return self.recv()

    def snapshot(self) -> bytes:
        """The pool's whole state (envs, random streams, episode counters) as bytes, for exact
        resume from a checkpoint. Nothing may be in flight; only in-process backends (the native
        tasks) can be captured: worker processes and ALE hold state this process cannot copy."""
        self._check_open("snapshot")
        capture = self._backend.snapshot
        if capture is None:
            self._refuse_snapshot()
        if self._num_pending or self._ready.count:
            raise RuntimeError("snapshot() needs a quiescent pool: receive every env in flight first")
        return pickle.dumps((capture(), self._last_ids))

    def restore(self, snapshot: bytes) -> None:
        """Put back a state taken by `snapshot()` from a pool of the same task and settings."""
        self._check_open("restore")
        put_back = self._backend.restore
        if put_back is None:
            self._refuse_snapshot()
        if self._num_pending or self._ready.count:
            raise RuntimeError("restore() needs a quiescent pool: receive every env in flight first")
        state, self._last_ids = pickle.loads(snapshot)
        put_back(state)

    def _refuse_snapshot(self) -> NoReturn:
        raise NotImplementedError(
            f"{self._cfg.task_id} runs on the {self._cfg.backend} backend, whose env state lives outside this "
            "process; only the native backend's pools can be snapshotted"
        )

    def render(self, env_ids: Any = None) -> np.ndarray | None:
        """Frames of envs env_ids (an id or ids; default `render_env_id`, 0) as (n, H, W, 3) uint8, in their
        current state, as EnvPool's `render`. Needs `render_mode="rgb_array"` at `make`; with
        "human" (EnvPool's) the one env's frame is shown in an OpenCV window and None returned."""
        self._check_open("render")
        mode = self._cfg.render_mode
        if mode is None:
            raise RuntimeError(
                f"render() needs a pool made with render_mode='rgb_array' ({self._cfg.task_id} was made without one)"
            )
        draw = self._backend.render
        if draw is None:
            raise RuntimeError(f"render(): the {self._cfg.backend} backend draws no frames ({self._cfg.task_id})")
        ids = np.full(1, self._cfg.render_env_id, np.int32) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        if mode == "human" and len(ids) != 1:
            raise ValueError(f"render_mode='human' shows one env per call (EnvPool's rule), got env_ids {ids.tolist()[:16]}")
        checked = self._check_ids(ids, None)
        frames = draw(self._all_ids if checked is None else checked)
        if mode == "human":
            self._show_human_frame(frames[0])
            return None
        return frames

    def _show_human_frame(self, frame: np.ndarray) -> None:
        """render_mode="human": frame (H, W, 3 RGB) in an OpenCV window named for the task, as EnvPool
        shows it; without OpenCV or a display, one RuntimeError saying so."""
        try:
            import cv2
        except ImportError as e:
            raise RuntimeError("render_mode='human' shows frames with OpenCV: pip install opencv-python "
                               "(or use render_mode='rgb_array' and show the frames yourself)") from e
        try:
            cv2.imshow(self._cfg.task_id, np.ascontiguousarray(frame[..., ::-1]))  # OpenCV's channels: BGR
            cv2.waitKey(1)
        except cv2.error as e:
            why = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            raise RuntimeError(f"render_mode='human' cannot open a window here ({why}); "
                               "use render_mode='rgb_array' and show the frames yourself") from e

    @property
    def extra_info(self) -> dict[str, np.dtype]:
        """Task-specific info arrays beyond env_id and elapsed_step (Atari: lives, raw reward)."""
        return dict(self._backend.extra_info)

    def xla(self) -> tuple[Any, Any, Any, Any]:
        """`handle, recv, send, step` for use inside jit (EnvPool's XLA interface, envpool.readthedocs.io). JAX
        runs a jitted program asynchronously: await its results before closing the pool."""
        self._check_open("xla")
        if self._players > 1:
            raise ValueError(f"xla(): {self._cfg.task_id} is multi-player (max_num_players={self._players}); its XLA interface is single-player")
        handover = self._backend.xla_backend
        if handover is not None and self._last_ids is None and not self._num_pending:
            # nothing sent yet: the pool goes to the backend with compiled XLA targets
            backend = handover()
            self._backend.close()
            self._backend, self._lockstep = backend, backend.lockstep
        own = self._backend.make_xla  # a backend with compiled XLA targets
        return own(self) if own is not None else make_xla(self)

    def close(self, **kwargs: Any) -> None:
        """Stop the backend (workers exit). Idempotent. kwargs: Gymnasium's `VectorEnv.close`
        takes them for `close_extras`; a pool has none to pass on."""
        if not self._closed:
            self._closed = True
            self._backend.close()

    # ------------------------------------------------------------------ internals
    def _collect(self) -> None:
        try:
            self._ready.extend(self._backend.collect(block=True))
        except BaseException:
            self.close()  # a failed backend leaves envs in an unknown state: stop them all
            raise

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"{what}() called on a closed EnvPool ({self._cfg.task_id})")

    def _check_ids(self, env_id: Any, action: Any) -> np.ndarray | None:
        """Validated env ids as int32, or None for "all envs in order" (the sync fast path)."""
        n = self._num_envs
        if env_id is None:
            if not self._async or action is None:
                return None
            if self._last_ids is not None:
                return self._last_ids
            if np.ndim(action) > len(self._action_shape) and len(action) == n:
                return None
            raise ValueError(
                "send() in async mode without env_id needs a previous recv() (its env ids are used); "
                "pass env_id explicitly"
            )
        ids = np.asarray(env_id)
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise ValueError(f"env_id must be a 1-D array of integer env ids, got {ids.dtype} array of shape {ids.shape}")
        if len(ids) == 0:
            raise ValueError("env_id is empty")
        # One comparison checks both bounds: negative ids wrap to huge unsigned values.
        if _UMAX(ids.view(_UNSIGNED[ids.itemsize]), axis=None) >= n:
            bad = ids[(ids < 0) | (ids >= n)]
            raise ValueError(f"env_id out of range [0, {n}): {bad.tolist()}")
        if ids.dtype != np.int32:
            ids = ids.astype(np.int32)
        if len(ids) == n and not self._async and (ids == self._all_ids).all():
            return None
        return ids

    def _check_lockstep(self, ids: np.ndarray | None) -> None:
        """A lockstep backend (ALE) steps exactly the envs of the last batch received, in any order."""
        expected = self._last_ids if self._async and self._last_ids is not None else None
        if ids is expected or (ids is not None and expected is not None and np.array_equal(ids, expected)):
            return
        got = self._all_ids if ids is None else ids
        want = self._all_ids if expected is None else expected
        if len(got) == len(want) and np.array_equal(np.sort(got), np.sort(want)):
            return
        mode = "only that batch can be sent" if self._async else "a sync pool steps all its envs together"
        raise ValueError(
            f"{self._cfg.task_id}: this backend steps exactly the envs of the last batch received (ALE's vector "
            f"env takes one action per env of that batch, no env ids: {mode}); send actions for env_id "
            f"{np.sort(want).tolist()} (in any order), got env_id {got.tolist()}. To step some envs only, use "
            "async mode (batch_size < num_envs) and send for each batch recv() returns, or split the envs over "
            "separate pools"
        )

    def _check_action(self, action: Any, count: int) -> np.ndarray:
        a = action if type(action) is np.ndarray else np.asarray(action)
        if a.shape != ((count, *self._action_shape) if count != self._num_envs else self._full_action_shape):
            if self._players > 1:
                raise ValueError(
                    f"action must have {count * self._players} rows ({count} envs x {self._players} players) of shape "
                    f"{self._action_shape[1:]}, got {a.shape[0] * a.shape[1]} rows of shape {a.shape[2:]}"
                )
            raise ValueError(f"action must have shape {(count, *self._action_shape)} (one per env), got {a.shape}")
        if self._integer_actions:
            if a.dtype.kind not in "iu":
                if a.dtype.kind != "b":
                    raise ValueError(f"{self.action_space} expects integer actions, got dtype {a.dtype}")
                a = a.astype(np.int64)
            self._check_range(a)
        else:
            if a.dtype.kind not in "fiu":
                raise ValueError(f"{self.action_space} expects float actions, got dtype {a.dtype}")
            if not np.isfinite(a).all():
                raise ValueError("action holds NaN or Inf")
        return a  # backends cast (the process backend on its write into shared memory)

    def _check_range(self, a: np.ndarray) -> None:
        if self._discrete_n is not None and a.dtype.kind == "i" and self._discrete_start == 0:
            # Negative actions wrap to huge unsigned values, so one max() checks both bounds.
            if _UMAX(a.view(_UNSIGNED[a.itemsize]), axis=None) < self._discrete_n:
                return
        space = self.action_space
        if self._discrete_n is not None:
            lo, hi = self._discrete_start, self._discrete_start + self._discrete_n - 1
        elif isinstance(space, gym.spaces.MultiDiscrete):
            lo, hi = space.start, space.start + space.nvec - 1
        elif isinstance(space, gym.spaces.MultiBinary):
            lo, hi = 0, 1
        else:  # integer Box
            lo, hi = space.low, space.high
        bad = (a < lo) | (a > hi)
        if bad.any():
            raise ValueError(f"action out of range for {space}: {a[bad].ravel()[:8].tolist()}")

    def _mark_sent(self, ids: np.ndarray | None) -> None:
        pending = self._pending
        if ids is None:
            if self._num_pending:
                busy = np.flatnonzero(pending)
                raise ValueError(f"envs {busy[:16].tolist()} are not ready: still in flight; recv() their results first")
            pending[:] = True
            self._num_pending = self._cfg.num_envs
            return
        busy = pending.take(ids)  # take and put: half the cost of indexing on a batch's few envs
        if np.count_nonzero(busy):
            raise ValueError(
                f"envs {ids[busy][:16].tolist()} are not ready: they were sent and not yet received; "
                "call recv() first"
            )
        pending.put(ids, True)
        expected = self._num_pending + len(ids)
        if len(ids) > 1 and np.count_nonzero(pending) != expected:
            pending.put(ids, False)
            vals, counts = np.unique(ids, return_counts=True)
            raise ValueError(f"env_id has duplicates: {vals[counts > 1].tolist()}")
        self._num_pending = expected

    def _assemble(self, chunks: list[Chunk], order: np.ndarray | None) -> Batch:
        """One batch from finished chunks; in env id order when `order` names every env."""
        if len(chunks) == 1 and chunks[0].batch is not None and (order is None or chunks[0].in_order):
            return chunks[0].batch
        if all(c.batch is None for c in chunks):  # results sit in the backend's shared buffers
            if order is self._all_ids:
                return self._backend.gather(None)
            ids = order if order is not None else np.concatenate([c.env_id for c in chunks])
            return self._backend.gather(ids)
        batch = Batch.concat([c.batch if c.batch is not None else self._backend.gather(c.env_id) for c in chunks])
        if order is not None and not np.array_equal(batch.env_id, order):
            pos = np.empty(self._cfg.num_envs, np.int64)
            pos[batch.env_id] = np.arange(len(batch.env_id))
            batch = batch.take(pos[order])
        return batch

    def _receive(self, batch: Batch) -> Batch:
        ids = batch.env_id
        if len(ids) == self._num_pending:
            self._pending[:] = False
        else:
            self._pending.put(ids, False)
        self._num_pending -= len(ids)
        self._last_ids = ids
        return batch

    def _format(self, b: Batch, is_reset: bool) -> Any:
        """Gymnasium's outputs: (obs, info) after a reset, else (obs, reward, terminated,
        truncated, info). DmEnvPool returns TimeSteps instead."""
        self._last_batch = b  # a sync pool's last batch holds every env: a masked reset needs their obs
        b = with_players(b, self._players)
        info = {"env_id": b.env_id, "elapsed_step": b.elapsed, **b.extra}  # with_players: extra is a dict
        info["env_id"], info["elapsed_step"] = b.env_id, b.elapsed  # never clobbered by an env's key
        if is_reset:
            return b.obs, info
        return b.obs, b.reward, b.terminated, b.truncated, info


class GymnasiumEnvPool(EnvPool, gym.vector.VectorEnv, gym.Env):
    """A pool of env_type "gym" or "gymnasium": a `gymnasium.vector.VectorEnv` and `gymnasium.Env`,
    as EnvPool's are, so Gymnasium's vector wrappers (`gymnasium.wrappers.vector.*`) take it.

    Gymnasium's protocol: `reset(seed=..., options=...)` (see `EnvPool.reset`), `step(actions)`
    with next-step auto-reset (`metadata["autoreset_mode"]`), `close(**kwargs)`, `num_envs`,
    `render_mode`, `np_random`. As in EnvPool, `observation_space`/`action_space` are one env's
    spaces (the same as `single_observation_space`/`single_action_space`), `reset` also takes env
    ids, `spec` is the pool's `EnvSpec` (`spec.id`, `spec.config`), and info has no `_key` masks
    except after a masked reset (`envs.make_vector_env` gives batched spaces and masks on every
    info). An async pool (batch_size < num_envs) returns batch_size envs per step."""

    is_vector_env = True

    @property
    def single_observation_space(self) -> gym.spaces.Space:
        return self._spec.observation_space

    @property
    def single_action_space(self) -> gym.spaces.Space:
        return self._spec.action_space

    @functools.cached_property
    def metadata(self) -> dict[str, Any]:  # type: ignore[override]
        """render_modes, render_fps (the Gymnasium env's) and autoreset_mode (next step)."""
        return vector_metadata(self._cfg.task_id, self._cfg.backend)

    def _last_full_obs(self) -> Any:
        b = self._last_batch
        return b.obs if b is not None and np.array_equal(b.env_id, self._all_ids) else None

    def _masked_reset(self, ids: np.ndarray) -> tuple[Any, dict[str, Any]]:
        """Gymnasium's partial reset: every env's observation (the others' last ones) and the
        reset envs' info, masked (`_key`) True at ids."""
        last = self._last_full_obs()
        obs, info = self._reset(ids)
        full = scatter(last, obs, ids)
        n = self._num_envs
        self._last_batch = Batch(self._all_ids, full, np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool),
                                 np.zeros(n, np.int32))  # fmt: skip
        return full, scatter_info(info, ids, n)


class DmEnvPool(EnvPool, dm_env.Environment):
    """A pool of env_type "dm": a `dm_env.Environment` whose TimeSteps hold a batch. Its specs
    describe one env (no batch axis), with the structure of `TimeStep.observation`."""

    def observation_spec(self) -> Any:
        return self._spec.observation_spec()

    def action_spec(self) -> specs.Array:
        return self._spec.action_spec()

    def reward_spec(self) -> specs.Array:
        return self._spec.reward_spec()

    def discount_spec(self) -> specs.BoundedArray:
        return self._spec.discount_spec()

    def _format(self, b: Batch, is_reset: bool) -> dm_env.TimeStep:
        """A TimeStep: FIRST after a reset, LAST when the episode ends, discount 0 only on
        termination; info fields (Atari's lives, an env's keys) join the observation."""
        b = with_players(b, self._players)
        step_type = np.where(
            b.elapsed == 0, dm_env.StepType.FIRST, np.where(b.terminated | b.truncated, dm_env.StepType.LAST, dm_env.StepType.MID)
        ).astype(np.int32)
        discount = (~b.terminated).astype(np.float32)
        observation = dm_observation(b.obs, b.env_id, b.elapsed, b.extra, self._spec.dm_observation_fields)
        return dm_env.TimeStep(step_type, b.reward, discount, observation)
