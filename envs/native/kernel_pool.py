"""The built-in tasks' compiled pool: EnvPool's Python API over the C++ pool (kernel/pool.cc).

The compiled library holds the whole pool state (the envs, their random streams, the envs in
flight and the queue of finished ones), so `xla()`'s compiled targets and the Python API share
it: a batch sent inside a jitted program can be received in Python, and the other way round.
The arithmetic is the numpy path's, operation for operation, in double precision, so results
equal Gymnasium's bit for bit (tests/test_native_kernel.py checks both paths agree).

Each Python call is one ctypes call into the library on buffers allocated once: actions are
copied into an input buffer, results come out as one block that is copied and cut into the
arrays the user receives (they may keep them). Snapshots use the numpy path's format, so a
snapshot of either path restores into the other.
"""

from __future__ import annotations

import ctypes
import pickle
from typing import Any

import gymnasium as gym
import numpy as np

from envs.config import PoolConfig
from envs.contract import BackendBase
from envs.episodes import EpisodeBook
from envs.native.base import RESETS_BUFFERED, NativeTask
from envs.native.tasks import TASK_CODES
from envs.pool import DmEnvPool, EnvPool, GymnasiumEnvPool
from envs.ready import Batch


_ERRORS = {1: ValueError, 2: RuntimeError}
_U64 = (1 << 64) - 1


def _rng_words(states: list[dict[str, int]]) -> np.ndarray:
    """PCG64 states as (n, 4) uint64: state high, state low, inc high, inc low."""
    return np.array([[s["state"] >> 64, s["state"] & _U64, s["inc"] >> 64, s["inc"] & _U64] for s in states], np.uint64)


