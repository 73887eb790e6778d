"""AnakinLoop: the Podracers paper's other architecture, for JAX-native envs (`envs.jax`, ids
`SUITE/ID`): acting, the env step and learning in one compiled program on the learner devices
(`sebulba/loop/anakin_program.py`: the carry, the acting scan, one update, a chunk of K updates,
the initial carry).

This module is the host side: one call of the program and its result read per replica and player
(`call`), the budgets, and around them the Sebulba loop's surface: a middleware Task whose
`anakin_step` replaces fetch/learn/publish, the same metrics window, stop, save and user
middleware, and `run`/`request_stop`/`restore`/`close` (the `Loop` contract,
sebulba/loop/contract.py). Checkpoints are in Checkpointer's format (`checkpoint.anakin_items`).

A multi-player env (JaxMARL's MPE: `JaxEnv.num_players` P > 1) is laid out as the Sebulba loop's
multi-player pool: each device's n envs are n x P rows, an env's players consecutive, and the
agent, the trajectories, the experience and the episode sums see rows; env steps count envs (a
step of an env is one env step, whatever its players), and episodes are reported per player.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from envs.jax.registry import make_jax_env
from sebulba import keys
from sebulba.agent import Agent
from sebulba.loop.anakin_program import Program
from sebulba.loop.checkpoint import Checkpointer, abstract, abstract_rows, anakin_items, anakin_layout, process_rows
from sebulba.loop.config import LoopConfig, check_env
from sebulba.loop.learner import NonFiniteError, Schedule
from sebulba.loop.memory import experience_layout
from sebulba.loop.metrics import MetricsWindow, SeedWindows
from sebulba.loop.middleware import LoopContext, start_run, track_metrics, use_pipeline
from sebulba.loop.processes import own_row, process_devices
from sebulba.loop.staging import Staging
from sebulba.loop.task import Middleware, Task
from sebulba.sharding import LearnerSharding

log = logging.getLogger("sebulba")

ENV_STEPS_PER_CALL = 16_384  # the default K: about this many env steps per call (a call reports once)


def make_env(config: LoopConfig):
    """The config's JaxEnv (env_kwargs: `max_episode_steps` and the suite's env parameters)."""
    check_env(config)
    kwargs = dict(config.env_kwargs)
    kwargs.pop("num_threads", None)  # --env_threads: a host pool's
    return make_jax_env(config.env_id, kwargs.pop("max_episode_steps", None), **kwargs)


class ChunkResult(NamedTuple):
    """A call's result as the metrics window reads it (ctx.result)."""

    updates: int
    env_steps: int  # this process's, every replica's (`num_seeds`)
    episode_returns: np.ndarray  # every replica's, replica after replica
    episode_lengths: np.ndarray
    seed_returns: tuple[np.ndarray, ...] = ()  # with num_seeds > 1: each replica's own
    # the player (row % P) of each episode, as the Sebulba cycle's CycleResult; None: single-player
    episode_players: np.ndarray | None = None



def _host(x: jax.Array) -> np.ndarray:
    """A replicated array's value (this process's copy, in a job of several)."""
    return np.asarray(x.addressable_data(0))


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
        T = config.steps_per_cycle
        self.steps_per_update = T * self.envs_per_device * self.num_devices  # the job's env steps
        if updates_per_call is None:
            updates_per_call = max(1, ENV_STEPS_PER_CALL // self.steps_per_update)
        if not isinstance(updates_per_call, int) or updates_per_call < 1:
            raise ValueError(f"updates_per_call must be a positive int, got {updates_per_call!r}")
        self.updates_per_call = updates_per_call
        self.layout = experience_layout(config, P, num_actors=1)
        self.schedule = Schedule.of(agent, self.layout)
        started = time.perf_counter()
        self.program = Program(agent, self.env, config, self.sharding, self.layout, self.schedule, self.envs_per_device)
        self.carry = self.program.initial_carry()
        self._chunk = self.program.compile(self.carry, updates_per_call)
        self._pending: ChunkResult | None = None
        log.info(f"Anakin loop: {config.num_envs * jax.process_count()} {config.env_id} envs on {self.num_devices} "
                 f"device(s), {T} steps per update, up to {updates_per_call} updates per call; state built in "
                 f"{time.perf_counter() - started:.1f} s")
        self.reports: list[dict] = []
        self.task = Task()
        self.window = MetricsWindow(num_players=P, player_names=self.env.player_names)
        self.seed_windows = SeedWindows(self.num_seeds, P)
        self.stop_requested = False
        self._staging: Staging | None = None
        self._closed = False

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
        active = jax.device_put(np.int32(updates), self.sharding.replicated)  # placed: one program for any count
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
            ctx.train_metrics.update(self.seed_windows.metrics(ctx.result.seed_returns))
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
    def _episodes(self) -> dict:
        """The episode statistics a checkpoint keeps: all replicas', and each one's."""
        episodes = {"episodes": self.window.state()}
        if self.seed_windows.windows:
            episodes["seeds"] = self.seed_windows.state()
        return episodes

    def save(self, checkpointer: Checkpointer, env_steps: int, learner_steps: int) -> None:
        """A checkpoint at learner_steps (Checkpointer's format: networks, optimizer state and key
        as a Sebulba run's, so `experiments.evaluate` and `load_policy` read it; the rest of the
        carry, env lanes and keys included, beside them; the experience state with
        `save_experience`). Every process calls it at the same update."""
        meta = {"env_steps": env_steps, "learner_steps": learner_steps, "version": self.version,
                "async_mode": False, "has_experience": checkpointer.config.save_experience,
                "layout": anakin_layout(self.config)}
        checkpointer.save_items(learner_steps, keys.raw(anakin_items(self.carry, checkpointer.config.save_experience)),
                                process_rows(self._episodes()), meta)

    def restore(self, checkpointer: Checkpointer, step: int | None = None) -> dict:
        """Load the latest complete checkpoint (or `step`) into this loop; returns its metadata."""
        meta = checkpointer.read_meta(step)
        checkpointer.check_layout(meta, False, anakin_layout(self.config), step)
        like = anakin_items(self.carry, meta["has_experience"])
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
        self.seed_windows.load(episodes.get("seeds", ()))
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

