"""AnakinLoop: the Podracers paper's other architecture, for JAX-native envs (`envs.jax`, ids
`SUITE/ID`): acting, the env step and learning in one compiled program on the learner devices.

One call of the program (`jax.jit(jax.shard_map(chunk))` over every learner device of every
process, axis LEARNER_AXIS, as the Sebulba learner's) runs up to K updates. Each update is
`rollout`, a `lax.scan` of T steps of `Agent.step` and `JaxEnv.step` on each device's own envs, the
Trajectory built as the Sebulba cycle builds it (`episode_stats`: one rule for episode returns
and lengths), then `learner_step`: the Sebulba learner's own update step, not a copy. The carry
(networks, optimizer state, keys, experience, step states, env lanes, last env step, running
episode sums) is donated, lives on the devices between calls, and is what a checkpoint saves.

A multi-player env (JaxMARL's MPE: `JaxEnv.num_players` P > 1) is laid out as the Sebulba loop's
multi-player pool: each device's n envs are n x P rows, an env's players consecutive, and the
agent, the trajectories, the experience and the episode sums see rows; env steps count envs (a
step of an env is one env step, whatever its players), and episodes are reported per player.

On the host the loop keeps the Sebulba loop's surface: a middleware Task whose `anakin_step`
replaces fetch/learn/publish, the same metrics window, stop, save and user middleware, and
`run`/`request_stop`/`restore`/`close`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from envs.jax.registry import has_stateless_step, is_jax_id, make_jax_env
from sebulba import keys
from sebulba.agent import Agent
from sebulba.episodes import episode_stats
from sebulba.loop.checkpoint import Checkpointer, abstract, abstract_rows, process_rows
from sebulba.loop.config import LoopConfig
from sebulba.loop.learner import NonFiniteError, Schedule, learner_step
from sebulba.loop.memory import check_fits_in_memory, experience_layout
from sebulba.loop.metrics import MetricsWindow
from sebulba.loop.middleware import LoopContext, start_run, track_metrics, use_pipeline
from sebulba.loop.processes import own_row, process_devices
from sebulba.loop.staging import Staging
from sebulba.loop.task import Middleware, Task
from sebulba.sharding import LEARNER_AXIS, TRAJECTORY_ENV_AXES, LearnerSharding
from sebulba.types import EnvStep, Trajectory

log = logging.getLogger("sebulba")

ENV_STEPS_PER_CALL = 16_384  # the default K: about this many env steps per call (a call reports once)


def uses_anakin(config: LoopConfig) -> bool:
    """Whether a run of this config is an Anakin run: `loop="anakin"`, or `"auto"` with a
    JAX-native env id (`SUITE/ID`)."""
    return config.loop == "anakin" or (config.loop == "auto" and is_jax_id(config.env_id))


def check_env(config: LoopConfig) -> None:
    """ValueError when the config's env cannot run in the Anakin loop it asks for: neither a
    JAX-native env (`SUITE/ID`) nor a built-in task with a compiled stateless step. Nothing is
    built: the entry points refuse such a run before anything else."""
    if uses_anakin(config) and not is_jax_id(config.env_id) and not has_stateless_step(config.env_id):
        raise ValueError(f"the Anakin loop runs JAX-native envs (SUITE/ID, e.g. gymnax/CartPole-v1) and the built-in "
                         f"classic-control tasks; {config.env_id!r} has no compiled stateless step yet: train it with "
                         "--loop sebulba")


def make_env(config: LoopConfig):
    """The config's JaxEnv (env_kwargs: `max_episode_steps` and the suite's env parameters)."""
    check_env(config)
    kwargs = dict(config.env_kwargs)
    kwargs.pop("num_threads", None)  # --env_threads: a host pool's
    return make_jax_env(config.env_id, kwargs.pop("max_episode_steps", None), **kwargs)


def rollout(agent: Agent, env, networks: Any, step_state: Any, lanes: Any, env_step: EnvStep,
            running: tuple[jax.Array, jax.Array], version: jax.Array,
            steps: int) -> tuple[Trajectory, Any, Any, EnvStep, tuple[jax.Array, jax.Array]]:
    """The acting half of an Anakin update on one device (traceable; the program's own): a
    `lax.scan` of `steps` steps of `Agent.step` with `networks` and `JaxEnv.step` from the step
    state, env lanes and last env step, the Trajectory built as the Sebulba cycle builds it
    (`episode_stats` from the running episode return and length per row; policy version
    `version`, actor 0). Returns (trajectory, final step state, lanes, last env step, running
    sums): the next update acts on from them."""

    def act_and_step(carry, _):
        step_state, lanes, env_step = carry
        out, step_state = agent.step(networks, step_state, env_step)
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


class ChunkResult(NamedTuple):
    """A call's result as the metrics window reads it (ctx.result)."""

    updates: int
    env_steps: int  # this process's, every replica's (`num_seeds`)
    episode_returns: np.ndarray  # every replica's, replica after replica
    episode_lengths: np.ndarray
    seed_returns: tuple[np.ndarray, ...] = ()  # with num_seeds > 1: each replica's own
    # the player (row % P) of each episode, as the Sebulba cycle's CycleResult; None: single-player
    episode_players: np.ndarray | None = None


def _traced(fn: Callable, *args) -> tuple[Callable, Any]:
    """fn traced once for args: (a function that replays the trace, fn's output shapes). A
    `lax.cond` whose other branch needs the output shapes then costs one trace, not two."""
    closed, shapes = jax.make_jaxpr(fn, return_shape=True)(*args)
    replay = jax.extend.core.jaxpr_as_fun(closed)
    treedef = jax.tree.structure(shapes)
    return (lambda *xs: jax.tree.unflatten(treedef, replay(*jax.tree.leaves(xs)))), shapes


def _host(x: jax.Array) -> np.ndarray:
    """A replicated array's value (this process's copy, in a job of several)."""
    return np.asarray(x.addressable_data(0))


def _zeros(shapes):
    return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)


