"""An inferencer: one env pool and one actor device, running inference cycles.

In async mode each inferencer runs in its own thread (`InferencerThread`); in sync mode the
learner's fetch middleware calls `run_cycle` directly, in a fixed order, for reproducibility.
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
from sebulba.loop.record import HostStep
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


def merge_lanes(cycle: CycleFunctions, lane_envs: int, trajs: list, initial: list, final: list) -> tuple[Trajectory, Any, Any]:
    """A cycle's per-lane trajectories and step states as one of all the inferencer's envs."""
    if len(trajs) == 1:
        return trajs[0], initial[0], final[0]
    return (cycle.concat_lanes(trajs, 1, lane_envs), cycle.concat_lanes(initial, 0, lane_envs),
            cycle.concat_lanes(final, 0, lane_envs))


def to_learner(agent: Agent, sharding: LearnerSharding, initial: Any, final: Any, traj: Trajectory) -> tuple[Any, Any, Trajectory]:
    """A cycle's (initial step state, final step state, trajectory) on the learner devices."""
    return agent.shard_step_state(initial, sharding), agent.shard_step_state(final, sharding), sharding.per_env(traj, axis=1)


def initial_step_state(agent: Agent, cycle: CycleFunctions, networks: Any, num_envs: int, key: jax.Array,
                       device: jax.Device) -> Any:
    """The agent's initial step state on `device`, carried (`CycleFunctions.carry`: keys as key
    data, distinct buffers: a user's step state may hold one array twice, e.g. zeros for both
    LSTM states, and a buffer can be donated only once per call)."""
    return cycle.carry(jax.device_put(agent.init_step_state(networks, num_envs, key), device))


def committed_buffers(cycle: CycleFunctions, device: jax.Device, networks: Any, step_state: Any, stacks: Any,
                      env_step: HostStep) -> Any:
    """A cycle's zeroed trajectory buffers, committed to the actor device as the act's outputs
    are, so that every step of the cycle calls one compiled act."""
    return jax.device_put(cycle.new_buffers(networks, step_state, stacks, env_step), device)


def initial_running(num_envs: int, device: jax.Device) -> tuple[jax.Array, jax.Array]:
    """Running episode returns and lengths at the start, committed to the actor device as the
    cycle's outputs are, so that every cycle calls one compiled `finish`."""
    return jax.device_put((np.zeros(num_envs, np.float32), np.zeros(num_envs, np.int32)), device)


def first_env_step(obs: Any, info: dict, restarts: framestack.Restarts | None) -> HostStep:
    """The env step of a pool's reset, as the first act sees it."""
    n = len(info["elapsed_step"])
    if restarts is not None:
        obs = framestack.Frames(obs, restarts.reset(info["lives"]))
    return host_env_step(obs, np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool), info["elapsed_step"])


class Lane:
    """A sync env pool of some of an inferencer's envs, with their step state, episode sums and,
    stacking on the device, their frame stacks there.
    Its envs step (send) while the inferencer acts for its other lanes, and are received
    (recv) just before this lane acts again."""

    def __init__(self, pool: envs.EnvPool, stack_plan: framestack.StackPlan | None):
        self.pool = pool
        self.stack_plan = stack_plan
        self.restarts = None if stack_plan is None else framestack.Restarts(stack_plan.episodic_life)
        self.step_state: Any = None  # carried (`CycleFunctions.carry`)
        self.stacks: Any = ()  # with stacking on the device: the envs' frame stacks there
        self.env_step: HostStep | None = None
        self.running: tuple[jax.Array, jax.Array] | None = None
        self.in_flight = False

    def reset(self) -> None:
        obs, info = self.pool.reset()
        if self.stack_plan is not None:
            self.stacks = self.stack_plan.empty(len(obs))
        self.env_step = first_env_step(obs, info, self.restarts)

    def send(self, action: jax.Array) -> None:
        self.pool.send(np.asarray(action))
        self.in_flight = True

    def recv(self) -> None:
        obs, reward, terminated, truncated, info = self.pool.recv()
        if self.restarts is not None:
            restart = self.restarts.step(info["elapsed_step"] == 0, terminated, truncated, info["lives"])
            obs = framestack.Frames(obs, restart)
        self.env_step = host_env_step(obs, reward, terminated, truncated, info["elapsed_step"])
        self.in_flight = False


