"""Knowing when another process of a multi-process job is lost, and stopping in bounded time.

A collective (the learner's gradient mean, a checkpoint's barrier) waits for every process; when
one dies or hangs, the others would wait forever. `PeerWatch` is a thread in every process that
beats its own key in JAX's coordination service (its key-value store, on process 0) every
`timeout_s / 10` and reads the others'. A process whose beat has not moved for `timeout_s` by the
reader's clock (a dead process, a stopped one, or a host that cannot be reached) is lost: the
watch says which, with the run's last complete checkpoint and how to resume, and ends its own
process at once (`os._exit`), since its main thread may be stuck inside a collective that no
Python code can interrupt. A process that finishes marks itself done, so a slower peer never
takes it for lost; one that fails marks its error, so the others name it instead of a timeout.

When process 0 itself dies, JAX's client in every other process ends it within a second (JAX's
coordination service runs in process 0; no process can go on without it), with JAX's own
message: "Terminating process because the JAX distributed service detected fatal errors".
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable

from sebulba.experiment.run_log import ECHO

log = logging.getLogger("sebulba")

EXIT_PEER_LOST = 75  # EX_TEMPFAIL: not this process's fault; relaunch every process with --resume
KEY = "sebulba/peers"


def _client():
    from jax._src import distributed  # what orbax's multi-process code uses too: JAX's coordination client

    return distributed.global_state.client


class PeerWatch:
    """One per process of a multi-process job (see the module docstring)."""

    def __init__(self, process: int, processes: int, timeout_s: float,
                 on_lost: Callable[[str], None] | None = None):
        if timeout_s <= 0:
            raise ValueError(f"peer_timeout_s must be > 0, got {timeout_s}")
        self.process, self.processes, self.timeout_s = process, processes, float(timeout_s)
        self.interval_s = min(self.timeout_s / 10, 2.0)
        self.context: Callable[[], str] = lambda: ""  # appended to the message: the last checkpoint, how to resume
        self._on_lost = on_lost or self._exit
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sebulba-peer-watch", daemon=True)

    def start(self) -> PeerWatch:
        self._thread.start()
        return self

    # ------------------------------------------------------------------ marks
    def _set(self, kind: str, value: str) -> None:
        try:
            _client().key_value_set(f"{KEY}/{kind}/{self.process}", value, allow_overwrite=True)
        except Exception:  # the coordinator is gone: nothing to tell
            pass

    def _get(self, kind: str, process: int) -> str | None:
        return self._all(kind).get(process)

    def _all(self, kind: str) -> dict[int, str]:
        """Every process's mark of this kind, in one call to the store."""
        try:
            entries = _client().key_value_dir_get(f"{KEY}/{kind}/")
        except Exception:  # the coordinator is gone: JAX's client ends the process
            return {}
        return {int(key.rsplit("/", 1)[-1]): value for key, value in entries}

    def done(self) -> None:
        """This process finished cleanly: stop beating, and let no peer take it for lost."""
        self._set("done", "1")
        self.stop()

    def stop(self, timeout_s: float = 30.0) -> None:
        """End the thread and wait for it. Called at exit before JAX's own clean-up: a daemon
        thread still inside a call to JAX's client when the interpreter finalizes is unwound
        through C++ frames, and the process aborts ("FATAL: exception not rethrown")."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def failed(self, error: str) -> None:
        """This process failed with `error`: the others name it (first line, cut to 500 chars)."""
        self._set("failed", error.strip().splitlines()[-1][:500] if error.strip() else "an error")

    def peer_failure(self) -> tuple[int, str] | None:
        """The first other process that marked an error, and its error."""
        failed = self._all("failed")
        return next(((p, failed[p]) for p in sorted(failed) if p != self.process), None)

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        try:
            self._watch()
        except Exception as e:  # never silently: without the watch a lost peer would hang this process
            log.error(f"the peer watch stopped ({type(e).__name__}: {e}); a lost process will not be detected")

    def _watch(self) -> None:
        beat = 0
        seen: dict[int, tuple[str | None, float]] = {}
        while not self._stop.wait(self.interval_s if beat else 0.0):
            beat += 1
            self._set("beat", str(beat))
            now, beats, done = time.monotonic(), self._all("beat"), self._all("done")
            for p in range(self.processes):
                if p == self.process or p in done:
                    continue
                last = seen.get(p)
                if last is None or last[0] != beats.get(p):
                    seen[p] = (beats.get(p), now)
                elif now - last[1] > self.timeout_s:
                    failure = self._get("failed", p)
                    why = (f"it failed: {failure}" if failure is not None else
                           f"no heartbeat for {self.timeout_s:.0f} s: it died, hung, or its host cannot be reached")
                    self._lost.set()
                    self._on_lost(self.message(p, why))
                    return

    def message(self, lost: int, why: str) -> str:
        extra = self.context()
        return (f"error: process {lost} of {self.processes} was lost ({why}); process {self.process} stops too."
                + (f" {extra}" if extra else ""))

    def wait_for_verdict(self, seconds: float) -> None:
        """Block up to `seconds` while the watch decides whether a peer was lost (it then ends the
        process itself); returns if none was."""
        self._lost.wait(seconds)

    @staticmethod
    def _exit(message: str) -> None:
        print(message, file=sys.stderr, flush=True)
        ECHO.error(message)  # printed already: log.txt only
        for handler in logging.getLogger().handlers:
            try:
                handler.flush()
            except Exception:
                pass
        os._exit(EXIT_PEER_LOST)


def abandon(watch: PeerWatch, error: BaseException, collective_failure: bool) -> None:
    """The end of a process of a multi-process job that raised `error`: mark it for the peers; if
    it is the failure of a collective (a peer went away under it), wait for the watch to name the
    lost peer, or name a peer that failed first; otherwise report this process's own error. Ends
    the process without JAX's shutdown barrier, which would wait for peers that are gone."""
    text = "".join(traceback.format_exception_only(type(error), error))
    watch.failed(text)
    if collective_failure:
        deadline = time.monotonic() + watch.timeout_s + 5 * watch.interval_s
        while time.monotonic() < deadline:
            peer = watch.peer_failure()
            if peer is not None:
                watch._on_lost(watch.message(peer[0], f"it failed: {peer[1]}"))
                return
            watch.wait_for_verdict(watch.interval_s)
    sys.stderr.write("".join(traceback.format_exception(type(error), error, error.__traceback__)))
    sys.stderr.flush()
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(1)
