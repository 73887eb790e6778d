"""The inference cycle's compiled functions: one jitted call per env step, with all bookkeeping
(stacking the trajectory) done in place on donated buffers.

The act takes the networks as the leaves it uses (`ActNetworks`, `sebulba.loop.act_networks`)
and a `HostStep`, and records into `Buffers` (`sebulba.loop.trajectory_buffers`): few arrays per call, each of
which costs a jitted call microseconds on the CPU. Between steps the step state is carried with
typed PRNG keys as their raw key data (`CycleFunctions.carry`, `sebulba.keys`): a typed key costs
each call Python work to flatten and rebuild. The inferencer (`sebulba.loop.inferencer`) is the
one caller: it runs a cycle, and compiles one ahead on zeros, through the same code.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sebulba import keys
from sebulba.agent import Agent
from sebulba.episodes import episode_stats
from sebulba.loop import framestack, trajectory_buffers
from sebulba.loop.act_networks import ActNetworks, used_leaves
from sebulba.loop.trajectory_buffers import Buffers, HostStep, RecordLayout, env_step_of
from sebulba.types import ActorOutput, EnvStep, Trajectory


class CycleFunctions:
    """Compiled per-step and per-cycle functions for one agent and one cycle length. The step
    function takes and returns the step state carried (`carry`); the per-cycle ones give the
    agent's form (`cycle_start`, `from_carry`)."""

    def __init__(self, agent: Agent, steps: int, stack_plan: framestack.StackPlan | None = None):
        self.steps = steps
        self.stack_plan = stack_plan
        # How the step state's typed PRNG keys are carried as key data; set once by `carry`
        # (None before: the step state is taken as it is).
        self.carried: keys.KeyData | None = None
        self._used: dict[Any, tuple[bool, ...]] = {}  # by the act's abstract arguments: its network leaves used

        def typed(step_state):
            """The agent's step state from a carried one (typed keys from their key data)."""
            return step_state if self.carried is None else self.carried.typed(step_state)

        def act(networks: ActNetworks, step_state, stacks, env_step) -> tuple[ActorOutput, Any, Any, EnvStep]:
            """step_state: carried (see `carry`); stacks: the envs' frame stacks when stacking on
            the device, else (). Also returns the env step as an EnvStep."""
            seen = env_step = env_step_of(env_step)
            if stack_plan is not None:  # env_step.obs holds Frames
                stacks = framestack.push(stacks, env_step.obs)
                seen = env_step._replace(obs=stacks)
            out, step_state = agent.step(networks.full(), typed(step_state), seen)
            step_state = step_state if self.carried is None else keys.raw(step_state)
            return agent.as_actor_output(out), step_state, stacks, env_step

        def step_and_record(networks, step_state, stacks, env_step, buffers: Buffers, t):
            out, step_state, stacks, env_step = act(networks, step_state, stacks, env_step)
            return out.action, step_state, stacks, trajectory_buffers.write(buffers, (env_step, out.action, out.extras), t)

        def finish(loose, packed, layout: RecordLayout, last, running_return, running_length, version, actor,
                   obs_history):
            env_step, action, extras = trajectory_buffers.read(layout, packed, loose, env_step_of(last), steps)
            ep_ret, ep_len, running_return, running_length = episode_stats(env_step, running_return, running_length)
            traj = Trajectory(env_step, action, extras, ep_ret, ep_len, version, actor, obs_history)
            return traj, running_return, running_length

        def cycle_start(step_state, stacks):
            """The agent's form of the carried step state, copied (the cycle donates it), and with
            stacking on the device the frames before the cycle's first step."""
            copied = jax.tree.map(jnp.copy, typed(step_state))
            return copied, (() if stack_plan is None else framestack.history(stacks, stack_plan.channels))

        def new_buffers(networks, step_state, stacks, env_step) -> Buffers:
            out, _, _, env_step = jax.eval_shape(act, networks, step_state, stacks, env_step)
            return trajectory_buffers.zeros(RecordLayout.create(env_step, out.action, out.extras), steps)

        self._act = act
        # Donation: the step state, the stacks and the buffers are updated in place, step after step.
        self.step_and_record = jax.jit(step_and_record, donate_argnums=(1, 2, 4))
        self.finish = Finish(jax.jit(finish, static_argnums=(2,), donate_argnums=(0, 4, 5)))
        self.new_buffers = jax.jit(new_buffers)
        self.cycle_start = jax.jit(cycle_start)
        self._to_carry = jax.jit(lambda step_state: jax.tree.map(jnp.copy, keys.raw(step_state)))
        self.from_carry = jax.jit(lambda step_state: jax.tree.map(jnp.copy, typed(step_state)))  # a copy

    def act_networks(self, networks: Any, step_state: Any, stacks: Any, env_step: Any) -> ActNetworks:
        """The networks as the act takes them, given its other arguments (which leaves it uses is
        traced once per abstract signature)."""
        leaves, treedef = jax.tree.flatten((networks, step_state, stacks, env_step))
        signature = (treedef, tuple((tuple(x.shape), x.dtype) for x in leaves))
        if signature not in self._used:
            every = (True,) * len(jax.tree.leaves(networks))
            self._used[signature] = used_leaves(lambda nets, *rest: self._act(ActNetworks.of(nets, every), *rest),
                                                networks, step_state, stacks, env_step)
        return ActNetworks.of(networks, self._used[signature])

    def carry(self, step_state: Any) -> Any:
        """A step state as the cycle carries it (typed PRNG keys as their key data), in distinct
        buffers (a leaf may be donated only once per call); `from_carry` gives the agent's form."""
        carried = keys.KeyData.of(step_state)
        if self.carried is not None and carried != self.carried:
            raise ValueError(f"step state keys {carried} differ from the ones carried so far, {self.carried}")
        traced = any(f._cache_size() for f in (self.step_and_record, self.cycle_start, self.from_carry))
        if self.carried is None and traced and carried.any:
            raise RuntimeError("carry() must come before the cycle's functions are first called: they were traced "
                               "for step states taken as they are")
        self.carried = carried
        return self._to_carry(step_state)


class Finish:
    """`finish(buffers, last, running_return, running_length, version, actor, obs_history)`: the
    cycle's trajectory, with its last env step, and the running episode sums. Every buffer is
    consumed: the loose ones and the sums are donated (the trajectory and the new sums reuse
    them); the packed one, which no output can reuse, is deleted once the call is enqueued (its
    memory is freed when the call has run)."""

    def __init__(self, jitted: Any):
        self.jitted = jitted

    def __call__(self, buffers: Buffers, last: HostStep, running_return: jax.Array, running_length: jax.Array,
                 version: Any, actor: Any, obs_history: Any) -> tuple[Trajectory, jax.Array, jax.Array]:
        out = self.jitted(buffers.loose, buffers.packed, buffers.layout, last, running_return, running_length, version,
                          actor, obs_history)
        buffers.packed.delete()
        return out

    def _cache_size(self) -> int:
        return self.jitted._cache_size()


def host_env_step(obs: Any, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
                  elapsed: np.ndarray) -> HostStep:
    """The HostStep of the pool's outputs (the jit call moves it to the device)."""
    return trajectory_buffers.host_step(obs, reward, terminated, truncated, elapsed == 0)
