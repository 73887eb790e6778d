"""The Anakin loop's compiled program (`Program`): its state between calls (`Carry`), the acting
scan (`rollout`), one update (the rollout, then the Sebulba learner's own `learner_step`), a chunk
of K updates mapped over the learner devices, and the initial carry built from the seed. The
host side (calls, budgets, metrics, checkpoints) is `sebulba/loop/anakin.py`.

One call of the program (`jax.jit(jax.shard_map(chunk))` over every learner device of every
process, axis LEARNER_AXIS, as the Sebulba learner's) runs up to K updates. Each update is
`rollout`, a `lax.scan` of T steps of `Agent.step` and `JaxEnv.step` on each device's own envs, the
Trajectory built as the Sebulba cycle builds it (`episode_stats`: one rule for episode returns
and lengths), then `learner_step`. The carry (networks, optimizer state, keys, experience, step
states, env lanes, last env step, running episode sums) is donated and lives on the devices
between calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from sebulba.agent import Agent
from sebulba.episodes import episode_stats
from sebulba.loop.config import LoopConfig
from sebulba.loop.learner import Schedule, learner_step
from sebulba.loop.memory import check_fits_in_memory
from sebulba.sharding import LEARNER_AXIS, TRAJECTORY_ENV_AXES, LearnerSharding
from sebulba.types import EnvStep, Trajectory

def rollout(agent: Agent, env, networks: Any, step_state: Any, lanes: Any, env_step: EnvStep,
            running: tuple[jax.Array, jax.Array], version: jax.Array,
            steps: int) -> tuple[Trajectory, Any, Any, EnvStep, tuple[jax.Array, jax.Array]]:
    """The acting half of an Anakin update on one device (traceable; the program's own): a
    `lax.scan` of `steps` steps of `Agent.step` with `networks` and `JaxEnv.step` from the step
    state, env lanes and last env step (an agent that `plans_with_env` sees the lanes' raw states
    in `env_step.state`), the Trajectory built as the Sebulba cycle builds it
    (`episode_stats` from the running episode return and length per row; policy version
    `version`, actor 0). Returns (trajectory, final step state, lanes, last env step, running
    sums): the next update acts on from them."""

    def act_and_step(carry, _):
        step_state, lanes, env_step = carry
        seen = env_step._replace(state=lanes.state) if agent.plans_with_env else env_step
        out, step_state = agent.step(networks, step_state, seen)
        out = agent.as_actor_output(out)
        lanes, step = env.step(lanes, out.action)
        return (step_state, lanes, EnvStep(*step)), (env_step, out.action, out.extras)

    (final, lanes, last), (env_steps, action, extras) = jax.lax.scan(
        act_and_step, (step_state, lanes, env_step), None, steps)
    env_steps = jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), env_steps, last)
    ep_ret, ep_len, *running = episode_stats(env_steps, *running)
    traj = Trajectory(env_steps, action, extras, ep_ret, ep_len, version, jnp.int32(0))
    return traj, final, lanes, last, tuple(running)


class Carry(NamedTuple):
    """The program's state between calls. Networks, optimizer state, the learner key and the
    update count are replicated; every other leaf has a leading device axis (one row per learner
    device, split over them)."""

    networks: Any
    opt_state: Any
    key: jax.Array  # the learner's (typed)
    version: jax.Array  # int32: updates so far (the policy version that acts next)
    experience: Any
    step_state: Any
    lanes: Any  # envs.jax.Lanes
    env_step: EnvStep  # the last env step: what the next update's first action is chosen from
    running: tuple[jax.Array, jax.Array]  # running episode return and length per env


class ChunkOut(NamedTuple):
    """What one call returns besides the carry: per update (leading axis K) its metrics
    (averaged over the devices), whether it was finite, and its episodes' returns and lengths
    ([devices, K, T, envs per device]: NaN and 0 where no episode ended)."""

    metrics: dict
    finite: jax.Array
    episode_return: jax.Array
    episode_length: jax.Array


def _traced(fn: Callable, *args) -> tuple[Callable, Any]:
    """fn traced once for args: (a function that replays the trace, fn's output shapes). A
    `lax.cond` whose other branch needs the output shapes then costs one trace, not two."""
    closed, shapes = jax.make_jaxpr(fn, return_shape=True)(*args)
    replay = jax.extend.core.jaxpr_as_fun(closed)
    treedef = jax.tree.structure(shapes)
    return (lambda *xs: jax.tree.unflatten(treedef, replay(*jax.tree.leaves(xs)))), shapes


def _zeros(shapes):
    return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)


def _per_device(tree):
    return jax.tree.map(lambda x: x[0], tree)


def _stacked(tree):
    return jax.tree.map(lambda x: x[None], tree)

class Program:
    """The compiled program of an Anakin loop: `agent` on `env` (a JaxEnv) with `config`'s
    envs per process split over the learner devices of `sharding` (each device's
    `envs_per_device` envs are `envs_per_device x P` rows for a P-player env), T =
    `config.steps_per_cycle` steps an update, `schedule` the learner's, and `config.num_seeds`
    replicas (num_seeds > 1: every carry leaf has a replica axis after the device axis of the
    per-device leaves; collectives still reduce over devices only)."""

    def __init__(self, agent: Agent, env: Any, config: LoopConfig, sharding: LearnerSharding, layout: Any,
                 schedule: Schedule, envs_per_device: int):
        self.agent, self.env, self.config, self.sharding = agent, env, config, sharding
        self.layout, self.schedule = layout, schedule
        self.num_seeds = config.num_seeds
        self.num_devices = sharding.num_devices
        self.envs_per_device = envs_per_device
        self.rows_per_device = n = envs_per_device * env.num_players
        if schedule.calls > 1:
            self._env_axes = (agent.step_state_env_axes(n), agent.step_state_env_axes(n), TRAJECTORY_ENV_AXES)

    def _vmap(self, f: Callable) -> Callable:
        """f over the replicas (num_seeds > 1), else f."""
        return f if self.num_seeds == 1 else jax.vmap(f)

    @property
    def _replicated(self) -> NamedSharding:
        return self.sharding.replicated

    def _carry_specs(self) -> Carry:
        r, d = P(), P(LEARNER_AXIS)
        return Carry(r, r, r, r, d, d, d, d, d)

    def _carry_shardings(self, carry_like) -> Any:
        specs = self._carry_specs()
        return jax.tree.map(lambda spec, sub: jax.tree.map(lambda _: NamedSharding(self.sharding.mesh, spec), sub),
                            specs, carry_like, is_leaf=lambda s: isinstance(s, P))

    def initial_carry(self) -> Carry:
        """The initial state, built in one jitted shard_map from the seed (no host arrays to
        assemble, in any number of processes)."""
        agent, env, n, D = self.agent, self.env, self.envs_per_device, self.num_devices
        rows = self.rows_per_device
        # The Sebulba loop's keys and envs for the same seed, device d as its inferencer d (one per
        # device, as many envs): networks, actors' keys and env streams equal in the two loops.
        # Replica s (num_seeds > 1) is the run of seed + s.
        layout, seed, local_devices, processes = self.layout, self.config.seed, len(self.config.learner_devices), jax.process_count()
        lead = 1 if self.num_seeds == 1 else 2  # the leading axes of per-device leaves: device (and replica)

        def seed_keys(seed: int) -> list[np.ndarray]:
            key_learner, key_actors = jax.random.split(jax.random.key(seed))
            k_net, k_exp, learner_key = jax.random.split(key_learner, 3)
            # host key data: the same value on every process of a job
            return [np.asarray(jax.random.key_data(k)) for k in (k_net, k_exp, learner_key, key_actors)]

        keyed = [seed_keys(seed + s) + [np.int32(s)] for s in range(self.num_seeds)]
        args = tuple(keyed[0]) if self.num_seeds == 1 else tuple(np.stack(ks) for ks in zip(*keyed))

        def actor_key(key_actors: jax.Array, d: jax.Array) -> jax.Array:
            """Device d's as GymnasiumLoop's inferencer d's: its process's key split per local one."""
            if processes > 1:
                key_actors = jax.random.fold_in(key_actors, d // local_devices)
            return jax.random.split(key_actors, local_devices)[d % local_devices]

        def build(experience_like):
            def one_seed(*key_data):
                *key_data, replica = key_data
                k_net, k_exp, learner_key, key_actors = (jax.random.wrap_key_data(k) for k in key_data)
                networks = agent.init_networks(k_net)
                opt_state = agent.init_optimizer_state(networks)
                d = jax.lax.axis_index(LEARNER_AXIS)
                if experience_like is None:
                    experience = agent.init_experience(networks, layout, jax.random.split(k_exp, D)[d])
                else:
                    experience = jax.tree.map(lambda s: jnp.zeros(s.shape[lead:], s.dtype), experience_like)
                step_state = agent.init_step_state(networks, rows, actor_key(key_actors, d))
                # env g of seed + s is env g + s of seed (the pool's rule: env g is seeded seed + g)
                lanes, first = env.reset_as_pool(seed, n, first_index=d * n + replica)
                running = (jnp.zeros(rows, jnp.float32), jnp.zeros(rows, jnp.int32))
                return Carry(networks, opt_state, learner_key, jnp.int32(0), experience, step_state, lanes,
                             EnvStep(*first), running)

            def one_device(*key_data):
                # Replica after replica (lax.map, not vmap): a vmapped orthogonal init is a batched QR,
                # whose LAPACK kernel on a CPU host with several devices deadlocks (jaxlib's
                # ParallelBatchMap blocks the shared thread pool). Built once a run, so no cost.
                local = one_seed(*key_data) if self.num_seeds == 1 else jax.lax.map(lambda a: one_seed(*a), key_data)
                return local._replace(**{f: _stacked(getattr(local, f)) for f in Carry._fields[4:]})

            mapped = jax.shard_map(one_device, mesh=self.sharding.mesh, in_specs=P(), out_specs=self._carry_specs(),
                                   check_vma=False)
            # placed as the program's outputs are: one compiled program for every call
            return jax.jit(mapped, out_shardings=self._carry_shardings(jax.eval_shape(mapped, *args)))

        shapes = jax.eval_shape(build(None), *args)
        check_fits_in_memory(jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape[1:], s.dtype), shapes.experience),
                             self.sharding.local_devices)
        # An experience state whose structure the first update changes (IMPALA's and PPO's keep
        # the trajectory) starts as zeros of its later form: a scan carries one structure.
        specs = self._carry_specs()
        first_update = jax.shard_map(lambda c: self._vmap(self._update)(self._local(c))[0].experience,
                                     mesh=self.sharding.mesh,
                                     in_specs=(specs,), out_specs=P(), check_vma=False)
        after = jax.eval_shape(first_update, shapes)
        after = jax.tree.map(lambda s: jax.ShapeDtypeStruct((self.num_devices, *s.shape), s.dtype), after)
        like = None if jax.tree.structure(after) == jax.tree.structure(shapes.experience) else after
        return build(like)(*args)

    @staticmethod
    def _local(carry: Carry) -> Carry:
        """One device's carry, inside the mapped program: its rows of the per-device leaves."""
        return carry._replace(**{f: _per_device(getattr(carry, f)) for f in Carry._fields[4:]})

    def _update(self, c: Carry) -> tuple[Carry, dict, jax.Array, jax.Array, jax.Array]:
        """One update on one device (its own rows of the per-device leaves, without the axis)."""
        agent, schedule = self.agent, self.schedule
        initial = c.step_state
        traj, final, lanes, last, running = rollout(agent, self.env, c.networks, c.step_state, c.lanes, c.env_step,
                                                    c.running, c.version, self.config.steps_per_cycle)
        ep_ret, ep_len = traj.episode_return, traj.episode_length
        net, opt, exp, key = c.networks, c.opt_state, c.experience, c.key
        if schedule.calls == 1:
            net, opt, exp, metrics, finite, key = learner_step(agent, schedule, net, opt, exp, initial, final, traj, key)
        else:  # minibatches of envs: as Learner.update, one learner step per minibatch
            finite, every = jnp.bool_(True), []
            inputs = (initial, final, traj)
            env_axes = jax.tree.map(lambda axis, sub: jax.tree.map(lambda _: axis, sub), self._env_axes, inputs)
            for i in range(schedule.calls):  # the first non-finite one skips the rest
                run, shapes = _traced(lambda n, o, e, k, i=i: learner_step(
                    agent, schedule, n, o, e, *inputs, k, i, env_axes), net, opt, exp, key)
                skip = lambda n, o, e, k: (n, o, e, _zeros(shapes[3]), jnp.bool_(True), k)  # noqa: E731
                if i == 0:  # (also where the experience state changes structure, while priming it)
                    net, opt, exp, m, ok, key = run(net, opt, exp, key)
                else:
                    net, opt, exp, m, ok, key = jax.lax.cond(finite, run, skip, net, opt, exp, key)
                finite = finite & ok
                every.append(m)
            metrics = jax.tree.map(lambda *xs: sum(xs) / len(xs), *every)
        version = c.version + finite.astype(jnp.int32)
        new = Carry(net, opt, key, version, exp, final, lanes, last, tuple(running))
        return new, metrics, finite, ep_ret, ep_len

    def _chunk_fn(self, K: int) -> Callable:
        """The program of K updates, mapped over the devices: (carry, active) -> (carry,
        ChunkOut). Updates from `active` on, and after a non-finite one, are skipped."""
        specs = self._carry_specs()

        def chunk(carry: Carry, active: jax.Array):
            local = self._local(carry)
            run, shapes = _traced(self._vmap(self._update), local)

            def one(state, i):
                c, ok = state

                def skip(c):
                    nan = jnp.full(shapes[3].shape, jnp.nan, shapes[3].dtype)
                    return c, _zeros(shapes[1]), jnp.ones(shapes[2].shape, bool), nan, _zeros(shapes[4])

                c, metrics, finite, ep_ret, ep_len = jax.lax.cond(ok & (i < active), run, skip, c)
                return (c, ok & jnp.all(finite)), (metrics, finite, ep_ret, ep_len)

            (local, _), (metrics, finite, ep_ret, ep_len) = jax.lax.scan(one, (local, jnp.bool_(True)), jnp.arange(K))
            carry = local._replace(**{f: _stacked(getattr(local, f)) for f in Carry._fields[4:]})
            return carry, ChunkOut(metrics, finite, ep_ret[None], ep_len[None])

        return jax.shard_map(chunk, mesh=self.sharding.mesh, in_specs=(specs, P()),
                             out_specs=(specs, ChunkOut(P(), P(), P(LEARNER_AXIS), P(LEARNER_AXIS))), check_vma=False)

    def compile(self, carry: Carry, K: int) -> Callable:
        """The jitted program of K updates for a carry placed as `carry` (donated): (carry,
        active) -> (carry, ChunkOut)."""
        shardings = self._carry_shardings(carry)
        r, d = self._replicated, self.sharding.envs(0)
        return jax.jit(self._chunk_fn(K), donate_argnums=(0,),
                       out_shardings=(shardings, ChunkOut(r, r, d, d)))

    # ------------------------------------------------------------------ one call
