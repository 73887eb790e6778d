"""The subprocess env managers: each env in a worker process of its own (envs.process), built
from its pickled env_fn (cloudpickle: lambdas work), observations of at least
shared_memory_threshold bytes in shared memory, and the fault recovery of BaseEnvManager with
deaths and hangs detected too."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envs.manager.base import BaseEnvManager
from envs.manager.runners import SubprocessRunner
from envs.process.pickling import dumps_factory


class SyncSubprocessEnvManager(BaseEnvManager):
    """step() and reset() return once every env named has answered."""

    def __init__(self, env_fn: Sequence[Callable[[], Any]], cfg: Mapping[str, Any] | None = None):
        super().__init__(env_fn, cfg)
        self._factories = [dumps_factory(fn, f"env_fn[{i}]") for i, fn in enumerate(self._env_fn)]

    def _make_runner(self, i: int) -> SubprocessRunner:
        c = self._cfg
        return SubprocessRunner(i, self._factories[i], c.retry, c.shared_memory, c.shared_memory_threshold)

    def uses_shared_memory(self, env_id: int) -> bool:
        """Whether env_id's observations travel through shared memory (known once launched)."""
        self._check_id(env_id, "env_id")
        return bool(self._runners) and self._runners[env_id].uses_shared_memory


class AsyncSubprocessEnvManager(SyncSubprocessEnvManager):
    """reset() returns at once (the observations arrive in ready_obs); step() returns once
    `wait_num` envs answered, or `step_wait_timeout` seconds after the first answer: the others
    keep running and their timesteps come with a later step()."""

    _async = True
    _async_keys = True

    def _wait_step(self, ids: set[int]) -> None:
        running = sum(op == "step" for op in self._inflight.values())
        need = min(self._cfg.wait_num, len(self._timesteps) + running)
        start = time.monotonic()
        while len(self._timesteps) < need and self._inflight:
            if self._timesteps:
                left = self._cfg.step_wait_timeout - (time.monotonic() - start)
                if left <= 0:
                    return
                self._pump(lambda n=len(self._timesteps): len(self._timesteps) > n, max_wait=left)
            else:
                self._pump(lambda: bool(self._timesteps))
