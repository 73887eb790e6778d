"""Failures of env worker processes, shared by the env pool's process backend and the env managers."""

from __future__ import annotations


class WorkerError(RuntimeError):
    """An env worker failed; the message carries the worker's own traceback where there is one."""


class WorkerDied(WorkerError):
    """A worker process exited (e.g. SIGKILL, a segfault in an env's C code) without answering."""


class WorkerTimeout(WorkerError, TimeoutError):
    """A worker did not answer within its timeout (a hung env); the message names the env."""


class EnvRaised(WorkerError):
    """An exception inside an env; the message ends with the worker's original traceback."""

    def __init__(self, message: str, remote_traceback: str = ""):
        super().__init__(message)
        self.remote_traceback = remote_traceback