def _per_device(tree):
    return jax.tree.map(lambda x: x[0], tree)


def _stacked(tree):
    return jax.tree.map(lambda x: x[None], tree)


class AnakinLoop:
    """Trains `agent` on a JAX-native env in one compiled program per call (see the module
    docstring). `config.num_envs` envs per process are split over its learner devices
    (`config.learner_devices`), and `config.steps_per_cycle` is T; `updates_per_call` is K
    (default: about ENV_STEPS_PER_CALL env steps per call). The options of the Sebulba loop's
    actors (actor_devices, inferencers_per_device, queue_size, async_mode) do not apply: acting
    is in the program, in step with learning (a run is reproducible, as sync mode is).

    `config.num_seeds = S > 1` trains S independent replicas in the same program (PureJaxRL's
    `vmap(train)`): replica s is the run of seed `config.seed + s`, every carry leaf has a replica
    axis (after the device axis of per-device leaves), collectives still reduce over devices
    only. Budgets count each replica's env steps; metrics are the replicas' mean, with each
    replica's `episode_return_mean_seed<s>` and their min and max."""

    def __init__(self, agent: Agent, config: LoopConfig, updates_per_call: int | None = None):
        self.agent = agent
        self.config = config
        self.num_seeds = config.num_seeds
        if config.stack_on_device:
            raise ValueError("stack_on_device is for Atari pools on the Sebulba loop; a JAX env stacks its own frames")
        self.env = make_env(config)
        if config.actor_devices != (0,):
            log.warning(f"the Anakin loop acts on its learner devices, in the same program as it learns: "
                        f"actor_devices={config.actor_devices} is ignored")
        local = jax.local_devices()
        bad = [d for d in config.learner_devices if d >= len(local)]
        if bad:
            raise ValueError(f"learner_devices {bad} do not exist: jax sees {len(local)} device(s) in this process")
        self.devices = [device for p in range(jax.process_count())
                        for device in (process_devices(p)[i] for i in config.learner_devices)]
        # rows: an env's P players each (a multi-player env), as the Sebulba loop's pools
        self.num_players = P = self.env.num_players
        self.sharding = LearnerSharding.create(self.devices, config.num_envs * jax.process_count() * P)
        self.num_devices = len(self.devices)
        self.envs_per_device = config.num_envs // len(config.learner_devices)
        self.rows_per_device = self.envs_per_device * P
        T, n = config.steps_per_cycle, self.rows_per_device
        self.steps_per_update = T * self.envs_per_device * self.num_devices  # the job's env steps
        if updates_per_call is None:
            updates_per_call = max(1, ENV_STEPS_PER_CALL // self.steps_per_update)
        if not isinstance(updates_per_call, int) or updates_per_call < 1:
            raise ValueError(f"updates_per_call must be a positive int, got {updates_per_call!r}")
        self.updates_per_call = updates_per_call
        self.layout = experience_layout(config, P, num_actors=1)
        self.schedule = Schedule.of(agent, self.layout)
        if self.schedule.calls > 1:
            self._env_axes = (agent.step_state_env_axes(n), agent.step_state_env_axes(n), TRAJECTORY_ENV_AXES)
        started = time.perf_counter()
        self.carry = self._initial_carry()
        self._chunk = self._build_chunk()
        self._pending: ChunkResult | None = None
        log.info(f"Anakin loop: {config.num_envs * jax.process_count()} {config.env_id} envs on {self.num_devices} "
                 f"device(s), {T} steps per update, up to {updates_per_call} updates per call; state built in "
                 f"{time.perf_counter() - started:.1f} s")
        self.reports: list[dict] = []
        self.task = Task()
        self.window = MetricsWindow(num_players=P, player_names=self.env.player_names)
        self.seed_windows = [MetricsWindow(num_players=P) for _ in range(self.num_seeds if self.num_seeds > 1 else 0)]
        self.stop_requested = False
        self._staging: Staging | None = None
        self._closed = False

    # ------------------------------------------------------------------ the program
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

    def _initial_carry(self) -> Carry:
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

    def _build_chunk(self):
        shardings = self._carry_shardings(self.carry)
        r, d = self._replicated, self.sharding.envs(0)
        return jax.jit(self._chunk_fn(self.updates_per_call), donate_argnums=(0,),
                       out_shardings=(shardings, ChunkOut(r, r, d, d)))

    # ------------------------------------------------------------------ one call
    @property
    def version(self) -> int:
        """Updates so far (the policy version that acts next)."""
        return int(np.min(_host(self.carry.version)))

    @property
    def networks(self) -> Any:
        return self.carry.networks

    def call(self, updates: int | None = None) -> tuple[dict[str, float], ChunkResult]:
        """Run `updates` (at most updates_per_call; default: that many) updates in one call of
        the compiled program. Returns the updates' mean metrics and their episodes. Raises
        NonFiniteError naming the first update that was not finite; the loop then holds the
        state of the update before it (its networks and optimizer state)."""
        K = self.updates_per_call
        updates = K if updates is None else updates
        if not 1 <= updates <= K:
            raise ValueError(f"updates must be in [1, {K}], got {updates}")
        before = self.version
        active = jax.device_put(np.int32(updates), self._replicated)  # placed: one program for any count
        self.carry, out = self._chunk(self.carry, active)
        S = self.num_seeds
        finite_seeds = _host(out.finite).reshape(self.updates_per_call, S)
        finite = finite_seeds.all(axis=1)
        metrics = {k: _host(v).reshape(self.updates_per_call, S) for k, v in out.metrics.items()}
        bad_at = int(np.argmin(finite)) if not finite.all() else None
        ran = updates if bad_at is None else bad_at
        ep_ret, ep_len = (self._local_rows(x)[:, :ran] for x in (out.episode_return, out.episode_length))
        if S == 1:
            ep_ret, ep_len = ep_ret[:, :, None], ep_len[:, :, None]
        # episodes in the Sebulba cycle's order (update, step, env), replica after replica within
        # an update (an order calls of any length keep): [D, K, S, T, n] -> [K, S, T, D n]
        ep_ret, ep_len = (np.moveaxis(x, 0, 3).reshape(ran, S, x.shape[3], -1) for x in (ep_ret, ep_len))
        done = ~np.isnan(ep_ret)
        seeds = tuple(ep_ret[:, s][done[:, s]] for s in range(S)) if S > 1 else ()
        # row r of the job's D n rows is player r % P (every device's rows start at an env)
        players = None if self.num_players == 1 else np.nonzero(done)[3] % self.num_players
        result = ChunkResult(ran, ran * self.steps_per_update * S // jax.process_count(), ep_ret[done], ep_len[done],
                             seeds, players)
        if bad_at is not None:
            bad = sorted(k for k, v in metrics.items() if not np.isfinite(v[bad_at]).all())
            what = f"metric(s) {bad}" if bad else "the networks (a gradient or update)"
            if S > 1:
                replicas = [s for s in range(S) if not finite_seeds[bad_at, s]]
                what += f" of replica(s) {replicas} (seed {', '.join(str(self.config.seed + s) for s in replicas)})"
            self._pending = result
            raise NonFiniteError(f"learner step {before + bad_at + 1}: {what} became NaN or Inf; the networks and "
                                 f"optimizer state are kept as of learner step {before + bad_at}",
                                 step=before + bad_at + 1, metrics=bad)
        return {k: float(np.mean(v[:ran])) for k, v in metrics.items()}, result  # over updates and replicas

    @staticmethod
    def _local_rows(x: jax.Array) -> np.ndarray:
        """This process's device rows of a [devices, ...] array, in device order."""
        if x.is_fully_addressable:
            return np.asarray(x)
        shards = sorted(x.addressable_shards, key=lambda s: s.index[0].start)
        return np.concatenate([np.asarray(s.data) for s in shards])

    # ------------------------------------------------------------------ running
    @property
    def staging(self) -> Staging:
        """Networks for evaluation: a copy on the first learner device after every call (made
        only once asked for)."""
        if self._staging is None:
            self._staging = Staging([self.eval_device])
            self._publish()
        return self._staging

    @property
    def eval_device(self) -> jax.Device:
        return self.sharding.local_devices[0]

    def _publish(self) -> None:
        if self._staging is not None:
            # a copy (never an alias: the next call donates the carry)
            # (with num_seeds > 1, replica 0's: the run of --seed)
            copy = jax.tree.map(lambda x: jax.device_put(self._replica0(x.addressable_data(0)), self.eval_device,
                                                         may_alias=False), self.carry.networks)
            self._staging.publish(self.version, copy)

    def _replica0(self, x: jax.Array) -> jax.Array:
        return x if self.num_seeds == 1 else x[0]

    def _seed_metrics(self, result: ChunkResult) -> dict[str, float]:
        """With num_seeds > 1: each replica's mean return over its last 20 episodes
        (`episode_return_mean_seed<s>`), and their mean (`episode_return_mean`, the learning
        curve's), min and max (its band)."""
        if not self.seed_windows:
            return {}
        out, means = {}, []
        for s, (window, returns) in enumerate(zip(self.seed_windows, result.seed_returns)):
            window.returns.extend(returns.tolist())
            means.append(float(np.mean(window.returns)) if window.returns else float("nan"))
            out[f"episode_return_mean_seed{s}"] = means[-1]
        finite = [m for m in means if np.isfinite(m)]
        nan = float("nan")
        out.update(episode_return_mean=float(np.mean(finite)) if finite else nan,
                   episode_return_mean_min=min(finite, default=nan), episode_return_mean_max=max(finite, default=nan))
        return out

    def _updates_left(self, ctx: LoopContext, max_env_steps: int | None, max_cycles: int | None) -> int:
        left = self.updates_per_call
        if max_env_steps is not None:
            left = min(left, -(-(max_env_steps - ctx.env_steps) // self.steps_per_update))
        if max_cycles is not None:
            left = min(left, max_cycles - ctx.learner_steps)
        return max(left, 1)

    def run(
        self,
        max_env_steps: int | None = None,
        max_cycles: int | None = None,
        middleware: Sequence[Middleware] = (),
        report: Callable[[dict], None] | None = None,
        checkpointer: Checkpointer | None = None,
        resume: bool = False,
    ) -> LoopContext:
        """Learn until max_env_steps env steps (the job's) or max_cycles updates, as
        GymnasiumLoop.run: each iteration of the middleware Task is one call of the program
        (its last call runs only the updates the budget still needs); checkpoints every
        `every_learner_steps` updates (at the first call that reaches a multiple), at the end and
        on `request_stop()`."""
        ctx = start_run(self, max_env_steps, max_cycles, checkpointer, resume)
        save = None if checkpointer is None else (lambda c: self.save(checkpointer, c.env_steps, c.learner_steps))

        def anakin_step(ctx: LoopContext) -> None:
            """fetch + learn + publish of the Sebulba loop: one call of the program."""
            ctx.train_metrics, ctx.result = self.call(self._updates_left(ctx, max_env_steps, max_cycles))
            ctx.train_metrics.update(self._seed_metrics(ctx.result))
            ctx.env_steps += ctx.result.updates * self.steps_per_update
            ctx.learner_steps += ctx.result.updates
            self._publish()

        with self.task.start(async_mode=False, ctx=ctx):
            use_pipeline(self.task, ctx, (anakin_step,), middleware, lambda: self.stop_requested, self.window,
                         self.config.log_every_s, max_env_steps, max_cycles,
                         track_metrics(self.window, self.task, lambda: 0.0, 1, False, self.reports, report),
                         save, None if checkpointer is None else checkpointer.config.every_learner_steps)
            try:
                ctx = self.task.run()
            except NonFiniteError:
                if save is not None:  # the carry holds the last good networks: count what ran and save
                    c = self.task.ctx
                    ran = self._pending.updates if self._pending is not None else 0
                    save(dataclasses.replace(c, env_steps=c.env_steps + ran * self.steps_per_update,
                                             learner_steps=c.learner_steps + ran))
                raise
        if save is not None:
            save(ctx)
        return ctx

    def request_stop(self) -> None:
        """Stop at the end of the current call (e.g. from a signal handler); a run with a
        checkpointer then saves its final state."""
        self.stop_requested = True

    # ------------------------------------------------------------------ checkpoints
    def _saved(self, with_experience: bool) -> dict:
        c = self.carry
        state = {"networks": c.networks, "opt_state": c.opt_state, "key": c.key,
                 "anakin": {"version": c.version, "step_state": c.step_state, "lanes": c.lanes,
                            "env_step": c.env_step, "running": c.running}}
        if with_experience:
            state["experience"] = c.experience
        return state

    def _episodes(self) -> dict:
        """The episode statistics a checkpoint keeps: all replicas', and each one's."""
        episodes = {"episodes": self.window.state()}
        if self.seed_windows:
            episodes["seeds"] = [w.state() for w in self.seed_windows]
        return episodes

    def save(self, checkpointer: Checkpointer, env_steps: int, learner_steps: int) -> None:
        """A checkpoint at learner_steps (Checkpointer's format: networks, optimizer state and key
        as a Sebulba run's, so `experiments.evaluate` and `load_policy` read it; the rest of the
        carry, env lanes and keys included, beside them; the experience state with
        `save_experience`). Every process calls it at the same update."""
        meta = {"env_steps": env_steps, "learner_steps": learner_steps, "version": self.version,
                "async_mode": False, "has_experience": checkpointer.config.save_experience,
                "layout": anakin_layout(self.config)}
        checkpointer.save_items(learner_steps, keys.raw(self._saved(checkpointer.config.save_experience)),
                                process_rows(self._episodes()), meta)

    def restore(self, checkpointer: Checkpointer, step: int | None = None) -> dict:
        """Load the latest complete checkpoint (or `step`) into this loop; returns its metadata."""
        meta = checkpointer.read_meta(step)
        checkpointer.check_layout(meta, False, anakin_layout(self.config), step)
        like = self._saved(meta["has_experience"])
        actors_like = self._episodes()
        state, actors = checkpointer.restore_items(meta["learner_steps"] if step is None else step, abstract(like),
                                                   abstract_rows(actors_like))
        state = keys.typed_like(state, like)
        saved = state["anakin"]
        self.carry = self.carry._replace(
            networks=state["networks"], opt_state=state["opt_state"], key=state["key"],
            experience=state.get("experience", self.carry.experience), **saved)
        episodes = jax.tree.map(own_row, actors)
        self.window.load(episodes["episodes"])
        for window, state in zip(self.seed_windows, episodes.get("seeds", ())):
            window.load(state)
        self._publish()
        log.info(f"resumed from checkpoint {meta['learner_steps']} ({meta['env_steps']:,} env steps)")
        return meta

    # ------------------------------------------------------------------ teardown
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def synchronous(self) -> bool:
        """Always: acting, env steps and learning are one program."""
        return True

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> AnakinLoop:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def anakin_layout(config: LoopConfig) -> dict[str, Any]:
    """What a checkpoint of an Anakin run must match to resume."""
    c = config
    return {"loop": "anakin", "processes": jax.process_count(), "learner_devices": list(c.learner_devices),
            "num_envs": c.num_envs, "steps_per_cycle": c.steps_per_cycle, "num_seeds": c.num_seeds}
