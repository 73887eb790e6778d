"""What the processes of a multi-process (jax.distributed) job share: each process's row of a
global array, texts and numbers gathered from every process, checks that fail on every process
together, and decisions taken at the same learner iteration everywhere. With one process each is
a plain local operation."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

PROCESS_AXIS = "processes"
TEXT_BYTES = 4096  # a gathered text is cut to this many UTF-8 bytes


def process_devices(process: int) -> list[jax.Device]:
    """A process's devices in the order of its jax.local_devices()."""
    return sorted((d for d in jax.devices() if d.process_index == process), key=lambda d: d.id)


def process_sharding() -> NamedSharding:
    """One row per process, each on its process's first device."""
    mesh = Mesh(np.array([process_devices(p)[0] for p in range(jax.process_count())]), (PROCESS_AXIS,))
    return NamedSharding(mesh, PartitionSpec(PROCESS_AXIS))


def per_process(x: np.ndarray) -> jax.Array:
    """A global array of shape (processes, *x.shape) whose row p is process p's `x` (each process
    passes its own): what orbax saves as 'each process writes what it owns'."""
    x = np.asarray(x)
    return jax.make_array_from_process_local_data(process_sharding(), x[None], (jax.process_count(), *x.shape))


def own_row(x: jax.Array) -> np.ndarray:
    """This process's row of a `per_process` array, on the host."""
    return np.asarray(x.addressable_data(0))[0]


def allgather(x: np.ndarray) -> np.ndarray:
    """Every process's `x` (same shape and dtype everywhere), stacked: shape (processes, *x.shape).
    A collective: every process must call it at the same point."""
    x = np.asarray(x)
    if jax.process_count() == 1:
        return x[None]
    return np.asarray(multihost_utils.process_allgather(x))


def gather_texts(text: str) -> list[str]:
    """Every process's `text` (cut to TEXT_BYTES bytes), in process order. A collective."""
    data = text.encode()[:TEXT_BYTES]
    row = np.zeros(TEXT_BYTES + 4, np.uint8)
    row[:4] = np.frombuffer(np.uint32(len(data)).tobytes(), np.uint8)
    row[4:4 + len(data)] = np.frombuffer(data, np.uint8)
    rows = allgather(row)
    return [bytes(r[4:4 + int(np.frombuffer(r[:4].tobytes(), np.uint32)[0])]).decode(errors="replace") for r in rows]


def broadcast_text(text: str) -> str:
    """Process 0's `text` on every process. A collective."""
    return gather_texts(text)[0]


def check_everywhere(error: str | None, what: str = "a check") -> None:
    """A check that fails on every process together: `error` is this process's problem (None:
    none). If any process has one, every process raises ValueError with the first failing
    process's message, so no process goes on alone into a collective that would never end."""
    if jax.process_count() == 1:
        if error is not None:
            raise ValueError(error)
        return
    errors = gather_texts(error or "")
    failed = [(p, e) for p, e in enumerate(errors) if e]
    if not failed:
        return
    p, message = failed[0]
    if p == jax.process_index():
        raise ValueError(message)
    raise ValueError(f"process {p} failed {what}: {message}")


class Votes:
    """Decisions every process takes at the same learner iteration (stop after this one, write a
    metrics report now): each iteration every process casts its flags, and all read the
    element-wise OR of the previous iteration's. The collective runs while the iteration goes on,
    so no process waits for it; a decision lands one iteration late. One process: no lag."""

    def __init__(self, width: int):
        self.width = width
        self._multi = jax.process_count() > 1
        self._pending: jax.Array | None = None
        if self._multi:
            sharding = process_sharding()
            self._any = jax.jit(lambda v: jnp.max(v, axis=0), out_shardings=NamedSharding(sharding.mesh, PartitionSpec()))

    def __call__(self, flags: Sequence[bool]) -> tuple[bool, ...]:
        if len(flags) != self.width:
            raise ValueError(f"cast {self.width} flags, got {len(flags)}")
        if not self._multi:
            return tuple(bool(f) for f in flags)
        previous, self._pending = self._pending, self._any(per_process(np.asarray(flags, np.int32)))
        if previous is None:
            return (False,) * self.width
        return tuple(bool(v) for v in np.asarray(previous.addressable_data(0)))


@contextlib.contextmanager
def together(what: str) -> Iterator[None]:
    """A block that every process runs and that holds no collective: if it raises on any
    process, every process raises ValueError (the first failing process's message, naming it
    on the others) when it leaves the block, so none goes on alone into the next collective.
    With one process, a plain block."""
    if jax.process_count() == 1:
        yield
        return
    try:
        yield
    except Exception as e:
        check_everywhere(str(e) or type(e).__name__, what)
        raise  # unreachable: check_everywhere raised
    check_everywhere(None, what)
