"""The inference cycle's compiled functions: one jitted call per env step, with all bookkeeping
(stacking the trajectory) done in place on donated buffers.

`donate=False` is the reference path the design notes measured against: the step is still
jitted, but the trajectory is stacked on the host at the end of the cycle.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sebulba.agent import Agent
from sebulba.loop import framestack
from sebulba.types import ActorOutput, EnvStep, Trajectory


class Buffers(NamedTuple):
    """A cycle's trajectory under construction, on the actor device."""

    env_step: EnvStep  # [T + 1, B, ...]
    action: Any  # [T, B, ...]
    extras: Any  # [T, B, ...]


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


class CycleFunctions:
    """Compiled per-step and per-cycle functions for one agent and one cycle length."""

    def __init__(self, agent: Agent, steps: int, stack_plan: framestack.StackPlan | None = None):
        self.steps = steps
        self.stack_plan = stack_plan

        def step(networks, step_state, stacks, env_step) -> tuple[ActorOutput, Any, Any]:
            """stacks: the envs' frame stacks when stacking on the device, else ()."""
            seen = env_step
            if stack_plan is not None:  # env_step.obs holds Frames
                stacks = framestack.push(stacks, env_step.obs)
                seen = env_step._replace(obs=stacks)
            out, step_state = agent.step(networks, step_state, seen)
            return agent.as_actor_output(out), step_state, stacks

        def step_and_record(networks, step_state, stacks, env_step, buffers: Buffers, t):
            out, step_state, stacks = step(networks, step_state, stacks, env_step)
            put = lambda buf, x: jax.lax.dynamic_update_index_in_dim(buf, x, t, 0)
            buffers = Buffers(
                jax.tree.map(put, buffers.env_step, env_step),
                jax.tree.map(put, buffers.action, out.action),
                jax.tree.map(put, buffers.extras, out.extras),
            )
            return out.action, step_state, stacks, buffers

        def finish(buffers: Buffers, last: EnvStep, running_return, running_length, version, actor, obs_history):
            env_step = jax.tree.map(lambda buf, x: buf.at[steps].set(x), buffers.env_step, last)
            return _trajectory(env_step, buffers.action, buffers.extras, running_return, running_length, version, actor,
                               obs_history)

        def stack(env_steps: list, outs: list, running_return, running_length, version, actor, obs_history):
            stacked = lambda *xs: jnp.stack(xs)
            env_step = jax.tree.map(stacked, *env_steps)
            action = jax.tree.map(stacked, *[o.action for o in outs])
            extras = jax.tree.map(stacked, *[o.extras for o in outs])
            return _trajectory(env_step, action, extras, running_return, running_length, version, actor, obs_history)

        def cycle_start(step_state, stacks):
            """A copy of the step state (the cycle donates it), and with stacking on the device
            the frames before the cycle's first step."""
            copied = jax.tree.map(jnp.copy, step_state)
            return copied, (() if stack_plan is None else framestack.history(stacks, stack_plan.channels))

        def new_buffers(networks, step_state, stacks, env_step) -> Buffers:
            out, _, _ = jax.eval_shape(step, networks, step_state, stacks, env_step)
            zeros = lambda n: (lambda x: jnp.zeros((n, *x.shape), x.dtype))
            return Buffers(
                jax.tree.map(zeros(steps + 1), env_step),
                jax.tree.map(zeros(steps), out.action),
                jax.tree.map(zeros(steps), out.extras),
            )

        def concat_lanes(trees: list, axis: int, lane_envs: int):
            """One tree from per-lane trees: leaves with lane_envs rows along axis are
            concatenated along it, the rest (e.g. the policy version) are the first lane's."""
            def cat(*xs):
                x = xs[0]
                return jnp.concatenate(xs, axis) if x.ndim > axis and x.shape[axis] == lane_envs else x

            return jax.tree.map(cat, *trees)

        # Donation: the step state and the buffers are updated in place, cycle after cycle.
        self.step = jax.jit(step, donate_argnums=(1, 2))  # the no-bookkeeping reference path
        self.step_and_record = jax.jit(step_and_record, donate_argnums=(1, 2, 4))
        self.finish = jax.jit(finish, donate_argnums=(0, 2, 3))
        self.stack = jax.jit(stack, donate_argnums=(2, 3))
        self.new_buffers = jax.jit(new_buffers)
        self.cycle_start = jax.jit(cycle_start)
        self.copy = jax.jit(lambda tree: jax.tree.map(jnp.copy, tree))
        self.concat_lanes = jax.jit(concat_lanes, static_argnums=(1, 2))


def _trajectory(env_step, action, extras, running_return, running_length, version, actor, obs_history):
    ep_ret, ep_len, running_return, running_length = episode_stats(env_step, running_return, running_length)
    traj = Trajectory(env_step, action, extras, ep_ret, ep_len, version, actor, obs_history)
    return traj, running_return, running_length


def host_env_step(obs: Any, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, elapsed: np.ndarray) -> EnvStep:
    """An EnvStep of numpy arrays from the pool's outputs (the jit call moves it to the device)."""
    return EnvStep(obs, reward, terminated, truncated, elapsed == 0)
