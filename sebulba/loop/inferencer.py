"""An inferencer: one env pool and one actor device, running inference cycles.

In async mode each inferencer runs in its own thread (`InferencerThread`); in sync mode the
learner's fetch middleware calls `run_cycle` directly, in a fixed order, for reproducibility.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import envs
from sebulba.agent import Agent
from sebulba.loop.cycle import CycleFunctions, host_env_step
from sebulba.loop.staging import Staging
from sebulba.sharding import LearnerSharding
from sebulba.types import EnvStep, Trajectory


class CycleResult(NamedTuple):
    """What an inferencer pushes onto the trajectory queue; arrays are on the learner devices."""

    initial_step_state: Any
    final_step_state: Any
    trajectory: Trajectory
    inferencer: int
    policy_version: int
    env_steps: int
    episode_returns: np.ndarray  # returns of episodes that ended this cycle
    episode_lengths: np.ndarray
    put_wait_s: float  # filled in by the thread: time blocked on a full queue


class Inferencer:
    def __init__(
        self,
        index: int,
        agent: Agent,
        cycle: CycleFunctions,
        device: jax.Device,
        make_pool: Callable[[], envs.EnvPool],
        sharding: LearnerSharding,
        key: jax.Array,
        donate: bool,
    ):
        self.index = index
        self.agent = agent
        self.cycle = cycle
        self.device = device
        self.sharding = sharding
        self.donate = donate
        self.pool = make_pool()
        self.num_envs = self.pool.num_envs
        self._key = key
        self._networks: Any = None
        self._version = -1
        self.step_state: Any = None
        self.env_step: EnvStep | None = None

    def _networks_for(self, version: int, networks: Any) -> Any:
        if version != self._version:
            self._networks = jax.device_put(networks, self.device)
            self._version = version
        return self._networks

    def _start(self, networks: Any) -> None:
        obs, info = self.pool.reset()
        n = self.num_envs
        self.env_step = host_env_step(obs, np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool), info["elapsed_step"])
        with jax.default_device(self.device):
            # A copy in distinct buffers: a user's step state may hold one array twice (e.g. zeros
            # for both LSTM states), and a buffer can be donated only once per call.
            self.step_state = self.cycle.copy(jax.device_put(self.agent.init_step_state(networks, n, self._key), self.device))
            self._running = (jnp.zeros(n, jnp.float32), jnp.zeros(n, jnp.int32))

    def _env_step(self, action: jax.Array) -> EnvStep:
        obs, reward, terminated, truncated, info = self.pool.step(np.asarray(action))
        return host_env_step(obs, reward, terminated, truncated, info["elapsed_step"])

    def run_cycle(self, version: int, networks: Any) -> CycleResult:
        """steps_per_cycle env steps with the given networks, then the results moved to the learner."""
        networks = self._networks_for(version, networks)
        if self.step_state is None:
            self._start(networks)
        c = self.cycle
        with jax.default_device(self.device):
            initial = c.copy(self.step_state)  # the cycle donates step_state; keep the start
            v, actor = jnp.int32(version), jnp.int32(self.index)
            if self.donate:
                buffers = c.new_buffers(networks, self.step_state, self.env_step)
                for t in range(c.steps):
                    action, self.step_state, buffers = c.step_and_record(networks, self.step_state, self.env_step, buffers, t)
                    self.env_step = self._env_step(action)
                traj, *self._running = c.finish(buffers, self.env_step, *self._running, v, actor)
            else:
                env_steps, outs = [], []
                for _ in range(c.steps):
                    out, self.step_state = c.step(networks, self.step_state, self.env_step)
                    env_steps.append(self.env_step)
                    outs.append(out)
                    self.env_step = self._env_step(out.action)
                traj, *self._running = c.stack(env_steps + [self.env_step], outs, *self._running, v, actor)
            final = c.copy(self.step_state)
        ep_ret = np.asarray(traj.episode_return)
        done = ~np.isnan(ep_ret)
        return CycleResult(
            self.agent.shard_step_state(initial, self.sharding),
            self.agent.shard_step_state(final, self.sharding),
            self.sharding.per_env(traj, axis=1),
            self.index,
            version,
            c.steps * self.num_envs,
            ep_ret[done],
            np.asarray(traj.episode_length)[done],
            0.0,
        )

    def close(self) -> None:
        self.pool.close()


class InferencerThread(threading.Thread):
    """Async mode: run cycles with the latest staged networks and push results to the queue
    until `stop` is set. Any exception is handed to `on_error` (the loop re-raises it)."""

    def __init__(self, inferencer: Inferencer, staging: Staging, put: Callable[[CycleResult], float],
                 stop: threading.Event, on_error: Callable[[int, BaseException], None]):
        super().__init__(name=f"inferencer-{inferencer.index}", daemon=True)
        self.inferencer = inferencer
        self.staging = staging
        self.put = put
        self.stop = stop
        self.on_error = on_error
        self.wait_s = 0.0  # time spent blocked on a full queue

    def run(self) -> None:
        inf = self.inferencer
        try:
            while not self.stop.is_set():
                version, networks = self.staging.latest(inf.device)
                self.wait_s += self.put(inf.run_cycle(version, networks))
        except BaseException as e:  # noqa: BLE001 - everything reaches the main thread
            self.on_error(inf.index, e)