class Inferencer:
    """One actor device and `len(make_pools)` lanes of envs. Per env step, each lane in turn
    receives its envs' results, acts (one jitted, donated call) and sends the actions, so with
    two lanes one lane's envs step while the other's actions are inferred (seed 000's
    overlapped send/recv). A cycle's lanes are concatenated along the env axis: the learner
    sees one trajectory of all the inferencer's envs."""

    def __init__(
        self,
        index: int,
        agent: Agent,
        cycle: CycleFunctions,
        device: jax.Device,
        make_pools: list[Callable[[], envs.EnvPool]],
        sharding: LearnerSharding,
        key: jax.Array,
        donate: bool,
    ):
        """make_pools: the lanes' pools (single frames when cycle.stack_plan stacks on the device)."""
        self.index = index
        self.agent = agent
        self.cycle = cycle
        self.device = device
        self.sharding = sharding
        self.donate = donate
        self.lanes: list[Lane] = []
        try:
            for make_pool in make_pools:
                self.lanes.append(Lane(make_pool(), cycle.stack_plan))
        except BaseException:
            self.close()
            raise
        self.lane_envs = self.lanes[0].pool.num_envs
        self.num_envs = self.lane_envs * len(self.lanes)
        self._keys = [key] if len(self.lanes) == 1 else list(jax.random.split(key, len(self.lanes)))
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
        n = self.lane_envs
        with jax.default_device(self.device):
            for lane, key in zip(self.lanes, self._keys):
                lane.reset()
                lane.stacks = jax.device_put(lane.stacks, self.device)
                lane.step_state = initial_step_state(self.agent, self.cycle, networks, n, key, self.device)
                lane.running = initial_running(n, self.device)
        self._started = True

    @property
    def started(self) -> bool:
        return self._started

    def start(self, version: int, networks: Any) -> None:
        """Reset the pools and build the step states (run_cycle does it on first use)."""
        if not self._started:
            self._start(self._networks_for(version, networks))

    def run_cycle(self, version: int, networks: Any) -> CycleResult:
        """steps_per_cycle env steps with the given networks, then the results moved to the learner."""
        networks = self._networks_for(version, networks)
        if not self._started:
            self._start(networks)
        c, lanes = self.cycle, self.lanes
        if self._act_networks is None:
            first = lanes[0]
            self._act_networks = c.act_networks(networks, first.step_state, first.stacks, first.env_step)
        with jax.default_device(self.device):
            # The cycle donates step_state: keep a copy of the start (and the frames before it).
            initial, histories = map(list, zip(*[c.cycle_start(lane.step_state, lane.stacks) for lane in lanes]))
            v, actor = np.int32(version), np.int32(self.index)  # numpy: no eager JAX op per cycle
            trajs = []
            if self.donate:
                buffers = [committed_buffers(c, self.device, networks, lane.step_state, lane.stacks, lane.env_step)
                           for lane in lanes]
                for t in range(c.steps):
                    for k, lane in enumerate(lanes):
                        if lane.in_flight:
                            lane.recv()
                        action, lane.step_state, lane.stacks, buffers[k] = c.step_and_record(
                            self._act_networks, lane.step_state, lane.stacks, lane.env_step, buffers[k], t)
                        lane.send(action)
                for k, lane in enumerate(lanes):
                    lane.recv()
                    traj, *lane.running = c.finish(buffers[k], lane.env_step, *lane.running, v, actor, histories[k])
                    trajs.append(traj)
            else:
                env_steps, outs = [[] for _ in lanes], [[] for _ in lanes]
                for _ in range(c.steps):
                    for k, lane in enumerate(lanes):
                        if lane.in_flight:
                            lane.recv()
                        out, lane.step_state, lane.stacks = c.step(self._act_networks, lane.step_state, lane.stacks,
                                                                   lane.env_step)
                        env_steps[k].append(lane.env_step)
                        outs[k].append(out)
                        lane.send(out.action)
                for k, lane in enumerate(lanes):
                    lane.recv()
                    traj, *lane.running = c.stack(env_steps[k] + [lane.env_step], outs[k], *lane.running, v, actor,
                                                  histories[k])
                    trajs.append(traj)
            final = [c.from_carry(lane.step_state) for lane in lanes]
            trajs, initial, final = merge_lanes(c, self.lane_envs, trajs, initial, final)
        ep_ret, ep_len = jax.device_get((trajs.episode_return, trajs.episode_length))
        done = ~np.isnan(ep_ret)
        return CycleResult(
            *to_learner(self.agent, self.sharding, initial, final, trajs),
            self.index,
            version,
            c.steps * self.num_envs,
            ep_ret[done],
            ep_len[done],
            0.0,
        )

    def close(self) -> None:
        for lane in self.lanes:
            lane.pool.close()


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
