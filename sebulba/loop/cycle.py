"""The inference cycle's compiled functions: one jitted call per env step, with all bookkeeping
(stacking the trajectory) done in place on donated buffers.

Each act takes the networks as the leaves it uses (`sebulba.loop.act_networks`) and a
`HostStep`, and records into `Buffers` (`sebulba.loop.record`): few arrays per call, each of
which costs a jitted call microseconds on the CPU. Between steps the step state is carried with
typed PRNG keys as their raw key data (`CycleFunctions.carry`): a typed key costs each call
Python work to flatten and rebuild.

`donate=False` is the reference path the design notes measured against: the step is still
jitted, but the trajectory is stacked on the host at the end of the cycle.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sebulba.agent import Agent
from sebulba.loop import framestack, record
from sebulba.loop.act_networks import Act, ActNetworks, used_leaves
from sebulba.loop.record import Buffers, HostStep, RecordLayout, env_step_of
from sebulba.types import ActorOutput, EnvStep, Trajectory


def episode_stats(env_step: EnvStep, running_return: jax.Array, running_length: jax.Array):
    """Returns and lengths of the episodes that end in env_step[1:], carrying running sums over
    cycles. env_step[0] was already counted in the previous cycle."""

    def body(carry, es):
        ret, length = carry
        ret = jnp.where(es.first, 0.0, ret + es.reward)
        length = jnp.where(es.first, 0, length + 1)
        done = es.terminated | es.truncated
        out = (jnp.where(done, ret, jnp.nan), jnp.where(done, length, 0))
        return (ret, length), out

    rest = jax.tree.map(lambda x: x[1:], env_step)
    (ret, length), (ep_ret, ep_len) = jax.lax.scan(body, (running_return, running_length), rest)
    return ep_ret, ep_len.astype(jnp.int32), ret, length


def _is_key(x: Any) -> bool:
    return jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _raw(step_state: Any) -> Any:
    """The step state with typed PRNG keys as their key data."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, step_state)


