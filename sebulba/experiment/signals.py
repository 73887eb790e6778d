"""Signals during a run (SIGTERM, Ctrl-C): before the loop trains they unwind its setup
(`StoppedBeforeTraining`); once it trains they ask it to stop after the current learner iteration,
which then saves its final checkpoint (`graceful_stop`)."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading

from sebulba.loop.contract import Loop

log = logging.getLogger("sebulba")


class StoppedBeforeTraining(KeyboardInterrupt):
    """SIGTERM or Ctrl-C while a run was being set up (its env pools built, its programs
    compiled): the run stops there, and a new run's directory is removed."""

    def __init__(self, sig: signal.Signals):
        super().__init__(f"stopped by {sig.name} while the run was being set up, before training")
        self.signal = sig


class Stopper:
    """What the signal handler stops: the loop, once it trains."""

    loop: Loop | None = None  # set once the loop trains


@contextlib.contextmanager
def graceful_stop():
    """Signals during a run: SIGTERM or a first Ctrl-C before the loop trains raises
    `StoppedBeforeTraining` (the setup unwinds: pools closed, a new run's directory removed);
    once it trains (`stopper.loop` set), they ask the loop to stop after the current learner
    iteration (it then saves its final checkpoint); a second Ctrl-C interrupts at once. Yields
    (a list that holds the first signal received, if any; the stopper)."""
    received: list[signal.Signals] = []
    stopper = Stopper()
    if threading.current_thread() is not threading.main_thread():
        yield received, stopper
        return

    def handler(signum, frame):
        sig = signal.Signals(signum)
        loop = stopper.loop
        if loop is None:
            raise StoppedBeforeTraining(sig)
        if loop.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if not received:
            received.append(sig)
        again = " (Ctrl-C again to abort)" if sig == signal.SIGINT else ""
        log.warning(f"{sig.name}: stopping after this learner iteration{again}")
        loop.request_stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received, stopper
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
