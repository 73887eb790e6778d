"""Results in transit between a backend and the pool: a batch of env results, and the queue of
finished envs in completion order."""

from __future__ import annotations

import collections
from typing import Any, NamedTuple

import numpy as np

from envs.info import concat_infos, take_info
from envs.tree import map_obs


class Batch(NamedTuple):
    """Results for a set of envs; every field has first dimension len(env_id)."""

    env_id: np.ndarray  # int32
    obs: Any  # an array, or a dict/tuple tree of arrays for Dict/Tuple observation spaces (envs.tree)
    reward: np.ndarray  # float32
    terminated: np.ndarray  # bool
    truncated: np.ndarray  # bool
    elapsed: np.ndarray  # int32
    # Info beyond env_id and elapsed_step, batched as envs.info does: a task's fixed arrays (Atari:
    # lives, raw reward) or a Gymnasium env's own keys (masks `_key`, nested dicts); None: none.
    extra: dict[str, Any] | None = None

    def take(self, sel: slice | np.ndarray) -> Batch:
        extra = None if self.extra is None else take_info(self.extra, sel) or None
        obs = self.obs[sel] if type(self.obs) is np.ndarray else map_obs(lambda a: a[sel], self.obs)
        return Batch(self.env_id[sel], obs, *(a[sel] for a in self[2:6]), extra)

    @staticmethod
    def concat(parts: list[Batch]) -> Batch:
        """Parts one after another; their infos may differ in keys (a key missing from a part
        gets a mask), as envs' own infos do."""
        if len(parts) == 1:
            return parts[0]
        extra = concat_infos([p.extra for p in parts], [len(p.env_id) for p in parts])
        columns = [np.concatenate(col) for col in zip(*(p[2:6] for p in parts))]
        obs = map_obs(lambda *leaves: np.concatenate(leaves), *(p.obs for p in parts))
        return Batch(np.concatenate([p.env_id for p in parts]), obs, *columns, extra)


class Chunk(NamedTuple):
    """Envs that finished together. `batch` holds their results, or is None when the results
    sit in the backend's per-env buffers (shared memory), to be gathered on receipt.
    `in_order`: env_id is every env, 0..num_envs-1 (a sync step), so no reordering is needed."""

    env_id: np.ndarray
    batch: Batch | None
    in_order: bool = False


class ReadyQueue:
    """Finished envs, oldest first, that the user has not received yet."""

    def __init__(self) -> None:
        self._chunks: collections.deque[Chunk] = collections.deque()
        self.count = 0

    def extend(self, chunks: list[Chunk]) -> None:
        for c in chunks:
            if len(c.env_id):
                self._chunks.append(c)
                self.count += len(c.env_id)

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """Which of ids are in the queue (bool mask)."""
        if not self._chunks:
            return np.zeros(len(ids), bool)
        return np.isin(ids, np.concatenate([c.env_id for c in self._chunks]))

    def take(self, n: int) -> list[Chunk]:
        """The n oldest finished envs, splitting a chunk if needed."""
        first = self._chunks[0]
        if len(first.env_id) == n:  # the common case: one send, one recv
            self._chunks.popleft()
            self.count -= n
            return [first]
        out: list[Chunk] = []
        while n > 0:
            c = self._chunks.popleft()
            k = len(c.env_id)
            if k > n:
                head = Chunk(c.env_id[:n], None if c.batch is None else c.batch.take(slice(0, n)))
                tail = Chunk(c.env_id[n:], None if c.batch is None else c.batch.take(slice(n, None)))
                self._chunks.appendleft(tail)
                c, k = head, n
            out.append(c)
            n -= k
            self.count -= k
        return out

    def take_ids(self, ids: np.ndarray) -> list[Chunk]:
        """Exactly the envs in ids (all must be queued), in the order of ids."""
        wanted = set(ids.tolist())
        picked: list[Chunk] = []
        kept: collections.deque[Chunk] = collections.deque()
        for c in self._chunks:
            mask = np.fromiter((i in wanted for i in c.env_id.tolist()), bool, len(c.env_id))
            if mask.any():
                picked.append(Chunk(c.env_id[mask], None if c.batch is None else c.batch.take(mask)))
            if not mask.all():
                kept.append(Chunk(c.env_id[~mask], None if c.batch is None else c.batch.take(~mask)))
        self._chunks = kept
        self.count -= len(ids)
        return picked