class CycleFunctions:
    """Compiled per-step and per-cycle functions for one agent and one cycle length. The step
    functions take and return the step state carried (`carry`); the per-cycle ones give the
    agent's form (`cycle_start`, `from_carry`)."""

    def __init__(self, agent: Agent, steps: int, stack_plan: framestack.StackPlan | None = None):
        self.steps = steps
        self.stack_plan = stack_plan
        # Per step-state leaf, the PRNG implementation of a typed key carried as key data, else
        # None; set once by `carry` (None before: the step state is taken as it is).
        self.key_impls: tuple[Any, ...] | None = None
        self._used: dict[Any, tuple[bool, ...]] = {}  # by the act's abstract arguments: its network leaves used

        def typed(step_state):
            """The agent's step state from a carried one (typed keys from their key data)."""
            if self.key_impls is None:
                return step_state
            leaves, treedef = jax.tree.flatten(step_state)
            if len(leaves) != len(self.key_impls):
                raise ValueError(f"a step state of {len(leaves)} leaves, carried with {len(self.key_impls)}")
            return treedef.unflatten([x if impl is None or _is_key(x) else jax.random.wrap_key_data(x, impl=impl)
                                      for x, impl in zip(leaves, self.key_impls)])

        def act(networks, step_state, stacks, env_step) -> tuple[ActorOutput, Any, Any, EnvStep]:
            """networks: a pytree or ActNetworks; step_state: carried (see `carry`); stacks: the
            envs' frame stacks when stacking on the device, else (). Also returns the env step as
            an EnvStep."""
            if isinstance(networks, ActNetworks):
                networks = networks.full()
            seen = env_step = env_step_of(env_step)
            if stack_plan is not None:  # env_step.obs holds Frames
                stacks = framestack.push(stacks, env_step.obs)
                seen = env_step._replace(obs=stacks)
            out, step_state = agent.step(networks, typed(step_state), seen)
            step_state = step_state if self.key_impls is None else _raw(step_state)
            return agent.as_actor_output(out), step_state, stacks, env_step

        def step(networks, step_state, stacks, env_step) -> tuple[ActorOutput, Any, Any]:
            """The act alone: (output, step state, stacks)."""
            return act(networks, step_state, stacks, env_step)[:3]

        def step_and_record(networks, step_state, stacks, env_step, buffers: Buffers, t):
            out, step_state, stacks, env_step = act(networks, step_state, stacks, env_step)
            return out.action, step_state, stacks, record.write(buffers, (env_step, out.action, out.extras), t)

        def finish(loose, packed, layout: RecordLayout, last, running_return, running_length, version, actor,
                   obs_history):
            env_step, action, extras = record.read(layout, packed, loose, env_step_of(last), steps)
            return _trajectory(env_step, action, extras, running_return, running_length, version, actor, obs_history)

        def stack(env_steps: list, outs: list, running_return, running_length, version, actor, obs_history):
            stacked = lambda *xs: jnp.stack(xs)
            env_step = env_step_of(jax.tree.map(stacked, *env_steps))
            action = jax.tree.map(stacked, *[o.action for o in outs])
            extras = jax.tree.map(stacked, *[o.extras for o in outs])
            return _trajectory(env_step, action, extras, running_return, running_length, version, actor, obs_history)

        def cycle_start(step_state, stacks):
            """The agent's form of the carried step state, copied (the cycle donates it), and with
            stacking on the device the frames before the cycle's first step."""
            copied = jax.tree.map(jnp.copy, typed(step_state))
            return copied, (() if stack_plan is None else framestack.history(stacks, stack_plan.channels))

        def new_buffers(networks, step_state, stacks, env_step) -> Buffers:
            out, _, _, env_step = jax.eval_shape(act, networks, step_state, stacks, env_step)
            return record.zeros(RecordLayout.create(env_step, out.action, out.extras), steps)

        def concat_lanes(trees: list, axis: int, lane_envs: int):
            """One tree from per-lane trees: leaves with lane_envs rows along axis are
            concatenated along it, the rest (e.g. the policy version) are the first lane's."""
            def cat(*xs):
                x = xs[0]
                return jnp.concatenate(xs, axis) if x.ndim > axis and x.shape[axis] == lane_envs else x

            return jax.tree.map(cat, *trees)

        self._act = act
        # Donation: the step state and the buffers are updated in place, cycle after cycle.
        self.step = Act(jax.jit(step, donate_argnums=(1, 2)), self.act_networks)  # the no-bookkeeping path
        self.step_and_record = Act(jax.jit(step_and_record, donate_argnums=(1, 2, 4)), self.act_networks)
        self.finish = Finish(jax.jit(finish, static_argnums=(2,), donate_argnums=(0, 4, 5)))
        self.stack = jax.jit(stack, donate_argnums=(2, 3))
        self.new_buffers = jax.jit(new_buffers)
        self.cycle_start = jax.jit(cycle_start)
        self.copy = jax.jit(lambda tree: jax.tree.map(jnp.copy, tree))
        self.concat_lanes = jax.jit(concat_lanes, static_argnums=(1, 2))
        self._to_carry = jax.jit(lambda step_state: jax.tree.map(jnp.copy, _raw(step_state)))
        self.from_carry = jax.jit(lambda step_state: jax.tree.map(jnp.copy, typed(step_state)))  # a copy

    def act_networks(self, networks: Any, step_state: Any, stacks: Any, env_step: Any) -> ActNetworks:
        """The networks as the act takes them, given its other arguments (which leaves it uses is
        traced once per abstract signature)."""
        args = (networks, step_state, stacks, env_step)
        leaves, treedef = jax.tree.flatten(args)
        key = (treedef, tuple((tuple(x.shape), x.dtype) for x in leaves))
        if key not in self._used:
            self._used[key] = used_leaves(self._act, *args)
        return ActNetworks.of(networks, self._used[key])

    def carry(self, step_state: Any) -> Any:
        """A step state as the cycle carries it (typed PRNG keys as their key data), in distinct
        buffers (a leaf may be donated only once per call); `from_carry` gives the agent's form."""
        impls = tuple(jax.random.key_impl(x) if _is_key(x) else None for x in jax.tree.leaves(step_state))
        if self.key_impls is not None and impls != self.key_impls:
            raise ValueError(f"step state keys {impls} differ from the ones carried so far, {self.key_impls}")
        traced = any(f._cache_size() for f in (self.step, self.step_and_record, self.cycle_start, self.from_carry))
        if self.key_impls is None and traced and any(impl is not None for impl in impls):
            raise RuntimeError("carry() must come before the cycle's functions are first called: they were traced "
                               "for step states taken as they are")
        self.key_impls = impls
        return self._to_carry(step_state)


class Finish:
    """`finish(buffers, last, running_return, running_length, version, actor, obs_history)`: the
    cycle's trajectory, with its last env step, and the running episode sums. Every buffer is
    consumed: the loose ones and the sums are donated (the trajectory and the new sums reuse
    them); the packed one, which no output can reuse, is deleted once the call is enqueued (its
    memory is freed when the call has run)."""

    def __init__(self, jitted: Any):
        self.jitted = jitted

    def __call__(self, buffers: Buffers, last: HostStep | EnvStep, running_return: jax.Array, running_length: jax.Array,
                 version: Any, actor: Any, obs_history: Any) -> tuple[Trajectory, jax.Array, jax.Array]:
        out = self.jitted(buffers.loose, buffers.packed, buffers.layout, last, running_return, running_length, version,
                          actor, obs_history)
        buffers.packed.delete()
        return out

    def _cache_size(self) -> int:
        return self.jitted._cache_size()


def _trajectory(env_step, action, extras, running_return, running_length, version, actor, obs_history):
    ep_ret, ep_len, running_return, running_length = episode_stats(env_step, running_return, running_length)
    traj = Trajectory(env_step, action, extras, ep_ret, ep_len, version, actor, obs_history)
    return traj, running_return, running_length


def host_env_step(obs: Any, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
                  elapsed: np.ndarray) -> HostStep:
    """The HostStep of the pool's outputs (the jit call moves it to the device)."""
    return record.host_step(obs, reward, terminated, truncated, elapsed == 0)
