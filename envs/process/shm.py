"""Per-env result and action buffers in one shared-memory block, seen as numpy arrays by the
pool and by every worker: observations cross processes without pickling."""

from __future__ import annotations

import dataclasses
from multiprocessing import shared_memory

import numpy as np


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    shape: tuple[int, ...]
    dtype: str
    offset: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where each array lives in the block; picklable, sent to workers once."""

    fields: tuple[Field, ...]
    size: int

    @staticmethod
    def build(specs: list[tuple[str, tuple[int, ...], np.dtype]]) -> Layout:
        fields, offset = [], 0
        for name, shape, dtype in specs:
            f = Field(name, tuple(int(s) for s in shape), np.dtype(dtype).str, offset)
            fields.append(f)
            offset += -(-f.nbytes // 64) * 64  # 64-byte aligned
        return Layout(tuple(fields), max(offset, 64))


class SharedBuffers:
    """Owns (create=True) or attaches to the block; `arrays[name]` are views into it."""

    def __init__(self, layout: Layout, name: str | None = None):
        self.layout = layout
        self._owner = name is None
        self._shm = shared_memory.SharedMemory(name=name, create=self._owner, size=layout.size)
        # Workers (forkserver children) share the creator's resource tracker, which records a
        # block once however often it is attached; only the creator unlinks it.
        buf = self._shm.buf
        self.arrays = {
            f.name: np.ndarray(f.shape, np.dtype(f.dtype), buffer=buf, offset=f.offset) for f in layout.fields
        }

    @property
    def name(self) -> str:
        return self._shm.name

    def close(self) -> None:
        self.arrays = {}
        try:
            self._shm.close()
        except BufferError:
            pass  # a view is still alive somewhere; the OS frees the block when the process exits
        if self._owner:
            try:
                self._shm.unlink()
            except FileNotFoundError:
                pass
