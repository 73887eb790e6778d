"""Real cycles and learner updates for the agents' tests: a cycle of a real pool in the Sebulba
loop (sync), one learner update of it on a given set of devices, and a run interrupted and resumed
from its checkpoint beside an uninterrupted one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

import sebulba
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.learner import Learner
from sebulba.sharding import LearnerSharding
from sebulba.types import ExperienceLayout


def one_cycle(agent, num_envs: int = 8, steps: int = 16, seed: int = 3) -> tuple:
    """(initial step state, final step state, trajectory) of the third cycle of num_envs envs of the
    agent's task (some episodes end inside it), on the host (RNG keys aside)."""
    cfg = sebulba.LoopConfig(env_id=agent.env_spec.id, num_envs=num_envs, steps_per_cycle=steps, async_mode=False,
                             inferencers_per_device=1, log_every_s=1000.0, seed=seed)
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        loop.start_inferencers()
        for _ in range(3):
            r = loop.inferencers[0].run_cycle(loop.learner.version, loop.learner.networks)
        host = lambda x: x if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else np.asarray(x)  # noqa: E731
        return jax.tree.map(host, (r.initial_step_state, r.final_step_state, r.trajectory))


def update_on(devices: tuple[int, ...], agent, cycle: tuple, num_envs: int = 8, steps: int = 16) -> tuple:
    """(networks, optimizer state, metrics) after one learner update of `cycle` on these devices."""
    sharding = LearnerSharding.create([jax.devices()[i] for i in devices], num_envs)
    learner = Learner(agent, sharding, ExperienceLayout(1, num_envs // len(devices), steps), jax.random.key(0))
    initial, final, traj = cycle
    metrics = learner.update(agent.shard_step_state(initial, sharding), agent.shard_step_state(final, sharding),
                             sharding.trajectory(traj))
    return jax.tree.map(np.asarray, (learner.networks, learner.opt_state, metrics))


def straight_and_resumed(make_loop: Callable, directory: Path, cycles: int = 6, every: int = 3,
                         stopped_at: int = 4) -> tuple:
    """The networks after `cycles` cycles of a loop from `make_loop()`, uninterrupted, and of one
    checkpointed every `every` cycles, stopped after `stopped_at` and resumed to `cycles`."""
    with make_loop() as loop:
        loop.run(max_cycles=cycles)
        straight = jax.tree.map(np.asarray, loop.learner.networks)
    ckpt = CheckpointConfig(str(directory), every_learner_steps=every, keep=2)
    with make_loop() as loop:
        loop.run(max_cycles=stopped_at, checkpointer=Checkpointer(ckpt))
    with make_loop() as loop:
        loop.run(max_cycles=cycles, checkpointer=Checkpointer(ckpt), resume=True)
        resumed = jax.tree.map(np.asarray, loop.learner.networks)
    return straight, resumed


def assert_policy_acts_as_evaluation(policy, agent, networks, steps: int = 12) -> tuple:
    """A `Policy` (what `load_policy` returns, seed 0) against the agent's jitted `evaluation_step`
    on the same inputs, over `steps` steps of 4 real CartPoles: the same actions each step.
    Returns (the state the policy handed back, the reference's step state)."""
    import jax.numpy as jnp

    import envs

    step = jax.jit(agent.evaluation_step)
    pool = envs.make("CartPole-v1", num_envs=4, seed=11)
    obs, _ = pool.reset()
    _, key = jax.random.split(jax.random.key(0))  # the key Policy(seed=0) starts its first episode with
    state, ref = None, agent.init_step_state(networks, 4, key)
    for t in range(steps):
        action, state = policy.act(obs, state)
        es = sebulba.EnvStep(obs, jnp.zeros(4), jnp.zeros(4, bool), jnp.zeros(4, bool), jnp.full(4, t == 0))
        want, ref = step(networks, ref, es)
        np.testing.assert_array_equal(action, np.asarray(want))
        obs, *_ = pool.step(action)
    pool.close()
    return state, ref
