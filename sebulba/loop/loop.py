"""GymnasiumLoop: Sebulba's actor-learner loop.

Inferencer threads, each pinned to an actor device with its own env pool, run jitted inference
cycles with the latest staged networks and push (initial step state, final step state,
trajectory) onto one bounded queue; the learner, a middleware pipeline in the main thread, pops
them, learns on the learner devices and publishes new networks to the staging area.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence

import jax

import envs
from sebulba.agent import Agent
from sebulba.loop.checkpoint import Checkpointer, LoopState, loop_layout
from sebulba.loop.config import LoopConfig
from sebulba.loop.cycle import CycleFunctions
from sebulba.loop.framestack import StackPlan
from sebulba.loop.inferencer import CycleResult, Inferencer, InferencerThread
from sebulba.loop.learner import Learner, NonFiniteError
from sebulba.loop.memory import experience_layout
from sebulba.loop.precompile import CompilingAhead
from sebulba.loop.metrics import MetricsWindow
from sebulba.loop.middleware import (
    LoopContext,
    fetch_trajectories,
    learn,
    publish_networks,
    start_run,
    track_metrics,
    use_pipeline,
)
from sebulba.loop.processes import process_devices
from sebulba.loop.staging import Staging
from sebulba.loop.task import Middleware, Task
from sebulba.sharding import LearnerSharding

log = logging.getLogger("sebulba")

POLL_S = 0.05  # how often blocked queue operations look for errors and stop requests
JOIN_TIMEOUT_S = 30.0


class InferencerError(RuntimeError):
    """An inferencer thread failed; the original exception is the `__cause__`."""


class GymnasiumLoop:
    """The Sebulba loop: trains `agent` on env pools on the host (any `envs.make` id), laid out
    over devices as `config` says. `run` trains; `close` stops its threads and pools."""

    def __init__(self, agent: Agent, config: LoopConfig):
        self.agent = agent
        self.config = config
        if config.num_seeds > 1:
            raise ValueError(f"num_seeds={config.num_seeds} trains replicas in one program: the Anakin loop's "
                             "(a JAX-native env, SUITE/ID); the Sebulba loop trains one seed")
        if agent.plans_with_env:
            raise ValueError(f"{type(agent).__name__} plans with the env's true model (its states), which a host pool does "
                             "not give: train it on a JAX env (SUITE/ID, e.g. pgx/connect_four) in the Anakin loop")
        devices = jax.local_devices()
        for name in ("actor_devices", "learner_devices"):
            bad = [d for d in getattr(config, name) if d >= len(devices)]
            if bad:
                raise ValueError(f"{name} {bad} do not exist: jax sees {len(devices)} device(s) in this process")
        self.actor_devices = [devices[i] for i in config.actor_devices]
        # With jax.distributed, every process runs the same layout: the learner mesh is each
        # process's learner devices, process after process; actors and envs stay local.
        self.learner_devices = [device for p in range(jax.process_count())
                                for device in (process_devices(p)[i] for i in config.learner_devices)]
        self.stack_plan = StackPlan.create(config.env_id, config.env_kwargs) if config.stack_on_device else None
        spec = envs.make_spec(config.env_id, **self._pool_kwargs())
        # A multi-player pool's batch has a row per (env, player), an env's players consecutive:
        # the agent, the trajectories and the learner see rows (envs/players.py).
        self.num_players = spec.config["max_num_players"]
        rows = config.num_envs * self.num_players
        self.sharding = LearnerSharding.create(self.learner_devices, rows)
        key_learner, key_actors = jax.random.split(jax.random.key(config.seed))
        if jax.process_count() > 1:
            key_actors = jax.random.fold_in(key_actors, jax.process_index())
        frame_stack = self.stack_plan.num if self.stack_plan is not None and agent.accepts_frames else 1
        # Each learner device learns from its own process's envs: num_envs / local learner devices.
        layout = experience_layout(config, self.num_players, config.num_inferencers, frame_stack)
        self.learner = Learner(agent, self.sharding, layout, key_learner)
        self.staging = Staging(self.actor_devices)
        self.staging.publish(self.learner.version, self.learner.networks)
        self.cycle = CycleFunctions(agent, config.steps_per_cycle, self.stack_plan)
        actor_keys = jax.random.split(key_actors, config.num_inferencers)
        self.inferencers: list[Inferencer] = []
        started = time.perf_counter()
        log.info(f"compiling the act and the update while {config.num_inferencers} env pool(s) of {config.num_envs} "
                 f"{config.env_id} envs build ...")
        compiling = CompilingAhead(agent, self.cycle, self.learner, self.sharding, spec, self.actor_devices,
                                   config.num_envs)
        try:
            for i in range(config.num_inferencers):  # while the cycle and the update compile
                device = self.actor_devices[i // config.inferencers_per_device]
                self.inferencers.append(Inferencer(i, agent, self.cycle, device, self._pool_factory(i), self.sharding,
                                                   actor_keys[i]))
            pools_s = time.perf_counter() - started
            compiling.join()
        except BaseException:
            compiling.join(raise_errors=False)
            self.close()
            raise
        log.info(f"ready in {time.perf_counter() - started:.1f} s: env pools built in {pools_s:.1f} s, act and update "
                 f"compiled in {compiling.seconds:.1f} s")
        self.queue: queue.Queue[CycleResult] = queue.Queue(maxsize=config.queue_size)
        self.reports: list[dict] = []
        self.task = Task()
        self._threads: list[InferencerThread] = []
        self._stop = threading.Event()
        self._errors: list[tuple[int, BaseException]] = []
        self.window = MetricsWindow(num_players=self.num_players, player_names=spec.player_names)
        self.state = LoopState(self.learner, self.inferencers, self.staging, self.window, config.async_mode,
                               loop_layout(config))
        self.stop_requested = False
        self._closed = False

    def _pool_kwargs(self) -> dict:
        c = self.config
        return dict(c.env_kwargs) if self.stack_plan is None else self.stack_plan.pool_kwargs(c.env_kwargs)

    def _pool_factory(self, i: int) -> Callable[[], envs.EnvPool]:
        """Inferencer i's pool: env j of it is seeded seed + i * num_envs + j (distinct envs in
        every process)."""
        c = self.config
        first = (jax.process_index() * c.num_inferencers + i) * c.num_envs
        kwargs = self._pool_kwargs()
        return lambda: envs.make(c.env_id, num_envs=c.num_envs, seed=c.seed + first, **kwargs)

    # ------------------------------------------------------------------ running
    def run(
        self,
        max_env_steps: int | None = None,
        max_cycles: int | None = None,
        middleware: Sequence[Middleware] = (),
        report: Callable[[dict], None] | None = None,
        checkpointer: Checkpointer | None = None,
        resume: bool = False,
    ) -> LoopContext:
        """Learn until max_env_steps env steps or max_cycles learner updates (one must be set),
        counted from the start of training (a resumed run continues the count); env steps are
        the job's, every process's together, in a multi-process job.

        `middleware` runs after publishing the networks and before the stop check and metrics;
        `report` receives each metrics report (every `config.log_every_s` seconds, and at the end).
        With a `checkpointer`, the loop saves every `every_learner_steps` and when the run ends or
        stops on `request_stop()`; `resume` first loads its latest complete checkpoint.
        """
        ctx = start_run(self, max_env_steps, max_cycles, checkpointer, resume)
        save = None if checkpointer is None else (lambda c: self.save(checkpointer, c.env_steps, c.learner_steps))
        async_mode = self.config.async_mode
        with self.task.start(async_mode=async_mode, ctx=ctx):
            steps = (fetch_trajectories(self.learner, self.inferencers, self.pop_result if async_mode else None,
                                        jax.process_count()),
                     learn(self.learner), publish_networks(self.learner, self.staging))
            use_pipeline(self.task, ctx, steps, middleware, lambda: self.stop_requested, self.window,
                         self.config.log_every_s, max_env_steps, max_cycles,
                         track_metrics(self.window, self.task, self.actor_wait_s, len(self.inferencers), async_mode,
                                       self.reports, report),
                         save, None if checkpointer is None else checkpointer.config.every_learner_steps)
            if async_mode:
                self._start_threads()
            try:
                ctx = self.task.run()
            except NonFiniteError:
                self._stop_threads()
                if save is not None:  # the learner kept its last good state: save it, then report
                    save(self.task.ctx)
                raise
            finally:
                self._stop_threads()
        if save is not None:
            save(ctx)  # a clean end: the final state
        return ctx

    def save(self, checkpointer: Checkpointer, env_steps: int, learner_steps: int) -> None:
        """A checkpoint at learner_steps (`Checkpointer.save`: skipped in sync mode before every
        inferencer ran a cycle)."""
        checkpointer.save(self.state, env_steps, learner_steps)

    def restore(self, checkpointer: Checkpointer, step: int | None = None) -> dict:
        """Load the checkpointer's latest complete checkpoint (or `step`) into this loop; returns
        its metadata (counters)."""
        return checkpointer.restore(self.state, step)

    def request_stop(self) -> None:
        """Stop at the end of the current learner iteration (e.g. from a signal handler); a
        run with a checkpointer then saves its final state."""
        self.stop_requested = True

    @property
    def closed(self) -> bool:
        return getattr(self, "_closed", False)

    @property
    def synchronous(self) -> bool:
        """Sync mode: each cycle then its update, in the calling thread."""
        return not self.config.async_mode

    @property
    def eval_device(self) -> jax.Device:
        """Where evaluation during training runs: the first actor device."""
        return self.inferencers[0].device

    def start_inferencers(self) -> None:
        """Reset every pool and build every step state now."""
        self.state.start_inferencers()

    def _start_threads(self) -> None:
        self._stop.clear()
        self._errors.clear()
        self._threads = [
            InferencerThread(inf, self.staging, self._put, self._stop, self._on_error) for inf in self.inferencers
        ]
        for t in self._threads:
            t.start()

    def _stop_threads(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(JOIN_TIMEOUT_S)
            if t.is_alive():
                log.warning(f"{t.name} did not stop within {JOIN_TIMEOUT_S:.0f} s")
        while not self.queue.empty():  # drop cycles nobody will learn from
            self.queue.get_nowait()

    def _put(self, result: CycleResult) -> float:
        """Inferencer side: push onto the bounded queue, waiting while it is full."""
        t = time.perf_counter()
        while not self._stop.is_set():
            try:
                self.queue.put(result, timeout=POLL_S)
                break
            except queue.Full:
                continue
        return time.perf_counter() - t

    def _on_error(self, index: int, error: BaseException) -> None:
        self._errors.append((index, error))
        self._stop.set()

    def pop_result(self) -> CycleResult:
        """Learner side: the next cycle from the queue; re-raises an inferencer's failure."""
        while True:
            self._raise_errors()
            try:
                return self.queue.get(timeout=POLL_S)
            except queue.Empty:
                if not any(t.is_alive() for t in self._threads):
                    self._raise_errors()
                    raise InferencerError("every inferencer thread has stopped; no trajectories will come") from None

    def _raise_errors(self) -> None:
        if self._errors:
            index, error = self._errors[0]
            raise InferencerError(f"inferencer {index} failed: {type(error).__name__}: {error}") from error

    def actor_wait_s(self) -> float:
        """Total time the inferencer threads spent blocked on a full queue."""
        return sum(t.wait_s for t in self._threads)

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        """Stop threads and close every env pool. Idempotent."""
        if self.closed:
            return
        self._closed = True
        if hasattr(self, "_stop"):
            self._stop_threads()
        for inf in getattr(self, "inferencers", []):
            inf.close()

    def __enter__(self) -> GymnasiumLoop:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
