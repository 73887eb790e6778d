"""Compiling ahead: the inference cycle's act and the learner's update compile while the env pools
build, instead of one after the other once the run starts.

ALE builds its envs one after another while holding the GIL (0.07-0.25 s per env: 15 s and more
for a 64-env pool on the GPU host), while XLA compiles without it. Tracing needs the GIL, so the
loop's thread lowers both functions first, on arguments made as the first cycle makes them (zero
observations of the pools' spec, no pool needed), and a thread per function compiles them into
JAX's cache while the pools build. The real calls then find them compiled; `tests/test_precompile.py`
checks that they do.
"""

from __future__ import annotations

import threading

import jax
import numpy as np

import envs
from sebulba import observations
from sebulba.agent import Agent
from sebulba.loop import framestack
from sebulba.loop.cycle import CycleFunctions
from sebulba.loop.inferencer import (committed_buffers, first_env_step, initial_running, initial_step_state,
                                     merge_lanes, to_learner)
from sebulba.loop.learner import Learner
from sebulba.sharding import LearnerSharding, local_copy


class Compiling:
    """Compiles lowered functions, one thread each; `join` waits and re-raises the first failure."""

    def __init__(self, lowered: list[jax.stages.Lowered]):
        self._errors: list[BaseException] = []
        self._threads = [threading.Thread(target=self._compile, args=(f,), name="sebulba-compile", daemon=True)
                         for f in lowered]
        for t in self._threads:
            t.start()

    def _compile(self, lowered: jax.stages.Lowered) -> None:
        try:
            lowered.compile()
        except BaseException as e:  # noqa: BLE001 - re-raised by join
            self._errors.append(e)

    def join(self, raise_errors: bool = True) -> None:
        for t in self._threads:
            t.join()
        if raise_errors and self._errors:
            raise self._errors[0]


def lower_first_cycle(agent: Agent, cycle: CycleFunctions, learner: Learner, sharding: LearnerSharding,
                      pool_spec: envs.EnvSpec, devices: list[jax.Device], lanes: int, lane_envs: int,
                      donate: bool) -> list[jax.stages.Lowered]:
    """The act of each actor device and the learner's update, lowered for the first cycle's
    arguments. Runs the cycle's small bookkeeping functions on zeros to get the trajectory the
    learner will see (they compile here, as the first cycle would have compiled them)."""
    plan = cycle.stack_plan
    obs = observations.zeros(pool_spec.observation_space, (lane_envs,), as_pool=True)
    zeros = np.zeros(lane_envs, np.int32)
    restarts = None if plan is None else framestack.Restarts(plan.episodic_life)
    lowered, learner_inputs = [], None
    for device in devices:
        with jax.default_device(device):
            networks = local_copy(learner.networks, device)
            step_state = initial_step_state(agent, cycle, networks, lane_envs, jax.random.key(0), device)
            stacks = jax.device_put(() if plan is None else plan.empty(lane_envs), device)
            env_step = first_env_step(obs, {"lives": zeros, "elapsed_step": zeros}, restarts)
            buffers = committed_buffers(cycle, device, networks, step_state, stacks, env_step)
            if donate:
                lowered.append(cycle.step_and_record.lower(networks, step_state, stacks, env_step, buffers, 0))
            else:
                lowered.append(cycle.step.lower(networks, step_state, stacks, env_step))
            if learner_inputs is None:
                initial, history = cycle.cycle_start(step_state, stacks)
                running = initial_running(lane_envs, device)
                traj, *_ = cycle.finish(buffers, env_step, *running, np.int32(0), np.int32(0), history)
                traj, initial, final = merge_lanes(cycle, lane_envs, [traj] * lanes, [initial] * lanes, [initial] * lanes)
                learner_inputs = to_learner(agent, sharding, initial, final, traj)
    lowered += learner.lower_updates(*learner_inputs)
    return lowered