class KernelPool(BackendBase):
    """One pool in the compiled library: its id, and buffers shared with it. A `BackendBase`, not a
    `Backend`: its step interface (send, recv, step, reset) is the compiled pool's, which
    `CompiledEnvPool` calls."""

    def __init__(self, lib: ctypes.CDLL, task_cls: type[NativeTask], config: PoolConfig):
        self.lib = lib
        self.task_cls = task_cls
        self.config = config
        self.observation_space = task_cls.observation_space()
        self.action_space = task_cls.action_space()
        n = self.num_envs = config.num_envs
        self.discrete = isinstance(self.action_space, gym.spaces.Discrete)
        rng = _rng_words([np.random.default_rng(config.seed + i).bit_generator.state["state"] for i in range(n)])
        max_steps = -1 if config.max_episode_steps is None else config.max_episode_steps
        self.id = lib.np_create(config.task_id.encode(), TASK_CODES[config.task_id], n, config.batch_size, max_steps, rng.ctypes.data)
        if self.id <= 0:
            raise ValueError(f"the compiled pool refused {config.task_id} with num_envs={n}, batch_size={config.batch_size}")
        self.obs_dim = int(self.observation_space.shape[0])
        # int64 for Discrete (any integer action converts exactly; the kernel checks the range)
        self.actions = np.zeros(n if self.discrete else (n, 1), np.int64 if self.discrete else np.float32)
        self.ids = np.zeros(n, np.int32)
        # The output block: obs (float32), reward (float32), env_id, elapsed (int32), terminated,
        # truncated (bool); one block, so one copy per batch.
        self.out = np.zeros(n * (self.obs_dim * 4 + 14), np.uint8)
        self._act_ptr, self._ids_ptr = self.actions.ctypes.data, self.ids.ctypes.data
        self._offset_cache: dict[int, dict[str, int]] = {}
        self._ptrs = self._out_pointers(n)
        self._count = ctypes.c_int(0)  # the size of the batch a recv returned
        self._count_ptr = ctypes.addressof(self._count)

    def _out_pointers(self, k: int) -> tuple[int, ...]:
        base, offsets = self.out.ctypes.data, self._offsets(k)
        return tuple(base + offsets[f] for f in ("obs", "reward", "terminated", "truncated", "env_id", "elapsed"))

    def _offsets(self, k: int) -> dict[str, int]:
        """Byte offsets of the output arrays for a batch of k (kept per k: a pool sees one or two)."""
        got = self._offset_cache.get(k)
        if got is None:
            d = self.obs_dim
            got = self._offset_cache[k] = {"obs": 0, "reward": 4 * k * d, "env_id": 4 * k * (d + 1),
                                           "elapsed": 4 * k * (d + 2), "terminated": 4 * k * (d + 3),
                                           "truncated": 4 * k * (d + 3) + k}  # fmt: skip
        return got

    def _raise(self, code: int) -> None:
        raise _ERRORS[code](self.lib.np_last_error().decode())

    def _batch(self, k: int, rows: int | None = None) -> Batch:
        """The results of the output block laid out for k envs (the first `rows` of them: a sync
        pool's partial step returns fewer), as arrays the caller owns."""
        blk = self.out[: k * (self.obs_dim * 4 + 14)].copy()
        o = self._offsets(k)
        batch = Batch(
            np.ndarray((k,), np.int32, blk, o["env_id"]),
            np.ndarray((k, self.obs_dim), np.float32, blk, 0),
            np.ndarray((k,), np.float32, blk, o["reward"]),
            np.ndarray((k,), np.bool_, blk, o["terminated"]),
            np.ndarray((k,), np.bool_, blk, o["truncated"]),
            np.ndarray((k,), np.int32, blk, o["elapsed"]),
        )
        return batch if rows is None or rows == k else batch.take(slice(0, rows))

    def _stage(self, action: np.ndarray, env_id: np.ndarray | None) -> tuple[int, int]:
        """Copies actions (and ids) into the input buffers; returns (count, ids pointer or 0)."""
        k = len(action)
        if k > self.num_envs:
            raise ValueError(f"action must have shape ({self.num_envs}, ...) at most (one per env), got {action.shape}")
        np.copyto(self.actions[:k] if k != self.num_envs else self.actions, action, casting="unsafe")
        if env_id is None:
            return k, 0
        if len(env_id) != k:
            raise ValueError(f"action must have shape {(len(env_id), *action.shape[1:])} (one per env), got {action.shape}")
        self.ids[:k] = env_id
        return k, self._ids_ptr

    def step(self, action: np.ndarray, env_id: np.ndarray | None, recv_count: int) -> Batch:
        k, ids = self._stage(action, env_id)
        if code := self.lib.np_step(self.id, self._act_ptr, ids, k, *self._ptrs_for(recv_count), self._count_ptr):
            self._raise(code)
        return self._batch(recv_count, self._count.value)

    def send(self, action: np.ndarray, env_id: np.ndarray | None) -> None:
        k, ids = self._stage(action, env_id)
        if code := self.lib.np_send(self.id, self._act_ptr, ids, k):
            self._raise(code)

    def recv(self, count: int) -> Batch:
        if code := self.lib.np_recv(self.id, *self._ptrs_for(count), self._count_ptr):
            self._raise(code)
        return self._batch(count, self._count.value)

    def reset(self, env_id: np.ndarray | None) -> Batch:
        k = self.num_envs if env_id is None else len(env_id)
        ids = 0
        if env_id is not None:
            self.ids[:k] = env_id
            ids = self._ids_ptr
        if code := self.lib.np_reset(self.id, ids, k, *self._ptrs_for(k)):
            self._raise(code)
        return self._batch(k)

    def async_reset(self) -> None:
        if code := self.lib.np_async_reset(self.id):
            self._raise(code)

    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict | None) -> None:
        """Env i's stream becomes default_rng(seeds[i]) (the library refuses envs in flight)."""
        if seeds is None:
            return
        chosen = np.array([i for i in ids.tolist() if seeds[i] is not None], np.int32)
        if len(chosen):
            rng = _rng_words([np.random.default_rng(seeds[i]).bit_generator.state["state"] for i in chosen.tolist()])
            if code := self.lib.np_seed(self.id, chosen.ctypes.data, len(chosen), rng.ctypes.data):
                self._raise(code)

    def _ptrs_for(self, k: int) -> tuple[int, ...]:
        return self._ptrs if k == self.num_envs else self._out_pointers(k)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> tuple[NativeTask, EpisodeBook, np.ndarray | None]:
        """The state in the numpy path's objects (see NativeBackend.snapshot)."""
        n, rows = self.num_envs, self.task_cls.state_rows
        state, rng = np.empty((n, rows)), np.empty((n, 4), np.uint64)
        elapsed, done, fresh = np.empty(n, np.int32), np.empty(n, np.uint8), np.empty(n, np.uint8)
        last, num_last = np.empty(n, np.int32), ctypes.c_int()
        code = self.lib.np_get_state(self.id, state.ctypes.data, rng.ctypes.data, elapsed.ctypes.data, done.ctypes.data,
                                     fresh.ctypes.data, last.ctypes.data, ctypes.byref(num_last))  # fmt: skip
        if code:
            self._raise(code)
        task = self.task_cls(n, self.config.seed)
        task.state[:] = state.T
        if hasattr(task, "fresh"):
            task.fresh[:] = fresh.astype(bool)
        noise = task.noise
        for i, (sh, sl, ih, il) in enumerate(rng.tolist()):
            noise._rngs[i].bit_generator.state = {"bit_generator": "PCG64", "state": {"state": (sh << 64) | sl, "inc": (ih << 64) | il},
                                                  "has_uint32": 0, "uinteger": 0}  # fmt: skip
        noise._pos[:] = RESETS_BUFFERED  # nothing drawn ahead: the next reset draws afresh
        book = EpisodeBook(n, self.config.max_episode_steps)
        book.elapsed[:] = elapsed
        book.done[:] = done.astype(bool)
        return task, book, (last[: num_last.value].copy() if num_last.value >= 0 else None)

    def restore(self, task: NativeTask, book: EpisodeBook, last_ids: np.ndarray | None) -> None:
        if type(task) is not self.task_cls or task.num_envs != self.num_envs:
            raise ValueError(f"snapshot of {type(task).__name__} x {task.num_envs} does not fit this pool "
                             f"({self.task_cls.__name__} x {self.num_envs})")  # fmt: skip
        noise, k = task.noise, task.draws_per_reset
        states = []
        for i, rng in enumerate(noise._rngs):
            bg = np.random.PCG64()
            bg.state = rng.bit_generator.state
            ahead = int(RESETS_BUFFERED - noise._pos[i]) * k  # drawn into the buffer, not used
            if ahead:
                bg.advance((1 << 128) - ahead)
            states.append(bg.state["state"])
        # Named arrays: a temporary's memory could be freed before the call reads it.
        state = np.ascontiguousarray(task.state.T)
        rng = _rng_words(states)
        elapsed = np.ascontiguousarray(book.elapsed, np.int32)
        done = book.done.astype(np.uint8)
        fresh = getattr(task, "fresh", np.ones(self.num_envs, bool)).astype(np.uint8)
        last = np.zeros(self.num_envs, np.int32) if last_ids is None else np.ascontiguousarray(last_ids, np.int32)
        code = self.lib.np_set_state(
            self.id, state.ctypes.data, rng.ctypes.data, elapsed.ctypes.data, done.ctypes.data, fresh.ctypes.data,
            last.ctypes.data, -1 if last_ids is None else len(last_ids),
        )  # fmt: skip
        if code:
            self._raise(code)

    def make_xla(self, pool: EnvPool) -> tuple[Any, Any, Any, Any]:
        from envs.native.kernel_xla import make_kernel_xla

        return make_kernel_xla(pool, self)

    def close(self) -> None:
        self.lib.np_close(self.id)


