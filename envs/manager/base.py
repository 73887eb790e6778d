"""BaseEnvManager: DI-engine's env manager API (di-engine-docs.readthedocs.io) over runners, with the env states,
auto-reset, episode counts, seeding and fault recovery. Its envs run in this process, one after
the other; the subprocess managers (envs/manager/subprocess.py) run each env in a worker process.

Faults (an env's exception; in a worker also its death or a hang past step_timeout /
reset_timeout) count per env since its last successful step. Within max_retry the env is
recovered: a dead or hung worker, or any fault with retry_type="renew", is replaced by a fresh
env from its factory, and the env is reset. A fault in a step ends that env's episode
(timestep done, info truncated + abnormal); a death is then silent, while a hang raises
TimeoutError and an exception is re-raised (the original traceback) once every other answer of
the call has been processed; the error's `timesteps` holds the call's other results. A fault in a
reset is retried silently. Past max_retry the env goes to ERROR (a RuntimeWarning says why,
`env_errors` keeps the message) and the others go on.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import wait
from typing import Any

from envs.closing import ClosedOnExit
from envs.manager.config import ManagerConfig
from envs.manager.types import BaseEnvTimestep, EnvState
from envs.process.errors import WorkerDied, WorkerError, WorkerTimeout


class BaseEnvManager(ClosedOnExit):
    """Runs `len(env_fn)` envs, one per factory, serially in this process."""

    _async = False
    _async_keys = False

    def __init__(self, env_fn: Sequence[Callable[[], Any]], cfg: Mapping[str, Any] | None = None):
        name = type(self).__name__
        if isinstance(env_fn, (str, bytes)) or not isinstance(env_fn, Sequence) or len(env_fn) == 0:
            raise ValueError(f"{name}: env_fn must be a non-empty list of callables that return an env, got {env_fn!r}")
        for i, fn in enumerate(env_fn):
            if not callable(fn):
                raise ValueError(f"{name}: env_fn[{i}] must be a callable returning an env, got {type(fn).__name__}")
        self._cfg = ManagerConfig.from_cfg(cfg, name, self._async_keys)
        self._env_fn = list(env_fn)
        self._env_num = len(env_fn)
        self._closed = True
        self._states = [EnvState.VOID] * self._env_num
        self._runners: list[Any] = []
        self._seeds: dict[int, int] = {}
        self._pending_seed: set[int] = set()
        self._dynamic_seed = True
        self._reset_param: dict[int, dict[str, Any]] = {}
        self._clear_run_state()

    def _clear_run_state(self) -> None:
        n = self._env_num
        self._ready: dict[int, Any] = {}  # envs waiting for a command -> their latest obs
        self._last_obs: dict[int, Any] = {}
        self._inflight: dict[int, str] = {}  # env -> "reset" | "step"
        self._deadline: dict[int, float] = {}
        self._timesteps: dict[int, BaseEnvTimestep] = {}  # answered, not yet returned by step()
        self._raised: list[BaseException] = []
        self._episodes = [0] * n
        self._failures = [0] * n
        self._restarts = [0] * n
        self._errors: dict[int, str] = {}

    # ------------------------------------------------------------------ properties
    @property
    def env_num(self) -> int:
        return self._env_num

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def env_states(self) -> list[EnvState]:
        return list(self._states)

    @property
    def env_errors(self) -> dict[int, str]:
        """Why each env in ERROR was given up."""
        return dict(self._errors)

    @property
    def ready_obs(self) -> dict[int, Any]:
        """env id -> latest obs of the envs waiting for a command (safe to step). When none is
        but some are running, waits until one is."""
        if not self._closed and self._inflight:
            self._poll(time.monotonic())  # take what has arrived, without waiting
            self._pump(lambda: bool(self._ready))
        return dict(self._ready)

    @property
    def done(self) -> bool:
        """Whether every env is finished (DONE or ERROR)."""
        return all(s in (EnvState.DONE, EnvState.ERROR) for s in self._states)

    @property
    def active_env(self) -> list[int]:
        """Envs not finished: running, resetting or waiting for a command."""
        return [i for i, s in enumerate(self._states) if s in (EnvState.RUN, EnvState.RESET)]

    @property
    def method_name_list(self) -> list[str]:
        return ["reset", "step", "seed", "close"]

    def worker_pid(self, env_id: int) -> int | None:
        """The pid of env_id's worker process (None in-process or when not running)."""
        self._check_id(env_id, "env_id")
        return self._runners[env_id].pid() if self._runners else None

    # ------------------------------------------------------------------ API
    def launch(self, reset_param: Mapping[int, Mapping[str, Any] | None] | None = None) -> None:
        """Build every env (start the workers) and reset them."""
        if not self._closed:
            raise RuntimeError(f"launch() called on a running {type(self).__name__}; close() it first")
        params = self._check_reset_param(reset_param)
        self._clear_run_state()
        self._runners = [self._make_runner(i) for i in range(self._env_num)]
        self._closed = False
        try:
            start_errors: dict[int, Exception] = {}
            for i, r in enumerate(self._runners):  # start every worker, then wait for them
                try:
                    r.start()
                except Exception as e:  # an in-process factory that raises is a fault like any other
                    start_errors[i] = e
            for i, r in enumerate(self._runners):
                try:
                    if i in start_errors:
                        raise start_errors[i]
                    r.await_ready()
                    self._states[i] = EnvState.INIT
                except Exception as e:
                    self._fault(i, "start", e)
            if not all(s == EnvState.ERROR for s in self._states):
                self._reset(params)
            if all(s == EnvState.ERROR for s in self._states):
                raise WorkerError(f"{type(self).__name__}: no env could be started and reset: {self._errors[0]}")
        except BaseException:
            self.close()
            raise

    def reset(self, reset_param: Mapping[int, Mapping[str, Any] | None] | None = None) -> None:
        """Reset every env (None: with its last reset kwargs), or the env ids in reset_param, each
        with its kwargs for env.reset (e.g. {"options": ...}). Results appear in ready_obs."""
        self._check_open("reset")
        self._reset(self._check_reset_param(reset_param))

    def step(self, actions: Mapping[int, Any]) -> dict[int, BaseEnvTimestep]:
        """Step the envs named by actions (env id -> action); returns env id -> timestep."""
        self._check_open("step")
        if not isinstance(actions, Mapping):
            raise ValueError(f"actions must be a dict of env id -> action, got {type(actions).__name__}")
        for i in actions:
            self._check_id(i, "actions key")
            if i not in self._ready:
                state = self._states[i].name
                why = f"; {self._errors[i]}" if i in self._errors else ""
                raise ValueError(
                    f"env {i} is not ready (state {state}{', still running' if i in self._inflight else ''}{why}); "
                    "step only env ids from ready_obs"
                )
        for i, a in actions.items():
            del self._ready[i]
            auto = self._reset_kwargs(i) if self._cfg.auto_reset and self._episodes[i] + 1 < self._cfg.episode_num else None
            self._send(i, "step", lambda r, a=a, auto=auto: r.send_step(a, auto))
        self._wait_step(set(actions))
        out, self._timesteps = self._timesteps, {}
        if self._raised:
            err, self._raised = self._raised[0], []
            err.timesteps = out
            raise err
        return out

    def seed(self, seed: int | Sequence[int] | Mapping[int, int], dynamic_seed: bool | None = None) -> None:
        """Seed envs for their next reset: an int (env i gets seed + i), a list (one per env) or a
        dict (env id -> seed). dynamic_seed=False reuses the seed at every reset (the same episode
        each time); True (default) seeds once, later episodes follow the env's own generator."""
        if isinstance(seed, Mapping):
            seeds = dict(seed)
        elif isinstance(seed, Sequence) and not isinstance(seed, (str, bytes)):
            if len(seed) != self._env_num:
                raise ValueError(f"seed list must have env_num={self._env_num} entries, got {len(seed)}")
            seeds = dict(enumerate(seed))
        else:
            seeds = {i: seed + i if _is_int(seed) else seed for i in range(self._env_num)}
        for i, s in seeds.items():
            self._check_id(i, "seed key")
            if not _is_int(s) or s < 0:
                raise ValueError(f"seed for env {i} must be an int >= 0, got {s!r}")
        if dynamic_seed is not None:
            if not isinstance(dynamic_seed, bool):
                raise ValueError(f"dynamic_seed must be a bool or None, got {dynamic_seed!r}")
            self._dynamic_seed = dynamic_seed
        self._seeds.update({i: int(s) for i, s in seeds.items()})
        self._pending_seed.update(seeds)

    def close(self) -> None:
        """Stop every env (workers exit) and free their resources. Idempotent; launch() again to reuse."""
        if self._closed:
            return
        self._closed = True
        for i, r in enumerate(self._runners):
            try:
                if i in self._inflight:
                    r.kill()  # busy (maybe hung): it would not read a close request in time
                r.close()
            except Exception:
                pass
        self._runners = []
        self._states = [EnvState.VOID] * self._env_num
        self._ready, self._inflight, self._timesteps = {}, {}, {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env_num={self._env_num}, closed={self._closed})"

    # ------------------------------------------------------------------ internals
    def _make_runner(self, i: int) -> Any:
        from envs.manager.runners import InProcessRunner

        return InProcessRunner(i, self._env_fn[i])

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"{what}() called on a closed {type(self).__name__}; call launch() first")

    def _check_id(self, i: Any, what: str) -> None:
        if not _is_int(i) or not 0 <= i < self._env_num:
            raise ValueError(f"{what} {i!r} is not an env id in [0, {self._env_num})")

    def _check_reset_param(self, reset_param: Any) -> dict[int, dict[str, Any]] | None:
        if reset_param is None:
            return None
        if not isinstance(reset_param, Mapping):
            raise ValueError(f"reset_param must be a dict of env id -> reset kwargs, got {type(reset_param).__name__}")
        out = {}
        for i, kw in reset_param.items():
            self._check_id(i, "reset_param key")
            if kw is not None and not isinstance(kw, Mapping):
                raise ValueError(f"reset_param[{i}] must be a dict of env.reset kwargs or None, got {kw!r}")
            out[i] = dict(kw or {})
        return out

    def _reset(self, params: dict[int, dict[str, Any]] | None) -> None:
        if params is None:
            ids = [i for i in range(self._env_num) if self._states[i] != EnvState.ERROR]
            self._episodes = [0] * self._env_num
        else:
            for i in params:
                if self._states[i] == EnvState.ERROR:
                    raise ValueError(f"env {i} is in ERROR and cannot be reset: {self._errors[i]}")
            self._reset_param.update(params)
            ids = list(params)
        busy = set(ids)
        self._pump(lambda: not busy & self._inflight.keys())  # let running commands finish first
        for i in ids:
            if self._states[i] == EnvState.ERROR:
                continue
            self._ready.pop(i, None)
            self._send(i, "reset", lambda r, kw=self._reset_kwargs(i): r.send_reset(kw))
        if not self._async:
            self._pump(lambda: not busy & self._inflight.keys())

    def _wait_step(self, ids: set[int]) -> None:
        self._pump(lambda: not ids & self._inflight.keys())

    def _reset_kwargs(self, i: int) -> dict[str, Any]:
        kw = dict(self._reset_param.get(i, {}))
        if i in self._seeds and (i in self._pending_seed or not self._dynamic_seed):
            kw["seed"] = self._seeds[i]
        return kw

    def _send(self, i: int, op: str, send: Callable[[Any], None]) -> None:
        self._states[i] = EnvState.RESET if op == "reset" else EnvState.RUN
        timeout = self._cfg.reset_timeout if op == "reset" else self._cfg.step_timeout
        self._inflight[i] = op
        self._deadline[i] = math.inf if timeout is None else time.monotonic() + timeout
        send(self._runners[i])

    def _pump(self, until: Callable[[], bool], max_wait: float | None = None) -> None:
        """Process answers until `until()` holds, nothing is running, or max_wait passes."""
        end = None if max_wait is None else time.monotonic() + max_wait
        while not until() and self._inflight:
            if end is not None and time.monotonic() >= end:
                return
            self._poll(end)

    def _poll(self, end: float | None) -> None:
        """Process the answers available, waiting for one (until the earliest deadline or `end`)."""
        runners = self._runners
        ready = [i for i in self._inflight if runners[i].immediate]
        if not ready:
            handles: dict[Any, int] = {}
            for i in self._inflight:
                for h in runners[i].handles():
                    handles[h] = i
            first = min([self._deadline[i] for i in self._inflight] + ([end] if end is not None else []))
            timeout = None if first == math.inf else max(0.0, first - time.monotonic())
            ready = sorted({handles[h] for h in wait(list(handles), timeout)})
            now = time.monotonic()  # checked on every call: others' answers must not hide a hang
            for i in [i for i in self._inflight if self._deadline[i] <= now and i not in ready]:
                op = self._inflight[i]
                limit = self._cfg.reset_timeout if op == "reset" else self._cfg.step_timeout
                err = WorkerTimeout(
                    f"env {i}: {op} did not finish within {op}_timeout={limit:g} s "
                    f"({runners[i].describe()}); the worker was killed"
                )
                runners[i].kill()
                self._fault(i, op, err)
        for i in ready:
            op = self._inflight[i]
            try:
                answer = runners[i].recv()
            except Exception as e:
                self._fault(i, op, e)
                continue
            del self._inflight[i]
            if op == "reset":
                self._on_reset(i, answer)
            else:
                self._on_step(i, answer)

    def _on_reset(self, i: int, answer: tuple) -> None:
        obs, _info = answer
        if self._dynamic_seed:
            self._pending_seed.discard(i)
        self._states[i] = EnvState.RUN
        self._ready[i] = self._last_obs[i] = obs

    def _on_step(self, i: int, answer: tuple) -> None:
        obs, reward, term, trunc, info, reset = answer
        self._failures[i] = 0
        info = dict(info)
        info["terminated"], info["truncated"] = term, trunc
        done = term or trunc
        self._timesteps[i] = BaseEnvTimestep(obs, reward, done, info)
        self._last_obs[i] = obs
        if not done:
            self._ready[i] = obs
            return
        self._episodes[i] += 1
        if reset is None:
            self._states[i] = EnvState.DONE
        else:
            self._on_reset(i, reset)

    def _fault(self, i: int, op: str, err: BaseException) -> None:
        """Recover env i from a fault in op ("start", "reset", "step"), or give it up."""
        self._inflight.pop(i, None)
        if op == "step":
            if not isinstance(err, WorkerDied):
                self._raised.append(err)  # re-raised once the call's other answers are in
            self._episodes[i] += 1
        renew = op == "start" or self._cfg.retry_type == "renew" or isinstance(err, (WorkerDied, WorkerTimeout))
        while True:
            self._failures[i] += 1
            if self._failures[i] > self._cfg.max_retry:
                self._give_up(i, op, err)
                return
            if self._cfg.retry_waiting_time:
                time.sleep(self._cfg.retry_waiting_time)
            if not renew:
                break
            try:
                self._runners[i].renew()
                break
            except Exception as e:  # the fresh worker failed too: another fault
                err = e
        if renew:
            self._restarts[i] += 1
            if i in self._seeds and self._dynamic_seed:  # a fresh env: reseed, deterministically
                self._seeds[i] += self._env_num
                self._pending_seed.add(i)
        if op == "start":
            self._states[i] = EnvState.INIT  # launch() resets it
            return
        if op == "step":
            self._timesteps[i] = _abnormal(self._last_obs.get(i), fault=str(err))
            if not (self._cfg.auto_reset and self._episodes[i] < self._cfg.episode_num):
                self._states[i] = EnvState.DONE
                return
        self._send(i, "reset", lambda r, kw=self._reset_kwargs(i): r.send_reset(kw))

    def _give_up(self, i: int, op: str, err: BaseException) -> None:
        msg = (
            f"env {i} failed {self._failures[i]} times in a row (max_retry={self._cfg.max_retry}) and is "
            f"given up (state ERROR); last fault in {op}: {err}"
        )
        self._errors[i] = msg
        self._states[i] = EnvState.ERROR
        self._ready.pop(i, None)
        self._runners[i].kill()
        warnings.warn(msg, RuntimeWarning, stacklevel=4)
        if op == "step":
            self._timesteps[i] = _abnormal(self._last_obs.get(i), error=msg)


def _abnormal(obs: Any, **why: str) -> BaseEnvTimestep:
    """The timestep of a step that faulted: the episode ends truncated, reward 0, the last obs."""
    return BaseEnvTimestep(obs, 0.0, True, {"terminated": False, "truncated": True, "abnormal": True, **why})


def _is_int(x: Any) -> bool:
    return not isinstance(x, bool) and hasattr(x, "__index__")
