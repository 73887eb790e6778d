"""An inferencer: one env pool and one actor device, running inference cycles.

In async mode each inferencer runs in its own thread (`InferencerThread`); in sync mode the
learner's fetch middleware calls `run_cycle` directly, in a fixed order, for reproducibility.
`run_cycle` is also what compiles a cycle ahead of time (`sebulba.loop.precompile`): run once on
a pool of zeros, its own steps compile every function a real cycle calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

import envs
from sebulba.agent import Agent
from sebulba.loop import framestack
from sebulba.loop.act_networks import ActNetworks
from sebulba.loop.cycle import CycleFunctions, host_env_step
from sebulba.loop.trajectory_buffers import HostStep
from sebulba.loop.staging import Staging
from sebulba.sharding import LearnerSharding, local_copy
from sebulba.types import Trajectory


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
    episode_players: np.ndarray | None = None  # the player (row % P) of each episode; None: single-player


class Inferencer:
    """One actor device and one sync env pool. Per env step: one jitted, donated call that acts
    and records the step, then the actions go to the pool. Between cycles it holds its envs'
    cycle state: the carried step state, the last env step, the running episode sums and, when
    stacking on the device, the envs' frame stacks there (what a sync-mode checkpoint saves).

    A multi-player pool (P = pool.num_players > 1) is stepped as P rows per env (envs/players.py):
    the agent acts on num_envs x P rows, an env's players consecutive, and every row's action goes
    back in the pool's array form (a sync pool: every env, in env order)."""

    def __init__(
        self,
        index: int,
        agent: Agent,
        cycle: CycleFunctions,
        device: jax.Device,
        make_pool: Callable[[], envs.EnvPool],
        sharding: LearnerSharding,
        key: jax.Array,
    ):
        """make_pool: the inferencer's pool (single frames when cycle.stack_plan stacks on the device)."""
        self.index = index
        self.agent = agent
        self.cycle = cycle
        self.device = device
        self.sharding = sharding
        self.key = key  # of the initial step state
        self.pool = make_pool()
        self.num_envs = self.pool.num_envs
        self.num_players = self.pool.num_players
        self.num_rows = self.num_envs * self.num_players  # the agent's batch
        plan = cycle.stack_plan
        self.restarts = None if plan is None else framestack.Restarts(plan.episodic_life)
        self.step_state: Any = None  # carried (`CycleFunctions.carry`)
        self.stacks: Any = ()  # with stacking on the device: the envs' frame stacks there
        self.env_step: HostStep | None = None
        self.running: tuple[jax.Array, jax.Array] | None = None  # episode returns and lengths so far
        self._networks: Any = None
        self._act_networks: ActNetworks | None = None  # the act's form of _networks, made on first use
        self._version = -1
        self._started = False

    def _networks_for(self, version: int, networks: Any) -> Any:
        if version != self._version:
            self._networks = local_copy(networks, self.device)
            self._act_networks = None
            self._version = version
        return self._networks

    def _start(self, networks: Any) -> None:
        """Reset the pool; the initial step state (carried: keys as key data, distinct buffers: a
        user's step state may hold one array twice, e.g. zeros for both LSTM states, and a buffer
        can be donated only once per call), stacks and running sums, committed to the actor device
        as the cycle's outputs are, so that every cycle calls the same compiled functions."""
        n, plan = self.num_rows, self.cycle.stack_plan
        obs, info = self.pool.reset()
        if self.restarts is not None:
            obs = framestack.Frames(obs, self.restarts.reset(info["lives"]))
        self.env_step = host_env_step(obs, np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool),
                                      info["elapsed_step"])
        with jax.default_device(self.device):
            self.step_state = self.cycle.carry(
                jax.device_put(self.agent.init_step_state(networks, n, self.key), self.device))
            self.stacks = jax.device_put(() if plan is None else plan.empty(n), self.device)
            self.running = jax.device_put((np.zeros(n, np.float32), np.zeros(n, np.int32)), self.device)
        self._started = True

    def _send(self, action: jax.Array) -> None:
        self.pool.send(np.asarray(action))

    def _recv(self) -> None:
        obs, reward, terminated, truncated, info = self.pool.recv()
        if self.restarts is not None:
            restart = self.restarts.step(info["elapsed_step"] == 0, terminated, truncated, info["lives"])
            obs = framestack.Frames(obs, restart)
        self.env_step = host_env_step(obs, reward, terminated, truncated, info["elapsed_step"])

    @property
    def started(self) -> bool:
        return self._started

    def start(self, version: int, networks: Any) -> None:
        """Reset the pool and build the step state (run_cycle does it on first use)."""
        if not self._started:
            self._start(self._networks_for(version, networks))

    def prepare(self, version: int, networks: Any) -> None:
        """What a cycle with these networks needs first: the pool reset and the step state built
        (on first use), and the act's form of the networks (which traces the agent's step once)."""
        networks = self._networks_for(version, networks)
        if not self._started:
            self._start(networks)
        if self._act_networks is None:
            self._act_networks = self.cycle.act_networks(networks, self.step_state, self.stacks, self.env_step)

    def run_cycle(self, version: int, networks: Any) -> CycleResult:
        """steps_per_cycle env steps with the given networks, then the results moved to the learner."""
        self.prepare(version, networks)
        c = self.cycle
        with jax.default_device(self.device):
            # The cycle donates the step state: keep a copy of the start (and the frames before it).
            initial, history = c.cycle_start(self.step_state, self.stacks)
            buffers = jax.device_put(c.new_buffers(self._act_networks, self.step_state, self.stacks, self.env_step),
                                     self.device)  # committed as the act's outputs are: one compiled act
            for t in range(c.steps):
                if t:
                    self._recv()
                action, self.step_state, self.stacks, buffers = c.step_and_record(
                    self._act_networks, self.step_state, self.stacks, self.env_step, buffers, t)
                self._send(action)
            self._recv()
            v, actor = np.int32(version), np.int32(self.index)  # numpy: no eager JAX op per cycle
            traj, *self.running = c.finish(buffers, self.env_step, *self.running, v, actor, history)
            final = c.from_carry(self.step_state)
        ep_ret, ep_len = jax.device_get((traj.episode_return, traj.episode_length))
        done = ~np.isnan(ep_ret)
        players = None if self.num_players == 1 else np.nonzero(done)[1] % self.num_players
        shard = lambda step_state: self.agent.shard_step_state(step_state, self.sharding)  # noqa: E731
        return CycleResult(shard(initial), shard(final), self.sharding.trajectory(traj), self.index, version,
                           c.steps * self.num_envs, ep_ret[done], ep_len[done], 0.0, players)

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
