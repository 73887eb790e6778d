"""One worker process seen from the parent: start it, wait for its READY, receive its answers
(a death is seen through the process sentinel, an env's exception through an ERROR message),
kill it and start it again. Used by the env pool's process backend and by the env managers."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from envs.process.errors import EnvRaised, WorkerDied, WorkerError, WorkerTimeout

# First byte of every message a worker sends: READY once started (maybe + payload), DONE + answer,
# ERROR + pickled (message, traceback).
READY, DONE, ERROR = b"K", b"D", b"E"
CLOSE_TIMEOUT_S = 5.0


def mp_context() -> mp.context.BaseContext:
    """forkserver: fast worker starts that are safe in a process with JAX's threads."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["envs.process.worker", "envs.process.env_worker"])
    return ctx


def error_message(exc: BaseException, tb: str) -> bytes:
    """The ERROR answer a worker sends for an exception (its traceback travels as text)."""
    return ERROR + pickle.dumps((f"{type(exc).__name__}: {exc}", tb))


def send_failure(conn: Connection, exc: BaseException) -> None:
    """A worker's last word: its exception and traceback, if the pipe still takes it."""
    try:
        conn.send_bytes(error_message(exc, traceback.format_exc()))
    except Exception:  # noqa: BLE001 - the parent is gone or closing; nothing else to tell
        pass


def exit_with_parent() -> None:
    """In a worker process: end it as soon as the process that started it is gone, even while an
    env's code holds its main thread (a step that hangs, a reset that takes hours). The parent may
    have exited, been killed, or dropped the worker while starting it (a signal between the fork and
    the pid's arrival); an orphan would otherwise live on, holding the parent's stdout and stderr
    open. The parent's end of the start pipe closes in every case: a thread waits for that."""
    parent = mp.parent_process()
    if parent is None:  # not started by multiprocessing (a test calling a worker's main directly)
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class Worker:
    """A worker process running `target(conn, *args)`; `describe` names it in every error."""

    def __init__(self, target: Callable[..., None], args: tuple[Any, ...], name: str, describe: str):
        self._target, self.args, self.name, self._describe = target, args, name, describe
        self.conn: Connection | None = None
        self.proc: mp.process.BaseProcess | None = None
        self.ready_payload = b""

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def sentinel(self) -> int:
        return self.proc.sentinel

    def describe(self) -> str:
        return f"{self._describe} (pid {self.pid})"

    def start(self) -> None:
        """Start the process; `await_ready` waits for it."""
        ctx = mp_context()
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=self._target, args=(child, *self.args), name=self.name, daemon=True)
        try:
            proc.start()
        except BaseException:  # not started, or dropped mid-start (it then exits: exit_with_parent)
            parent.close()
            child.close()
            raise
        self.proc, self.conn = proc, parent
        child.close()

    def await_ready(self, timeout: float | None) -> bytes:
        """Wait for READY; returns what follows it. Raises WorkerTimeout / WorkerDied / EnvRaised."""
        if not wait([self.conn, self.proc.sentinel], timeout=timeout):
            raise WorkerTimeout(f"{self.describe()} did not start within {timeout:g} s")
        msg = self.recv()
        if msg[:1] != READY:
            raise WorkerError(f"{self.describe()} sent {msg[:16]!r} instead of READY")
        self.ready_payload = msg[1:]
        return self.ready_payload

    def has_answer(self) -> bool:
        """Whether recv() would return or raise now (an answer, or the worker is gone)."""
        return bool(wait([self.conn, self.proc.sentinel], timeout=0))

    def recv(self, conn_ready: bool = False) -> bytes:
        """The next answer (blocking). Raises WorkerDied if the worker exited, EnvRaised on ERROR.
        conn_ready: wait() said the pipe is readable (skips the check for a dead worker)."""
        try:
            if not conn_ready and not self.conn.poll() and not self.proc.is_alive():
                raise EOFError
            msg = self.conn.recv_bytes()
        except (EOFError, OSError):
            raise self._died() from None
        if msg[:1] == ERROR:
            text, tb = pickle.loads(msg[1:])
            raise EnvRaised(f"{self.describe()} failed: {text}\n--- worker traceback ---\n{tb}", tb)
        return msg

    def send(self, msg: bytes) -> None:
        """Send a command; a dead worker's broken pipe is left for recv() to report."""
        try:
            self.conn.send_bytes(msg)
        except (OSError, ValueError):
            pass

    def _died(self) -> WorkerDied:
        self.proc.join(CLOSE_TIMEOUT_S)
        code = self.proc.exitcode
        how = "exited during startup" if not self.ready_payload and code is not None and code >= 0 else "died"
        hint = (
            "; its stderr says why (a common cause: the env factory or __main__ cannot be imported in a fresh process)"
            if how == "exited during startup" else ""
        )
        return WorkerDied(f"{self.describe()} {how} with exit code {code}{hint}")

    def kill(self) -> None:
        """SIGKILL the process and reap it (a hung worker included)."""
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join(CLOSE_TIMEOUT_S)
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def stop(self, close_msg: bytes) -> None:
        """Ask the worker to exit; kill it if it does not within CLOSE_TIMEOUT_S."""
        if self.proc is None:
            return
        if self.conn is not None:
            self.send(close_msg)
        self.proc.join(CLOSE_TIMEOUT_S)
        self.kill()

    def restart(self, timeout: float | None) -> bytes:
        """Kill (if alive) and start afresh; returns the new READY payload."""
        self.kill()
        self.ready_payload = b""
        self.start()
        return self.await_ready(timeout)
