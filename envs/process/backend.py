"""The worker-process backend: Gymnasium envs in worker processes, several envs per worker,
results in shared memory, and one small message per worker per send.

A worker that dies, hangs past step_timeout or whose env raises is respawned (fresh envs,
reseeded deterministically) up to max_retry consecutive times; its envs' current episodes end
truncated (see `_recover`). Past max_retry the backend raises WorkerError: a pool's batch cannot
shrink.

Info: a worker whose envs returned non-empty info dicts appends them to its answer; the parent
keeps each env's latest info and batches those of a batch's envs on `gather` (envs.info), so an
env without info costs nothing beyond an empty-dict check per step."""

from __future__ import annotations

import collections
import functools
import pickle
import time
import warnings
import select
from typing import Any

import numpy as np

from envs.contract import Backend
from envs.info import batch_infos
from envs.process.errors import WorkerError, WorkerTimeout
from envs.process.gym_task import GymTask
from envs.process.shm import Layout, SharedBuffers
from envs.process.supervisor import CLOSE_TIMEOUT_S, DONE, Worker, mp_context
from multiprocessing.connection import wait
from envs.process.worker import (CLOSE, FRAMES, INFO, RENDER, RESET, STEP, parse_info_answer, reset_with_message,
                                 worker_main)
from envs.players import PLAYERS, per_player
from envs.ready import Batch, Chunk
from envs.tree import build, leaf_spaces, map_obs, path_name

__all__ = ["CLOSE_TIMEOUT_S", "ProcessBackend", "WorkerError", "mp_context"]

# Info keys the pool sets itself: an env's key of that name reaches the caller as info_<key>.
POOL_INFO_KEYS = ("env_id", "elapsed_step", PLAYERS)
_NO_INFO: dict[str, Any] = {}


def obs_field(path: tuple) -> str:
    """The shared-memory field of an observation leaf ("obs" for an unstructured observation)."""
    return "obs" if not path else f"obs/{path_name(path)}"


def _buffer_specs(task: GymTask, n: int) -> list:
    """Per-env buffers; a multi-player task's have a player axis after the env's (but elapsed)."""
    obs_space, act_space = task.observation_space, task.action_space
    rows = (n,) if task.num_players == 1 else (n, task.num_players)
    return [
        *((obs_field(path), (*rows, *leaf.shape), leaf.dtype) for path, leaf in leaf_spaces(obs_space)),
        ("action", (*rows, *act_space.shape), act_space.dtype),
        ("reward", rows, np.float32),
        ("terminated", rows, bool),
        ("truncated", rows, bool),
        ("elapsed", (n,), np.int32),
        *([("alive", rows, bool)] if task.num_players > 1 else []),
    ]


