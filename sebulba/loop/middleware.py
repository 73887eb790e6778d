"""The learner-side middleware of a GymnasiumLoop (di-engine-docs.readthedocs.io): fetch, learn, publish, decide,
measure, stop. Each is a factory `mw(...) -> fn(ctx)` taking the parts it works on (the learner,
the inferencers, the staging area, ...), not the loop; users insert their own between them."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax

from sebulba.loop.inferencer import CycleResult, Inferencer
from sebulba.loop.learner import Learner
from sebulba.loop.metrics import MetricsWindow
from sebulba.loop.processes import Votes
from sebulba.loop.staging import Staging
from sebulba.loop.task import Context, Middleware, Task

log = logging.getLogger("sebulba")


@dataclasses.dataclass(kw_only=True)
class LoopContext(Context):
    """One learner iteration: one cycle's result learned from."""

    env_steps: int = 0  # kept: env steps consumed by the learner so far (every process's)
    learner_steps: int = 0  # kept: learner steps so far, i.e. cycles learned (each `Schedule.optimizer_steps` optimizer steps)
    result: Any = None  # the CycleResult fetched this iteration
    fetch_wait_s: float = 0.0  # time the learner waited for it
    policy_lag: int = 0  # learner version minus the version that acted
    train_metrics: dict = dataclasses.field(default_factory=dict)  # device scalars from the update
    stop: bool = False  # every process stops after this iteration (a signal in any of them)
    report_due: bool = False  # every process writes a metrics report this iteration
    report: dict = dataclasses.field(default_factory=dict)  # set when a logging interval closes

    def __post_init__(self) -> None:
        self.keep("env_steps", "learner_steps")


def start_run(loop: Any, max_env_steps: int | None, max_cycles: int | None, checkpointer: Any,
              resume: bool) -> LoopContext:
    """What every loop's `run` does first: check its arguments, load the checkpointer's latest
    checkpoint when resuming (the counters continue), restart the metrics window and clear a
    stop request. `loop` keeps the `Loop` contract (sebulba/loop/contract.py)."""
    if loop.closed:
        raise RuntimeError(f"run() on a closed {type(loop).__name__}")
    if max_env_steps is None and max_cycles is None:
        raise ValueError("set max_env_steps or max_cycles")
    for name, v in (("max_env_steps", max_env_steps), ("max_cycles", max_cycles)):
        if v is not None and (not isinstance(v, int) or v < 1):
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if resume and checkpointer is None:
        raise ValueError("resume=True needs a checkpointer")
    ctx = LoopContext()
    if resume:
        meta = loop.restore(checkpointer)
        ctx.env_steps, ctx.learner_steps = meta["env_steps"], meta["learner_steps"]
    loop.window.restart(ctx.env_steps, ctx.learner_steps)
    loop.stop_requested = False
    return ctx


def fetch_trajectories(learner: Learner, inferencers: Sequence[Inferencer],
                       pop_result: Callable[[], CycleResult] | None, processes: int = 1) -> Callable[[LoopContext], None]:
    """Async (`pop_result` given): pop the next cycle from the queue. Sync: run the next
    inferencer's cycle now, with the networks of the previous update (round robin). In a job of
    `processes` processes every process fetches one cycle of the same size per iteration, so the
    job's env steps grow by `processes` times this one's."""

    def fetch(ctx: LoopContext) -> None:
        t = time.perf_counter()
        if pop_result is not None:
            ctx.result = pop_result()
            ctx.fetch_wait_s = time.perf_counter() - t
        else:
            inf = inferencers[ctx.learner_steps % len(inferencers)]
            ctx.result = inf.run_cycle(learner.version, learner.networks)
            ctx.fetch_wait_s = 0.0
        ctx.env_steps += ctx.result.env_steps * processes
        ctx.policy_lag = learner.version - ctx.result.policy_version

    return fetch


def learn(learner: Learner) -> Callable[[LoopContext], None]:
    """update_experience + optimizer step(s) on the learner devices."""

    def learn_mw(ctx: LoopContext) -> None:
        r = ctx.result
        # Block until the update is done: otherwise its compute would count as queue wait.
        ctx.train_metrics = jax.block_until_ready(learner.update(r.initial_step_state, r.final_step_state, r.trajectory))
        ctx.learner_steps += 1

    return learn_mw


def publish_networks(learner: Learner, staging: Staging) -> Callable[[LoopContext], None]:
    """Offer the new networks to the inferencers (staging deque, latest wins)."""

    def publish(ctx: LoopContext) -> None:
        staging.publish(learner.version, learner.networks)

    return publish