class CompiledEnvPool(EnvPool):
    """EnvPool's API for a built-in task, each call one call into the compiled pool (the checks
    of env ids, in-flight envs and action ranges run there, with the messages of EnvPool)."""

    _backend: KernelPool

    def _kernel_action(self, action: Any, env_id: np.ndarray | None) -> np.ndarray:
        a = action if type(action) is np.ndarray else np.asarray(action)
        if a.ndim == 0 or a.shape[1:] != self._action_shape:
            k = len(env_id) if env_id is not None else self._batch_size
            raise ValueError(f"action must have shape {(k, *self._action_shape)} (one per env), got {a.shape}")
        kind = a.dtype.kind
        if self._integer_actions:
            if kind not in "iub":
                raise ValueError(f"{self.action_space} expects integer actions, got dtype {a.dtype}")
        elif kind not in "fiu":
            raise ValueError(f"{self.action_space} expects float actions, got dtype {a.dtype}")
        return a

    def _ids(self, env_id: Any) -> np.ndarray | None:
        if env_id is None:
            return None
        ids = np.asarray(env_id)
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise ValueError(f"env_id must be a 1-D array of integer env ids, got {ids.dtype} array of shape {ids.shape}")
        if ids.dtype.itemsize > 4 and len(ids) and (ids.max() >= self._num_envs or ids.min() < 0):
            bad = ids[(ids < 0) | (ids >= self._num_envs)]
            raise ValueError(f"env_id out of range [0, {self._num_envs}): {bad.tolist()}")
        return ids

    def _reset(self, env_id: np.ndarray | None) -> Any:
        self._check_open("reset")
        ids = self._ids(env_id)
        if ids is not None and len(ids) == 0:
            raise ValueError("env_id is empty")
        return self._format(self._backend.reset(ids), is_reset=True)

    def async_reset(self) -> None:
        self._check_open("async_reset")
        self._backend.async_reset()

    def _checked(self, what: str, action: Any, env_id: Any) -> tuple[np.ndarray, np.ndarray | None]:
        if self._closed:
            self._check_open(what)
        if isinstance(action, dict):
            action, env_id = self._unpack_action(action, env_id)
        ids = self._ids(env_id)
        return self._kernel_action(action, ids), ids

    def send(self, action: Any, env_id: np.ndarray | None = None) -> None:
        self._backend.send(*self._checked("send", action, env_id))

    def recv(self) -> Any:
        if self._closed:
            self._check_open("recv")
        return self._format(self._backend.recv(self._batch_size), is_reset=False)

    def step(self, action: Any, env_id: np.ndarray | None = None) -> Any:
        return self._format(self._backend.step(*self._checked("step", action, env_id), self._batch_size), is_reset=False)

    def snapshot(self) -> bytes:
        self._check_open("snapshot")
        task, book, last = self._backend.snapshot()
        return pickle.dumps(((task, book), last))

    def restore(self, snapshot: bytes) -> None:
        self._check_open("restore")
        (task, book), last = pickle.loads(snapshot)
        self._backend.restore(task, book, last)


class CompiledGymnasiumPool(CompiledEnvPool, GymnasiumEnvPool):
    """A compiled built-in task with env_type "gym" or "gymnasium"."""


class CompiledDmPool(CompiledEnvPool, DmEnvPool):
    """A compiled built-in task with env_type "dm"."""
