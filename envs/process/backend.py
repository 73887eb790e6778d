"""The worker-process backend: Gymnasium envs in worker processes, several envs per worker,
results in shared memory, and one small message per worker per send."""

from __future__ import annotations

import multiprocessing as mp
import pickle
from multiprocessing.connection import wait

import gymnasium as gym
import numpy as np

from envs.process.gym_task import GymTask
from envs.process.shm import Layout, SharedBuffers
from envs.process.worker import CLOSE, DONE, ERROR, READY, RESET, STEP, worker_main
from envs.ready import Batch, Chunk

START_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 5.0


def mp_context() -> mp.context.BaseContext:
    """forkserver: fast worker starts that are safe in a process with JAX's threads."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["envs.process.worker"])
    return ctx


class WorkerError(RuntimeError):
    """An env worker failed; the message carries the worker's own traceback."""


def _buffer_specs(obs_space: gym.spaces.Space, act_space: gym.spaces.Space, n: int) -> list:
    return [
        ("obs", (n, *obs_space.shape), obs_space.dtype),
        ("action", (n, *act_space.shape), act_space.dtype),
        ("reward", (n,), np.float32),
        ("terminated", (n,), bool),
        ("truncated", (n,), bool),
        ("elapsed", (n,), np.int32),
    ]


class ProcessBackend:
    def __init__(self, task: GymTask):
        config = task.config
        self.observation_space = observation_space = task.observation_space
        self.action_space = action_space = task.action_space
        n = config.num_envs
        num_workers = max(1, min(config.num_threads or 1, n))
        self._bounds = np.linspace(0, n, num_workers + 1).astype(np.int64)
        self._owner = np.repeat(np.arange(num_workers), np.diff(self._bounds))
        self._shm = SharedBuffers(Layout.build(_buffer_specs(observation_space, action_space, n)))
        b = self._shm.arrays
        self._obs, self._action = b["obs"], b["action"]
        self._reward, self._term, self._trunc, self._elapsed = b["reward"], b["terminated"], b["truncated"], b["elapsed"]
        self._conns: list = []
        self._procs: list = []
        self._closed = False
        ctx = mp_context()
        try:
            for w in range(num_workers):
                lo, hi = int(self._bounds[w]), int(self._bounds[w + 1])
                parent, child = ctx.Pipe()
                cpu = -1 if config.thread_affinity_offset < 0 else config.thread_affinity_offset + w
                proc = ctx.Process(
                    target=worker_main,
                    args=(child, task.factory, lo, hi - lo, config.seed, config.max_episode_steps,
                          self._shm.layout, self._shm.name, task.transpose_obs, cpu),
                    name=f"envs-worker-{w}",
                    daemon=True,
                )
                proc.start()
                child.close()
                self._conns.append(parent)
                self._procs.append(proc)
            for w in range(num_workers):
                self._expect_ready(w)
        except BaseException:
            self.close()
            raise
        # Sync sends go to every worker with its whole range: prebuilt messages.
        self._all_msgs = {
            cmd: [cmd + np.arange(self._bounds[w], self._bounds[w + 1], dtype=np.int32).tobytes() for w in range(num_workers)]
            for cmd in (STEP, RESET)
        }

    def _describe(self, w: int) -> str:
        return f"env worker {w} (envs {self._bounds[w]}..{self._bounds[w + 1] - 1}, pid {self._procs[w].pid})"

    def _expect_ready(self, w: int) -> None:
        conn, proc = self._conns[w], self._procs[w]
        if not wait([conn, proc.sentinel], timeout=START_TIMEOUT_S):
            raise WorkerError(f"{self._describe(w)} did not start within {START_TIMEOUT_S:.0f} s")
        if conn.poll():
            try:
                msg = conn.recv_bytes()
            except (EOFError, OSError):
                msg = b""
            if msg[:1] == READY:
                return
            if msg:
                self._raise_worker_error(w, msg)
        proc.join(CLOSE_TIMEOUT_S)
        raise WorkerError(
            f"{self._describe(w)} exited during startup with code {proc.exitcode}; its stderr says why "
            "(a common cause: the env factory or __main__ cannot be imported in a fresh process)"
        )

    def _raise_worker_error(self, w: int, msg: bytes) -> None:
        if msg[:1] == ERROR:
            text, tb = pickle.loads(msg[1:])
            raise WorkerError(f"{self._describe(w)} failed: {text}\n--- worker traceback ---\n{tb}")
        raise WorkerError(f"{self._describe(w)} sent an unexpected message {msg[:16]!r}")

    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        cmd = RESET if reset else STEP
        if ids is None:
            if action is not None:
                self._action[:] = action
            for conn, msg in zip(self._conns, self._all_msgs[cmd]):
                conn.send_bytes(msg)
            return
        if action is not None:
            self._action[ids] = action
        owner = self._owner[ids]
        for w in np.unique(owner).tolist():
            self._conns[w].send_bytes(cmd + ids[owner == w].tobytes())

    def collect(self, block: bool) -> list[Chunk]:
        sentinels = {p.sentinel: w for w, p in enumerate(self._procs)}
        ready = wait(self._conns + list(sentinels), timeout=None if block else 0)
        out = []
        for r in ready:
            if r in sentinels:
                w = sentinels[r]
                if not self._conns[w].poll():
                    raise WorkerError(f"{self._describe(w)} died with exit code {self._procs[w].exitcode}")
                continue
            w = self._conns.index(r)
            try:
                msg = r.recv_bytes()
            except (EOFError, OSError):
                self._procs[w].join(CLOSE_TIMEOUT_S)
                raise WorkerError(f"{self._describe(w)} died with exit code {self._procs[w].exitcode}") from None
            if msg[:1] != DONE:
                self._raise_worker_error(w, msg)
            out.append(Chunk(np.frombuffer(msg, np.int32, offset=1), None))
        return out

    def gather(self, ids: np.ndarray | None) -> Batch:
        if ids is None:
            return Batch(
                np.arange(len(self._owner), dtype=np.int32), self._obs.copy(), self._reward.copy(),
                self._term.copy(), self._trunc.copy(), self._elapsed.copy(),
            )
        return Batch(ids, self._obs[ids], self._reward[ids], self._term[ids], self._trunc[ids], self._elapsed[ids])

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for conn in self._conns:
            try:
                conn.send_bytes(CLOSE)
            except (OSError, ValueError):
                pass
        for proc in self._procs:
            proc.join(CLOSE_TIMEOUT_S)
            if proc.is_alive():
                proc.kill()
                proc.join(CLOSE_TIMEOUT_S)
        for conn in self._conns:
            conn.close()
        self._shm.close()
