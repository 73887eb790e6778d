"""Compiling ahead: the inference cycle and the learner's update compile while the env pools
build, instead of one after the other once the run starts.

ALE builds its envs one after another while holding the GIL (0.07-0.25 s per env: 15 s and more
for a 64-env pool on the GPU host), while XLA compiles without it. So a thread runs one cycle of
each actor device with the inferencer's own code (`Inferencer.run_cycle`) on a `ZerosPool` (zero
observations of the pools' spec, no env built; the agent's step is traced before, in the loop's
thread, so a step that cannot be traced fails before any pool exists), which compiles every
function a real cycle calls,
then compiles the learner's update for that cycle's trajectory (`Learner.lower_updates`: lowered
and compiled, never run, so the learner's state is untouched). The real calls then find them
compiled; `tests/test_precompile.py` checks that they do.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import jax
import numpy as np

import envs
from sebulba import observations
from sebulba.agent import Agent
from sebulba.loop.cycle import CycleFunctions
from sebulba.loop.inferencer import Inferencer
from sebulba.loop.learner import Learner
from sebulba.sharding import LearnerSharding


class ZerosPool:
    """What a cycle compiled ahead steps: the pool interface an inferencer uses, with the shapes
    and dtypes of `spec`'s pools (a row per (env, player) in a multi-player one), returning zeros
    and ignoring actions."""

    def __init__(self, spec: envs.EnvSpec, num_envs: int):
        self.num_envs = num_envs
        self.num_players = spec.config["max_num_players"]
        rows = num_envs * self.num_players
        self._obs = observations.zeros(spec.observation_space, (rows,), as_pool=True)
        self._zeros = np.zeros(rows, np.int32)

    def reset(self) -> tuple[Any, dict]:
        return self._obs, {"elapsed_step": self._zeros, "lives": self._zeros}

    def send(self, action: Any) -> None:
        pass

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        n = len(self._zeros)
        return self._obs, np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool), self.reset()[1]

    def close(self) -> None:
        pass


class CompilingAhead:
    """A cycle of zeros on each actor device, then the learner's update compiled for its
    trajectory, in a thread. The agent's step is traced first, in the caller's thread, so a step
    that cannot be traced fails before any pool is built. `join` waits and re-raises the first
    failure."""

    def __init__(self, agent: Agent, cycle: CycleFunctions, learner: Learner, sharding: LearnerSharding,
                 pool_spec: envs.EnvSpec, devices: list[jax.Device], num_envs: int):
        self._error: BaseException | None = None
        self.seconds = 0.0  # the thread's time, once joined
        # Joined through an Event: a Thread.join interrupted by a signal handler's exception marks a
        # running thread stopped (CPython's bpo-45274 handling), so joining again would not wait.
        self._done = threading.Event()
        inferencers = [Inferencer(0, agent, cycle, device, lambda: ZerosPool(pool_spec, num_envs), sharding,
                                  jax.random.key(0)) for device in devices]
        for inferencer in inferencers:
            inferencer.prepare(learner.version, learner.networks)
        self._thread = threading.Thread(target=self._compile, args=(inferencers, learner), name="sebulba-compile",
                                        daemon=True)
        self._thread.start()

    def _compile(self, inferencers: list[Inferencer], learner: Learner) -> None:
        started = time.perf_counter()
        try:
            for inferencer in inferencers:
                result = inferencer.run_cycle(learner.version, learner.networks)
            for lowered in learner.lower_updates(result.initial_step_state, result.final_step_state, result.trajectory):
                lowered.compile()
        except BaseException as e:  # noqa: BLE001 - re-raised by join
            self._error = e
        finally:
            self.seconds = time.perf_counter() - started
            self._done.set()

    def join(self, raise_errors: bool = True) -> None:
        """Wait for the thread's work (again after an interrupted wait: the loop's cleanup waits
        for a compile in flight), then raise its failure if asked."""
        self._done.wait()
        if raise_errors and self._error is not None:
            raise self._error
