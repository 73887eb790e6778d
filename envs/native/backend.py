"""The native backend: a built-in task stepped in-process as whole numpy batches.

Sends are queued and run when the pool next collects results, so in async mode consecutive
sends (e.g. two half-batches) run as one vectorized call. Each env's result depends only on
its own actions and seed, so batching changes no result, only the cost.
"""

from __future__ import annotations

import copy

import numpy as np

from envs.config import PoolConfig
from envs.contract import Backend
from envs.episodes import EpisodeBook
from envs.native.base import NativeTask
from envs.ready import Batch, Chunk

_ALL = slice(None)


class NativeBackend(Backend):
    def __init__(self, task_cls: type[NativeTask], config: PoolConfig):
        self.task = task_cls(config.num_envs, config.seed)
        self.book = EpisodeBook(config.num_envs, config.max_episode_steps)
        self.observation_space = task_cls.observation_space()
        self.action_space = task_cls.action_space()
        self._all_ids = np.arange(config.num_envs, dtype=np.int32)
        self._queued: list[tuple[np.ndarray | None, np.ndarray | None]] = []  # (ids, action or None=reset)
        self._renderer = None
        if config.render_mode is not None:
            from envs.native.render import NativeRenderer

            self._renderer = NativeRenderer(task_cls, config.num_envs)

    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        self._queued.append((ids, None if reset else action))

    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict | None) -> None:
        if seeds is not None:
            self.task.noise.reseed({i: seeds[i] for i in ids.tolist() if seeds[i] is not None})

    def collect(self, block: bool) -> list[Chunk]:
        queued, self._queued = self._queued, []
        if len(queued) == 1:
            return [self._run(*queued[0])]
        out = []
        i = 0
        while i < len(queued):
            ids, action = queued[i]
            j = i + 1
            if ids is not None:  # merge following sends of the same kind into one call
                while j < len(queued) and queued[j][0] is not None and (queued[j][1] is None) == (action is None):
                    j += 1
                if j > i + 1:
                    ids = np.concatenate([q[0] for q in queued[i:j]])
                    if action is not None:
                        action = np.concatenate([q[1] for q in queued[i:j]])
            out.append(self._run(ids, action))
            i = j
        return out

    def _run(self, ids: np.ndarray | None, action: np.ndarray | None) -> Chunk:
        idx = _ALL if ids is None else ids
        env_id = self._all_ids.copy() if ids is None else ids  # a copy: it is handed to the user
        in_order = ids is None
        n = len(env_id)
        if action is None:  # explicit reset
            self.task.reset(env_id)
            self.book.reset(idx)
            if self._renderer is not None:
                self._renderer.record(idx, None, env_id)
            zeros_b = np.zeros(n, bool)
            batch = Batch(env_id, self.task.observe(idx), np.zeros(n, np.float32), zeros_b, zeros_b.copy(), np.zeros(n, np.int32))
            return Chunk(env_id, batch, in_order)
        reward, terminated = self.task.step(idx, action)
        resets = self.book.done[idx]
        if np.count_nonzero(resets):  # (count_nonzero: a quarter of .any()'s cost on small arrays)
            self.task.reset(env_id[resets])
            reward[resets] = 0.0
            terminated[resets] = False
        else:
            resets = None
        if self._renderer is not None:
            self._renderer.record(idx, action, None if resets is None else env_id[resets])
        terminated, truncated, elapsed = self.book.finish(idx, resets, terminated)
        return Chunk(env_id, Batch(env_id, self.task.observe(idx), reward, terminated, truncated, elapsed), in_order)

    def snapshot(self) -> tuple:
        return copy.deepcopy((self.task, self.book))

    def restore(self, state: tuple) -> None:
        task, book = state
        if type(task) is not type(self.task) or task.num_envs != self.task.num_envs:
            raise ValueError(f"snapshot of {type(task).__name__} x {task.num_envs} does not fit this pool "
                             f"({type(self.task).__name__} x {self.task.num_envs})")
        self.task, self.book = copy.deepcopy(task), copy.deepcopy(book)

    def render(self, ids: np.ndarray) -> np.ndarray:
        """Frames of envs ids as Gymnasium draws them; sends not yet collected are not drawn."""
        return self._renderer.frames(self.task, ids)

    def gather(self, ids: np.ndarray) -> Batch:
        raise AssertionError("native chunks always carry their batch")

    def close(self) -> None:
        self._queued = []
        if self._renderer is not None:
            self._renderer.close()
