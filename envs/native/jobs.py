"""The Python side of a kernel on envs/native/jobs.h's threads (the MuJoCo and Atari kernels).

A send queues (env ids, actions or None: a reset) and starts a kernel job at once if fewer than
IN_FLIGHT are in flight; sends made while that many are in flight wait, and go as one merged job
when the oldest is collected. `collect` hands back one job's results at a time, oldest first, so
batches come back in the order they were sent. Each job size has IN_FLIGHT + 1 sets of buffers,
used in turn: jobs step while the last one's results are read.
"""

from __future__ import annotations

import abc
import collections
from typing import Any

import numpy as np

from envs.ready import Chunk

IN_FLIGHT = 2  # jobs a kernel steps at once (JOB_SLOTS of envs/native/jobs.h)


class KernelJobs(abc.ABC):
    """Mixed into a backend (before `Backend`), which calls `_init_jobs()` and gives the hooks."""

    def _init_jobs(self) -> None:
        self._jobs: dict[int, collections.deque[Any]] = {}  # the kernel's buffers by job size
        self._in_flight: collections.deque[tuple[int, Any]] = collections.deque()  # (the kernel's number, job), oldest first
        self._queued: list[tuple[np.ndarray | None, np.ndarray | None]] = []  # (ids, action or None: reset)

    # ------------------------------------------------------------------ hooks
    @abc.abstractmethod
    def _new_job(self, n: int) -> Any:
        """Buffers for a job of n envs."""

    @abc.abstractmethod
    def _start(self) -> None:
        """Merges self._queued (taken, emptied) into one job, starts it, appends (number, job) to _in_flight."""

    @abc.abstractmethod
    def _job_done(self, number: int) -> bool:
        """Whether the kernel's workers finished job `number`."""

    @abc.abstractmethod
    def _wait_job(self, number: int) -> None:
        """Blocks until job `number` is done (the caller stepping envs no worker took); raises if an env failed."""

    @abc.abstractmethod
    def _finish(self, job: Any) -> Chunk:
        """The results of a finished job."""

    # ------------------------------------------------------------------ the backend's step interface
    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        # the pool sends no env in flight, so a send starts at once beside the job in flight; later
        # ones wait, merged
        self._queued.append((ids, None if reset else action))
        if len(self._in_flight) < IN_FLIGHT:
            self._start()

    def collect(self, block: bool) -> list[Chunk]:
        if not self._in_flight:
            if not self._queued:
                return []
            self._start()
        number, job = self._in_flight[0]
        if not block and not self._job_done(number):
            return []
        self._in_flight.popleft()
        self._wait_job(number)
        if self._queued:
            self._start()  # the next sends step while this job's results are made (other buffers)
        return [self._finish(job)]

    def _buffers(self, n: int) -> Any:
        """The kernel's arrays for jobs of n envs, made once per n; IN_FLIGHT + 1 sets, used in turn."""
        ring = self._jobs.get(n)
        if ring is None:
            ring = self._jobs[n] = collections.deque(self._new_job(n) for _ in range(IN_FLIGHT + 1))
        ring.rotate(1)
        return ring[0]

    def _wait_in_flight(self) -> None:
        """Until the kernel steps no env (the jobs' results stay to be collected)."""
        for number, _ in self._in_flight:
            self._wait_job(number)