class ProcessBackend(Backend):
    def __init__(self, task: GymTask):
        config = self._config = task.config
        self.reset_options = task.reset_options  # options of reset(options=...) go to the envs' own reset
        self.extra_info = dict(task.extra_info)  # info keys on every step, known up front (dm spec fields)
        self._task, self._retry = task, task.retry
        self.observation_space = observation_space = task.observation_space
        self.action_space = task.action_space
        self.num_players = task.num_players
        self.player_names = task.player_names
        n = config.num_envs
        num_workers = max(1, min(config.num_threads or 1, n))
        self._bounds = np.linspace(0, n, num_workers + 1).astype(np.int64)
        self._owner = np.repeat(np.arange(num_workers), np.diff(self._bounds))
        self._shm = SharedBuffers(Layout.build(_buffer_specs(task, n)))
        b = self._shm.arrays
        # One buffer per observation leaf, in the observation's structure.
        self._obs = build(lambda path, _: b[obs_field(path)], observation_space)
        self._action = b["action"]
        self._reward, self._term, self._trunc, self._elapsed = b["reward"], b["terminated"], b["truncated"], b["elapsed"]
        self._alive = b.get("alive")  # multi-player: each player's row is in the episode
        self._workers: list[Worker] = []
        self._closed = False
        # Recovery state: messages each worker has not answered yet (cmd, ids or None: its whole
        # range), when its oldest was sent, its consecutive faults and respawns; envs owed a
        # truncation (respawned while not in flight) and answers made here, not by a worker.
        self._queue = [collections.deque() for _ in range(num_workers)]
        self._sent_at = [0.0] * num_workers
        self._failures = [0] * num_workers  # consecutive faults, zeroed by a real step
        self._generation = [0] * num_workers
        self._steps = [0] * num_workers  # step answers since the worker (re)started
        self._owed = np.zeros(n, bool)
        self._fresh = np.ones(n, bool)  # envs whose worker's env was never sent a reset or step (none to render)
        self._any_fresh = True
        self._num_owed = 0
        self._local: list[Chunk] = []
        self._infos: dict[int, dict[str, Any]] = {}  # each env's latest info, if not empty
        self._primed: tuple[list[int | None] | None, dict[str, Any] | None] | None = None  # (seeds, options)
        mp_context()
        try:
            for w in range(num_workers):
                self._workers.append(Worker(worker_main, self._worker_args(w), f"envs-worker-{w}", self._describe(w)))
                self._workers[w].start()
            for w in self._workers:
                w.await_ready(self._retry.connect_timeout)
        except BaseException:
            self.close()
            raise
        # Sync sends go to every worker with its whole range: prebuilt messages.
        self._all_msgs = {
            cmd: [cmd + np.arange(self._bounds[w], self._bounds[w + 1], dtype=np.int32).tobytes() for w in range(num_workers)]
            for cmd in (STEP, RESET)
        }

    def _worker_args(self, w: int) -> tuple:
        c, task = self._config, self._task
        lo, hi = int(self._bounds[w]), int(self._bounds[w + 1])
        cpu = -1 if c.thread_affinity_offset < 0 else c.thread_affinity_offset + w
        seed = c.seed + self._generation[w] * c.num_envs  # a respawned env gets a new, known seed
        leaves = tuple((path, obs_field(path), path in task.image_leaves) for path in task.obs_leaves)
        return (task.factory, lo, hi - lo, seed, c.max_episode_steps, self._shm.layout, self._shm.name, leaves, cpu,
                task.num_players)  # fmt: skip

    def _describe(self, w: int) -> str:
        return f"env worker {w} (envs {self._bounds[w]}..{self._bounds[w + 1] - 1})"

    @property
    def _procs(self) -> list:
        return [w.proc for w in self._workers]

    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict[str, Any] | None) -> None:
        """The next reset's envs get env.reset(seed=seeds[i], options=options) (seed None: keep)."""
        try:
            pickle.dumps(options, pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001 - pickle raises many kinds
            raise ValueError(f"reset options {options!r} cannot be pickled to reach the worker processes: {e}") from e
        self._primed = (seeds, options)

    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        cmd = RESET if reset else STEP
        primed = None
        if reset and self._primed is not None:
            primed, self._primed = self._primed, None
        if ids is None:
            if action is not None:
                self._action[:] = action
            if not self._num_owed and primed is None:
                if self._any_fresh:
                    self._sent_to_workers(None)
                now = time.monotonic()
                for w, msg in enumerate(self._all_msgs[cmd]):
                    self._post(w, cmd, None, msg, now)
                return
            ids = np.arange(len(self._owner), dtype=np.int32)
        elif action is not None:
            self._action[ids] = action
        if self._num_owed:
            owed = self._owed[ids]
            if owed.any():
                if reset:
                    self._owed[ids] = False
                    self._num_owed = int(np.count_nonzero(self._owed))
                else:
                    self._truncate(ids[owed])
                    ids = ids[~owed]
        if self._any_fresh:
            self._sent_to_workers(ids)
        owner = self._owner[ids]
        now = time.monotonic()
        for w in np.unique(owner).tolist():
            mine = ids[owner == w]
            if primed is None:
                self._post(w, cmd, mine, cmd + mine.tobytes(), now)
            else:
                seeds, options = primed
                self._post(w, RESET, mine, reset_with_message(mine, seeds, options), now)

    def _sent_to_workers(self, ids: np.ndarray | None) -> None:
        """Envs ids (None: all) were sent a reset or step: their workers' envs are reset (a fresh
        env's first step is its reset)."""
        self._fresh[slice(None) if ids is None else ids] = False
        self._any_fresh = bool(self._fresh.any())

    def _post(self, w: int, cmd: bytes, ids: np.ndarray | None, msg: bytes, now: float) -> None:
        q = self._queue[w]
        if not q:
            self._sent_at[w] = now
        q.append((cmd, ids, msg))  # the message: a respawned worker is sent its resets again
        try:
            self._workers[w].conn.send_bytes(msg)
        except (OSError, ValueError):
            pass  # a dead worker: collect() sees it through its sentinel

    def collect(self, block: bool) -> list[Chunk]:
        out, self._local = self._local, []
        queue, workers = self._queue, self._workers
        watch, owner = [], []  # file descriptors: each busy worker's pipe, then its process sentinel
        for w, q in enumerate(queue):
            if q:
                watch.append(workers[w].conn.fileno())
                watch.append(workers[w].sentinel)
                owner.append(w)
        if not watch:
            return out
        timeout = None if block and not out else 0.0
        step_timeout = self._retry.step_timeout
        if timeout is None and step_timeout is not None:
            first = min(self._sent_at[w] for w, q in enumerate(queue) if q)
            timeout = max(0.0, first + step_timeout - time.monotonic())
        # select() on the raw descriptors: one system call (multiprocessing's wait() builds and
        # tears down a selector each time, ~20 µs of a 16-env step)
        ready = select.select(watch, [], [], timeout)[0]
        done: set[int] = set()
        for fd in ready:
            pos = watch.index(fd)
            w = owner[pos // 2]
            if w in done:
                continue
            done.add(w)
            worker = workers[w]
            try:
                msg = worker.recv(conn_ready=pos % 2 == 0)
            except WorkerError as e:
                self._recover(w, e)
                continue
            ids = self._answer_ids(worker, msg)
            cmd = queue[w].popleft()[0]
            if cmd == STEP:
                # The first step after a (re)start resets the fresh envs; the second one is a real
                # step, and only that proves the worker works again.
                self._steps[w] += 1
                if self._steps[w] == 2:
                    self._failures[w] = 0
            if queue[w]:
                self._sent_at[w] = time.monotonic()
            out.append(Chunk(ids, None))
        if step_timeout is not None:  # checked on every call: others' answers must not hide a hang
            now = time.monotonic()
            for w in owner:
                if w not in done and queue[w] and now - self._sent_at[w] >= step_timeout:
                    workers[w].kill()
                    self._recover(w, WorkerTimeout(f"{workers[w].describe()} did not answer within step_timeout={step_timeout:g} s"))
        if self._local:
            out.extend(self._local)
            self._local = []
        return out

    def _answer_ids(self, worker: Worker, msg: bytes) -> np.ndarray:
        """The env ids of a DONE or INFO answer; records their infos (an empty one for DONE)."""
        tag = msg[:1]
        if tag == DONE:
            ids = np.frombuffer(msg, np.int32, offset=1)
            if self._infos:
                self._forget_infos(ids)
            return ids
        if tag == INFO:
            ids, infos = parse_info_answer(msg)
            if self._infos:
                self._forget_infos(ids)
            self._infos.update(infos)
            return ids
        raise WorkerError(f"{worker.describe()} sent an unexpected message {msg[:16]!r}")

    def _forget_infos(self, ids: np.ndarray) -> None:
        pop = self._infos.pop
        for g in ids.tolist():
            pop(g, None)

    def _recover(self, w: int, err: WorkerError) -> None:
        """Respawn worker w after a fault; its envs' episodes end truncated: the steps it had in
        flight are answered here (truncated, reward 0, the last obs), its other envs owe a
        truncated answer to their next step, and resets in flight are sent to the new worker.
        The new worker's envs are fresh, so each one's next real step is a reset."""
        worker = self._workers[w]
        self._failures[w] += 1
        if self._failures[w] > self._retry.max_retry:
            raise WorkerError(
                f"{err}\n--- given up: {self._failures[w]} faults in a row exceed max_retry={self._retry.max_retry} "
                "(a pool's batch cannot shrink) ---"
            ) from err
        warnings.warn(
            f"{err}\n--- respawning {self._describe(w)}; the current episodes of its envs end truncated ---",
            RuntimeWarning,
            stacklevel=2,
        )
        lo, hi = int(self._bounds[w]), int(self._bounds[w + 1])
        mine = np.arange(lo, hi, dtype=np.int32)
        stepping, resetting = [], []  # ids; (ids, message)
        for cmd, ids, msg in self._queue[w]:
            if cmd == RESET:
                resetting.append((mine if ids is None else ids, msg))
            else:
                stepping.append(mine if ids is None else ids)
        self._queue[w].clear()
        if self._retry.retry_waiting_time:
            time.sleep(self._retry.retry_waiting_time)
        self._generation[w] += 1
        self._steps[w] = 0
        worker.args = self._worker_args(w)
        try:
            worker.restart(self._retry.connect_timeout)
        except WorkerError as e:
            self._queue[w].extend((RESET, ids, msg) for ids, msg in resetting)
            self._queue[w].extend((STEP, ids, STEP + ids.tobytes()) for ids in stepping)
            self._recover(w, e)
            return
        in_flight = np.zeros(hi - lo, bool)
        for ids in stepping + [ids for ids, _ in resetting]:
            in_flight[ids - lo] = True
        self._owed[lo:hi] = ~in_flight
        self._fresh[lo:hi] = True  # the new worker's envs; those whose reset is sent again below are not
        for ids, _ in resetting:
            self._fresh[ids] = False
        self._any_fresh = bool(self._fresh.any())
        self._num_owed = int(np.count_nonzero(self._owed))
        for ids in stepping:
            self._truncate(ids)
        now = time.monotonic()
        for ids, msg in resetting:
            self._post(w, RESET, ids, msg, now)

    def _truncate(self, ids: np.ndarray) -> None:
        """Answer steps of envs whose worker was respawned: truncated, reward 0, last obs, and
        an empty info (the last one described a step that this answer does not repeat)."""
        if self._infos:
            self._forget_infos(ids)
        self._reward[ids] = 0.0
        if self._alive is None:
            self._term[ids] = False
            self._trunc[ids] = True
        else:  # multi-player: players already terminated stay so, the others' episodes are truncated
            self._trunc[ids] = ~self._term[ids]
        self._elapsed[ids] += 1
        self._owed[ids] = False
        self._num_owed = int(np.count_nonzero(self._owed))
        self._local.append(Chunk(np.asarray(ids, np.int32), None))

    def gather(self, ids: np.ndarray | None) -> Batch:
        if ids is None:
            return Batch(
                np.arange(len(self._owner), dtype=np.int32), map_obs(np.copy, self._obs), self._reward.copy(),
                self._term.copy(), self._trunc.copy(), self._elapsed.copy(), self._batch_info(None),
            )
        return Batch(
            ids, map_obs(lambda buf: buf[ids], self._obs), self._reward[ids], self._term[ids], self._trunc[ids], self._elapsed[ids],
            self._batch_info(ids),
        )

    def render(self, ids: np.ndarray) -> np.ndarray:
        """Frames of envs ids, one per env (a multi-player env's whole view), drawn by the envs in
        their workers (made with render_mode="rgb_array"). Envs of the same workers whose steps
        are in flight are waited for first; their results wait for the next collect."""
        owner = self._owner[ids]
        workers = np.unique(owner).tolist()
        for w in workers:
            busy = [g for _, q_ids, _ in self._queue[w] for g in self._range(w, q_ids) if g in ids]
            if busy:
                raise RuntimeError(f"render() of envs {sorted(set(busy))[:16]} whose step is in flight: recv() their results first")
        held, self._local = self._local, []
        try:
            while any(self._queue[w] for w in workers):
                held.extend(self.collect(block=True))
        finally:
            self._local = held + self._local
        if self._fresh[ids].any():
            raise RuntimeError(f"render() of envs {ids[self._fresh[ids]][:16].tolist()} that were never reset (or whose "
                               "worker was respawned since): reset() or step them first")
        for w in workers:
            self._workers[w].send(RENDER + ids[owner == w].tobytes())
        frames: list[np.ndarray | None] = [None] * len(workers)
        failure: WorkerError | None = None
        for k, w in enumerate(workers):  # every answer is read, so no worker's pipe is left out of step
            try:
                frames[k] = self._frames(w)
            except WorkerError as e:
                failure = failure or e
                self._recover(w, e)
        if failure is not None:
            raise failure
        out = np.empty((len(ids), *frames[0].shape[1:]), np.uint8)
        for k, w in enumerate(workers):
            out[owner == w] = frames[k]
        return out

    def _range(self, w: int, ids: np.ndarray | None) -> list[int]:
        return list(range(self._bounds[w], self._bounds[w + 1])) if ids is None else ids.tolist()

    def _frames(self, w: int) -> np.ndarray:
        """Worker w's answer to RENDER (within step_timeout, when one is set)."""
        worker, timeout = self._workers[w], self._retry.step_timeout
        if timeout is not None and not wait([worker.conn, worker.sentinel], timeout=timeout):
            worker.kill()
            raise WorkerTimeout(f"{worker.describe()} did not render within step_timeout={timeout:g} s")
        msg = worker.recv()
        if msg[:1] != FRAMES:
            raise WorkerError(f"{worker.describe()} sent {msg[:16]!r} instead of frames")
        return pickle.loads(msg[1:])

    def _batch_info(self, ids: np.ndarray | None) -> dict[str, Any] | None:
        """The latest infos of envs ids (None: all), batched; None when all are empty. Multi-player:
        each player's info is a row (envs.players), the players' alive flags under `players`."""
        if self._alive is not None:
            return self._players_info(ids)
        if not self._infos:
            return None
        get = self._infos.get
        rows = [get(g, _NO_INFO) for g in (range(len(self._owner)) if ids is None else ids.tolist())]
        return batch_infos(rows, POOL_INFO_KEYS) or None

    def _players_info(self, ids: np.ndarray | None) -> dict[str, Any]:
        envs = range(len(self._owner)) if ids is None else ids.tolist()
        extra: dict[str, Any] = {}
        if self._infos:
            get, p = self._infos.get, self.num_players
            rows = [get(g, _NO_INFO).get(i, _NO_INFO) for g in envs for i in range(p)]
            extra = per_player(batch_infos(rows, POOL_INFO_KEYS), len(envs), p)
        extra[PLAYERS] = {"alive": self._alive.copy() if ids is None else self._alive[ids]}
        return extra

    @functools.cached_property
    def info_dtypes(self) -> dict[str, np.dtype]:
        """{key: dtype} of the env's info keys that hold one number, as a probe env built here
        shows them: reset with the pool's seed, then one step with a seeded random action (a key
        of both gets the promoted dtype: CliffWalking's prob is an int on reset, a float on
        step). The keys the XLA state carries (envs.xla), fixed once."""
        env = self._task.factory()
        try:
            _, reset_info = env.reset(seed=self._config.seed)
            env.action_space.seed(self._config.seed)
            step_info = env.step(env.action_space.sample())[-1]
        finally:
            env.close()
        probe = batch_infos([reset_info, step_info], POOL_INFO_KEYS)
        masks = {f"_{k}" for k in probe}
        return {
            k: v.dtype for k, v in probe.items()
            if k not in masks and isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "biuf"
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for worker in self._workers:
            if worker.conn is not None:
                worker.send(CLOSE)
        for worker in self._workers:
            worker.stop(CLOSE)
        self._shm.close()
