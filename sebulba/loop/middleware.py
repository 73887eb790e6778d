"""The learner-side middleware of a GymnasiumLoop (seed 003): fetch, learn, publish, measure,
stop. Each is a factory `mw(loop, ...) -> fn(ctx)`; users insert their own between them."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from sebulba.loop.task import Context, Task

if TYPE_CHECKING:
    from sebulba.loop.loop import GymnasiumLoop

log = logging.getLogger("sebulba")


@dataclasses.dataclass(kw_only=True)
class LoopContext(Context):
    """One learner iteration: one cycle's result learned from."""

    env_steps: int = 0  # kept: env steps consumed by the learner so far
    learner_steps: int = 0  # kept: learner updates so far
    result: Any = None  # the CycleResult fetched this iteration
    fetch_wait_s: float = 0.0  # time the learner waited for it
    policy_lag: int = 0  # learner version minus the version that acted
    train_metrics: dict = dataclasses.field(default_factory=dict)  # device scalars from the update
    report: dict = dataclasses.field(default_factory=dict)  # set when a logging interval closes

    def __post_init__(self) -> None:
        self.keep("env_steps", "learner_steps")


def fetch_trajectories(loop: GymnasiumLoop) -> Callable[[LoopContext], None]:
    """Async: pop the next cycle from the queue. Sync: run the next inferencer's cycle now, with
    the networks of the previous update (round robin over inferencers)."""

    def fetch(ctx: LoopContext) -> None:
        t = time.perf_counter()
        if loop.config.async_mode:
            ctx.result = loop.pop_result()
        else:
            inf = loop.inferencers[ctx.learner_steps % len(loop.inferencers)]
            ctx.result = inf.run_cycle(loop.learner.version, loop.learner.networks)
        ctx.fetch_wait_s = time.perf_counter() - t if loop.config.async_mode else 0.0
        ctx.env_steps += ctx.result.env_steps
        ctx.policy_lag = loop.learner.version - ctx.result.policy_version

    return fetch


def learn(loop: GymnasiumLoop) -> Callable[[LoopContext], None]:
    """update_experience + optimizer step(s) on the learner devices."""

    def learn_mw(ctx: LoopContext) -> None:
        r = ctx.result
        # Block until the update is done: otherwise its compute would count as queue wait.
        ctx.train_metrics = jax.block_until_ready(loop.learner.update(r.initial_step_state, r.final_step_state, r.trajectory))
        ctx.learner_steps += 1

    return learn_mw


def publish_networks(loop: GymnasiumLoop) -> Callable[[LoopContext], None]:
    """Offer the new networks to the inferencers (staging deque, latest wins)."""

    def publish(ctx: LoopContext) -> None:
        loop.staging.publish(loop.learner.version, loop.learner.networks)

    return publish


class MetricsWindow:
    """Aggregates per-iteration figures into one report per logging interval."""

    def __init__(self, recent_episodes: int = 20):
        self.returns: deque[float] = deque(maxlen=recent_episodes)
        self.lengths: deque[int] = deque(maxlen=recent_episodes)
        self.episodes = 0
        self._reset(time.perf_counter(), 0, 0)

    def restart(self, env_steps: int, learner_steps: int) -> None:
        """A new run's first interval starts now, at these counters."""
        self._reset(time.perf_counter(), env_steps, learner_steps)

    def load(self, meta: dict) -> None:
        """Episode statistics from a checkpoint's metadata."""
        self.returns.clear()
        self.lengths.clear()
        self.returns.extend(meta.get("returns", []))
        self.lengths.extend(meta.get("lengths", []))
        self.episodes = meta.get("episodes", 0)

    def _reset(self, now: float, env_steps: int, learner_steps: int) -> None:
        self.start, self.env_steps0, self.learner_steps0 = now, env_steps, learner_steps
        self.learner_wait = self.lag_sum = 0.0
        self.iterations = 0
        self.actor_wait0 = None

    def add(self, ctx: LoopContext) -> None:
        r = ctx.result
        self.returns.extend(r.episode_returns.tolist())
        self.lengths.extend(r.episode_lengths.tolist())
        self.episodes += len(r.episode_returns)
        self.learner_wait += ctx.fetch_wait_s
        self.lag_sum += ctx.policy_lag
        self.iterations += 1

    def report(self, ctx: LoopContext, actor_wait_s: float, num_actors: int) -> dict[str, float]:
        now = time.perf_counter()
        dt = max(now - self.start, 1e-9)
        actor_wait = (actor_wait_s - (self.actor_wait0 or 0.0)) / max(num_actors, 1)
        out = {
            "env_steps": ctx.env_steps,
            "learner_steps": ctx.learner_steps,
            "episodes": self.episodes,
            "sps": (ctx.env_steps - self.env_steps0) / dt,
            "updates_per_s": (ctx.learner_steps - self.learner_steps0) / dt,
            "policy_lag": self.lag_sum / max(self.iterations, 1),
            "learner_wait_frac": self.learner_wait / dt,
            "actor_wait_frac": actor_wait / dt,
            "episode_return_mean": float(np.mean(self.returns)) if self.returns else float("nan"),
            "episode_length_mean": float(np.mean(self.lengths)) if self.lengths else float("nan"),
        }
        out.update({k: float(v) for k, v in ctx.train_metrics.items()})
        self._reset(now, ctx.env_steps, ctx.learner_steps)
        self.actor_wait0 = actor_wait_s
        return out


def track_metrics(loop: GymnasiumLoop, every_s: float, sink: Callable[[dict], None] | None = None) -> Callable[[LoopContext], None]:
    """Every `every_s` seconds: a report of env steps/s, updates/s, policy lag, both sides' queue
    waits and recent returns, into `loop.reports` and `sink`. Warns on a one-sided bottleneck.
    Episode statistics live in `loop.window`, so they carry over runs and checkpoints."""
    window = loop.window

    def track(ctx: LoopContext) -> None:
        window.add(ctx)
        if time.perf_counter() - window.start < every_s and not loop.task.finished:
            return
        report = window.report(ctx, loop.actor_wait_s(), len(loop.inferencers))
        ctx.report = report
        loop.reports.append(report)
        if loop.config.async_mode:
            a, l = report["actor_wait_frac"], report["learner_wait_frac"]
            if max(a, l) > 0.05 and max(a, l) > 5 * max(min(a, l), 1e-9):
                side, other = ("actors", "learner") if a > l else ("learner", "actors")
                verb = "are" if other == "actors" else "is"
                log.warning(f"{side} waited {max(a, l):.0%} of the time, over 5x as much as the {other}: "
                            f"the {other} {verb} the bottleneck")
        if sink is not None:
            sink(report)

    return track


def save_checkpoints(loop: GymnasiumLoop, checkpointer: Any) -> Callable[[LoopContext], None]:
    """Every `checkpointer.config.every_learner_steps` learner steps, a checkpoint."""
    every = checkpointer.config.every_learner_steps

    def save(ctx: LoopContext) -> None:
        if ctx.learner_steps % every == 0:
            checkpointer.save(loop, ctx, loop.window)

    return save


def stop_on_request(loop: GymnasiumLoop, task: Task) -> Callable[[LoopContext], None]:
    """Finish at the end of this iteration once `loop.request_stop()` was called (a signal)."""

    def stop(ctx: LoopContext) -> None:
        if loop.stop_requested:
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
