"""Where a manager's env runs: in this process (BaseEnvManager) or in a worker process of its
own (the subprocess managers). Both take a command (send_*) and give its answer (recv), which
raises on a fault: the env's own exception in-process; WorkerDied / EnvRaised from a worker."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from envs.process import env_worker
from envs.process.env_host import IN_SHM, EnvHost
from envs.process.retry import RetryConfig
from envs.process.shm import Layout, SharedBuffers
from envs.process.supervisor import Worker


class InProcessRunner:
    """The env lives here; a command runs when its answer is asked for."""

    immediate = True

    def __init__(self, env_id: int, env_fn: Callable[[], Any]):
        self.env_id, self._fn = env_id, env_fn
        self._host: EnvHost | None = None
        self._call: Callable[[], Any] | None = None

    def start(self) -> None:
        self._host = EnvHost(self._fn())

    def await_ready(self) -> None:
        pass

    def renew(self) -> None:
        self.kill()
        self.start()

    def send_reset(self, kwargs: dict[str, Any]) -> None:
        self._call = lambda: self._host.reset(kwargs)

    def send_step(self, action: Any, auto_reset: dict[str, Any] | None) -> None:
        self._call = lambda: self._host.step(action, auto_reset)

    def recv(self) -> Any:
        call, self._call = self._call, None
        if self._host is None:
            raise RuntimeError(f"env {self.env_id} was not built")
        return call()

    def describe(self) -> str:
        return f"env {self.env_id}"

    def pid(self) -> None:
        return None

    def kill(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            try:
                host.close()
            except Exception:
                pass

    close = kill


class SubprocessRunner:
    """The env lives in a worker process (envs.process.env_worker)."""

    immediate = False

    def __init__(self, env_id: int, factory_bytes: bytes, retry: RetryConfig, shared_memory: bool, threshold: int):
        self.env_id = env_id
        self.worker = Worker(env_worker.env_worker_main, (factory_bytes,), f"envs-manager-{env_id}", f"env {env_id}'s worker")
        self._retry, self._shared_memory, self._threshold = retry, shared_memory, threshold
        self._shm: SharedBuffers | None = None
        self._slots: np.ndarray | None = None
        self._op = ""

    @property
    def uses_shared_memory(self) -> bool:
        return self._slots is not None

    def start(self) -> None:
        self.worker.start()

    def await_ready(self) -> None:
        space = pickle.loads(self.worker.await_ready(self._retry.connect_timeout))
        if not self._shared_memory or space is None:
            return
        shape, dtype = space
        if int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize < self._threshold:
            return
        if self._shm is None:
            self._shm = SharedBuffers(Layout.build([("obs", (2, *shape), dtype)]))
            self._slots = self._shm.arrays["obs"]
        self.worker.send(pickle.dumps((env_worker.ATTACH, (self._shm.layout, self._shm.name))))

    def renew(self) -> None:
        self.worker.kill()
        self.worker.ready_payload = b""
        self.start()
        self.await_ready()

    def send_reset(self, kwargs: dict[str, Any]) -> None:
        self._op = "reset"
        self.worker.send(pickle.dumps((env_worker.RESET, kwargs)))

    def send_step(self, action: Any, auto_reset: dict[str, Any] | None) -> None:
        self._op = "step"
        self.worker.send(pickle.dumps((env_worker.STEP, (action, auto_reset)), protocol=pickle.HIGHEST_PROTOCOL))

    def recv(self) -> Any:
        out = pickle.loads(self.worker.recv()[1:])
        if self._op == "reset":
            return self._obs(out[0], 1), out[1]
        obs, reward, term, trunc, info, reset = out
        if reset is not None:
            reset = (self._obs(reset[0], 1), reset[1])
        return self._obs(obs, 0), reward, term, trunc, info, reset

    def _obs(self, obs: Any, slot: int) -> Any:
        if isinstance(obs, str) and obs == IN_SHM:
            return self._slots[slot].copy()
        return obs

    def handles(self) -> list:
        return [self.worker.conn, self.worker.sentinel]

    def describe(self) -> str:
        return self.worker.describe()

    def pid(self) -> int | None:
        return self.worker.pid

    def kill(self) -> None:
        self.worker.kill()

    def close(self) -> None:
        self.worker.stop(pickle.dumps((env_worker.CLOSE, None)))
        if self._shm is not None:
            self._slots = None
            self._shm.close()
            self._shm = None