def decide(stop_requested: Callable[[], bool], window: MetricsWindow, every_s: float,
           votes: Votes | None = None) -> Callable[[LoopContext], None]:
    """Sets ctx.stop (a stop was requested, e.g. by a signal) and ctx.report_due (the logging
    interval closed). With several processes both are votes every process reads at the same
    iteration (`Votes`): any process's stop request stops them all, and process 0's clock times
    the reports, so no process waits alone in a collective."""
    votes = votes or Votes(2)
    first = jax.process_index() == 0

    def decide_mw(ctx: LoopContext) -> None:
        ctx.stop, ctx.report_due = votes((stop_requested(), first and window.due(every_s)))

    return decide_mw


def track_metrics(window: MetricsWindow, task: Task, actor_wait_s: Callable[[], float], num_actors: int,
                  async_mode: bool, reports: list[dict], sink: Callable[[dict], None] | None = None
                  ) -> Callable[[LoopContext], None]:
    """When ctx.report_due (see `decide`) or at the end: a report of env steps/s, updates/s,
    policy lag, both sides' queue waits and recent returns, appended to `reports` and passed to
    `sink`. Warns on a one-sided bottleneck. Episode statistics live in `window`, so they carry
    over runs and checkpoints."""

    def track(ctx: LoopContext) -> None:
        window.add(ctx)
        if not ctx.report_due and not task.finished:
            return
        report = window.report(ctx, actor_wait_s(), num_actors)
        ctx.report = report
        reports.append(report)
        if async_mode:
            a, l = report["actor_wait_frac"], report["learner_wait_frac"]
            if max(a, l) > 0.05 and max(a, l) > 5 * max(min(a, l), 1e-9):
                side, other = ("actors", "learner") if a > l else ("learner", "actors")
                verb = "are" if other == "actors" else "is"
                log.warning(f"{side} waited {max(a, l):.0%} of the time, over 5x as much as the {other}: "
                            f"the {other} {verb} the bottleneck")
        if sink is not None:
            sink(report)

    return track


def save_checkpoints(save: Callable[[LoopContext], None], every_learner_steps: int,
                     start_learner_steps: int = 0) -> Callable[[LoopContext], None]:
    """`save(ctx)` (a checkpoint) at the iteration whose learner steps reach or pass a multiple of
    `every_learner_steps` (one learner step per iteration: at each multiple; an Anakin call of
    many: at the first call past one), counting from `start_learner_steps` (a resume's)."""
    previous = start_learner_steps

    def save_mw(ctx: LoopContext) -> None:
        nonlocal previous
        if ctx.learner_steps // every_learner_steps > previous // every_learner_steps:
            save(ctx)
        previous = ctx.learner_steps

    return save_mw


def use_pipeline(task: Task, ctx: LoopContext, steps: Sequence[Middleware], user: Sequence[Middleware],
                 stop_requested: Callable[[], bool], window: MetricsWindow, log_every_s: float,
                 max_env_steps: int | None, max_cycles: int | None, track: Middleware,
                 save: Callable[[LoopContext], None] | None, every_learner_steps: int | None) -> None:
    """Either loop's middleware pipeline, in its order: the loop's own `steps` (Sebulba: fetch,
    learn, publish; Anakin: one call of its program), the user's middleware, `decide`, the stop on
    request and after the budget, `track` (the metrics), and last `save_checkpoints` when `save`
    is given (the saved episode statistics include this iteration's)."""
    for mw in (*steps, *user):
        task.use(mw)
    task.use(decide(stop_requested, window, log_every_s, Votes(2)))
    task.use(stop_on_request(task))
    task.use(stop_after(task, max_env_steps, max_cycles))
    task.use(track)
    if save is not None:
        task.use(save_checkpoints(save, every_learner_steps, ctx.learner_steps))


def stop_on_request(task: Task) -> Callable[[LoopContext], None]:
    """Finish at the end of this iteration when ctx.stop (a stop was requested: see `decide`)."""

    def stop(ctx: LoopContext) -> None:
        if ctx.stop:
            task.finish()

    return stop


def stop_after(task: Task, max_env_steps: int | None, max_cycles: int | None) -> Callable[[LoopContext], None]:
    """Finish the task once the learner consumed max_env_steps env steps or max_cycles cycles."""

    def stop(ctx: LoopContext) -> None:
        if (max_env_steps is not None and ctx.env_steps >= max_env_steps) or (
            max_cycles is not None and ctx.learner_steps >= max_cycles
        ):
            task.finish()

    return stop
