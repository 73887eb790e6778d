"""A JAX profiler trace of a window of a training run (`--profile_after_s`, `--profile_seconds`):
every host thread (inferencers, learner, env pools) and, on a GPU, the device's streams, written
as XProf files and a Perfetto trace (`perfetto_trace.json.gz`) under the run directory's
`profile/`. `python -m sebulba.experiment.trace_summary RUN_DIR/profile` turns the Perfetto trace
into busy fractions per thread and device stream."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import threading
from collections.abc import Iterator
from pathlib import Path

import jax

log = logging.getLogger("sebulba")


@dataclasses.dataclass(frozen=True)
class ProfileWindow:
    """Trace `seconds` of the run, starting `after_s` seconds after the loop starts (compilation
    and warm-up fall before it with a large enough after_s)."""

    after_s: float
    seconds: float = 3.0
    python: bool = False  # also trace every Python call (names the Python code, but slows it)

    def __post_init__(self):
        if not (math.isfinite(self.after_s) and self.after_s >= 0):
            raise ValueError(f"profile after_s must be a finite number >= 0, got {self.after_s}")
        if not (math.isfinite(self.seconds) and self.seconds > 0):
            raise ValueError(f"profile seconds must be a finite number > 0, got {self.seconds}")


@dataclasses.dataclass
class ProfileHandle:
    directory: Path
    started: threading.Event  # set once the trace is recording
    written: threading.Event  # set once the trace is stopped and written


@contextlib.contextmanager
def profiled(window: ProfileWindow | None, directory: Path) -> Iterator[ProfileHandle | None]:
    """Record the window's trace into `directory` while the block runs. A block that ends inside
    the window stops the trace there; one that ends before it records none (with a warning). A
    profiler failure is raised when the block ends, unless the block itself raised."""
    if window is None:
        yield None
        return
    handle = ProfileHandle(Path(directory), threading.Event(), threading.Event())
    stop = threading.Event()
    errors: list[BaseException] = []

    def start() -> None:
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = int(window.python)
        jax.profiler.start_trace(str(handle.directory), create_perfetto_trace=True, profiler_options=options)
        handle.started.set()
        log.info(f"profiling {window.seconds} s into {handle.directory}")

    def record(started: bool) -> None:
        try:
            if not started:
                if stop.wait(window.after_s):
                    log.warning(f"the run ended before its profile window (after {window.after_s} s): no trace written")
                    return
                start()
            try:
                stop.wait(window.seconds)
            finally:
                jax.profiler.stop_trace()
            handle.written.set()
            log.info(f"profile written to {handle.directory}")
        except BaseException as e:  # noqa: BLE001 - raised in the caller's thread at the end
            errors.append(e)

    started_now = window.after_s == 0  # from the very start: no race with a short block
    if started_now:
        start()
    thread = threading.Thread(target=record, args=(started_now,), name="profiler", daemon=True)
    thread.start()
    try:
        yield handle
    finally:
        stop.set()
        thread.join(timeout=300)
    if thread.is_alive():
        raise RuntimeError(f"the profiler did not finish writing {handle.directory} within 300 s")
    if errors:
        raise RuntimeError(f"profiling into {handle.directory} failed: {errors[0]!r}") from errors[0]
