"""MetricsWindow: a process's per-iteration figures aggregated into one report per logging
interval, and its recent episode statistics, which carry over runs and checkpoints; SeedWindows:
the same statistics per replica of an Anakin run with `num_seeds` > 1."""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from sebulba.loop.processes import allgather


class MetricsWindow:
    """Aggregates per-iteration figures into one report per logging interval. With players (a
    multi-player pool: an episode per player per env episode), the report also has each player's
    recent mean return and length (`episode_return_mean_player{i}`, NaN before its first episode:
    the keys are in every report, so metrics.csv has their columns from the first row); the
    headline means are over every player's episodes of the last `recent_episodes` env episodes
    (recent_episodes x num_players episodes). With `player_names` of two teams or more (`teams`:
    simple_tag's adversary_0..2 and agent_0), each team's too: `episode_return_mean_{team}`."""

    def __init__(self, recent_episodes: int = 20, num_players: int = 1, player_names: Sequence[str] = ()):
        self.returns: deque[float] = deque(maxlen=recent_episodes * num_players)
        self.lengths: deque[int] = deque(maxlen=recent_episodes * num_players)
        self.num_players = num_players
        # per player (multi-player pools): its own recent episodes; not checkpointed (they refill)
        self.player_returns = [deque(maxlen=recent_episodes) for _ in range(num_players if num_players > 1 else 0)]
        self.player_lengths = [deque(maxlen=recent_episodes) for _ in range(num_players if num_players > 1 else 0)]
        self.team_of = teams(player_names) if num_players > 1 else []  # a team index per player, or []
        names = sorted(set(self.team_of), key=self.team_of.index)
        self.team_names = [team_name(player_names[self.team_of.index(t)]) for t in names]
        self.team_returns = [deque(maxlen=recent_episodes * self.team_of.count(t)) for t in names]
        self.episodes = 0
        self._reset(time.perf_counter(), 0, 0)

    def restart(self, env_steps: int, learner_steps: int) -> None:
        """A new run's first interval starts now, at these counters."""
        self._reset(time.perf_counter(), env_steps, learner_steps)

    def state(self) -> dict[str, np.ndarray]:
        """The episode statistics as fixed-shape arrays (what a checkpoint saves per process)."""
        n = self.returns.maxlen
        returns, lengths = np.zeros(n, np.float64), np.zeros(n, np.int64)
        returns[:len(self.returns)] = list(self.returns)
        lengths[:len(self.lengths)] = list(self.lengths)
        return {"returns": returns, "lengths": lengths, "recent": np.int64(len(self.returns)),
                "episodes": np.int64(self.episodes)}

    def load(self, state: dict[str, Any]) -> None:
        """Episode statistics saved by `state()`."""
        recent = int(state["recent"])
        self.returns.clear()
        self.lengths.clear()
        self.returns.extend(float(r) for r in np.asarray(state["returns"])[:recent])
        self.lengths.extend(int(n) for n in np.asarray(state["lengths"])[:recent])
        self.episodes = int(state["episodes"])

    def _reset(self, now: float, env_steps: int, learner_steps: int) -> None:
        self.start, self.env_steps0, self.learner_steps0 = now, env_steps, learner_steps
        self.learner_wait = self.lag_sum = 0.0
        self.iterations = self.own_env_steps = 0
        self.actor_wait0 = None

    def due(self, every_s: float) -> bool:
        """Whether the logging interval has closed."""
        return time.perf_counter() - self.start >= every_s

    def add(self, ctx: Any) -> None:
        r = ctx.result
        self.returns.extend(r.episode_returns.tolist())
        self.lengths.extend(r.episode_lengths.tolist())
        self.episodes += len(r.episode_returns)
        if self.player_returns and r.episode_players is not None:
            for p, ret, length in zip(r.episode_players.tolist(), r.episode_returns.tolist(), r.episode_lengths.tolist()):
                self.player_returns[p].append(ret)
                self.player_lengths[p].append(length)
                if self.team_of:
                    self.team_returns[self.team_of[p]].append(ret)
        self.own_env_steps += r.env_steps
        self.learner_wait += ctx.fetch_wait_s
        self.lag_sum += ctx.policy_lag
        self.iterations += 1

    def report(self, ctx: Any, actor_wait_s: float, num_actors: int) -> dict[str, float]:
        now = time.perf_counter()
        dt = max(now - self.start, 1e-9)
        actor_wait = (actor_wait_s - (self.actor_wait0 or 0.0)) / max(num_actors, 1)
        out = {
            "env_steps": ctx.env_steps,
            "learner_steps": ctx.learner_steps,
            "episodes": self.episodes,
            "sps": self.own_env_steps / dt,  # this process's actors (the job's with one process)
            "updates_per_s": (ctx.learner_steps - self.learner_steps0) / dt,
            "policy_lag": self.lag_sum / max(self.iterations, 1),
            "learner_wait_frac": self.learner_wait / dt,
            "actor_wait_frac": actor_wait / dt,
            "episode_return_mean": float(np.mean(self.returns)) if self.returns else float("nan"),
            "episode_length_mean": float(np.mean(self.lengths)) if self.lengths else float("nan"),
        }
        out.update(per_player_means(self.player_returns, self.player_lengths))
        out.update({f"episode_return_mean_{name}": float(np.mean(r)) if r else float("nan")
                    for name, r in zip(self.team_names, self.team_returns)})
        out.update({k: float(v) for k, v in ctx.train_metrics.items()})
        self._reset(now, ctx.env_steps, ctx.learner_steps)
        self.actor_wait0 = actor_wait_s
        return out


def team_name(player: str) -> str:
    """A player's team: its name without a trailing `_<number>` (PettingZoo's `adversary_1` -> `adversary`)."""
    return re.sub(r"_\d+$", "", player)


def teams(player_names: Sequence[str]) -> list[int]:
    """Each player's team index, in order of first appearance; [] unless the names form two
    teams or more and some team has two players or more (one team, a team per player, or no
    names: no team metrics beyond the players' own)."""
    names = [team_name(p) for p in player_names]
    order = list(dict.fromkeys(names))
    return [order.index(n) for n in names] if 1 < len(order) < len(names) else []


class SeedWindows:
    """The Anakin loop's replicas (`num_seeds` S > 1): each one's recent episode returns, and what
    a report adds for them. Empty (no windows, no metrics) with one replica."""

    def __init__(self, num_seeds: int, num_players: int = 1):
        self.windows = [MetricsWindow(num_players=num_players) for _ in range(num_seeds if num_seeds > 1 else 0)]

    def metrics(self, seed_returns: Sequence[np.ndarray]) -> dict[str, float]:
        """With the returns of each replica's episodes just ended: each replica's mean return over
        its last 20 episodes (`episode_return_mean_seed<s>`), and their mean
        (`episode_return_mean`, the learning curve's), min and max (its band)."""
        if not self.windows:
            return {}
        out = {}
        for s, (window, returns) in enumerate(zip(self.windows, seed_returns)):
            window.returns.extend(np.asarray(returns).tolist())
            out[f"episode_return_mean_seed{s}"] = float(np.mean(window.returns)) if window.returns else float("nan")
        return seed_band(out)

    def state(self) -> list[dict[str, np.ndarray]]:
        return [w.state() for w in self.windows]

    def load(self, states: Sequence[dict[str, Any]]) -> None:
        for window, state in zip(self.windows, states):
            window.load(state)


SEED_MEAN = "episode_return_mean_seed"  # + the replica's index: its mean return (SeedWindows)


def seed_band(report: dict[str, Any]) -> dict[str, Any]:
    """`report` with `episode_return_mean` and its `_min` and `_max` over the replicas'
    `episode_return_mean_seed<s>` (NaN ones left out); unchanged without them. A band is a min and
    a max of the replicas' means: in a job it is taken after the processes' means are joined."""
    means = [v for k, v in report.items() if k.startswith(SEED_MEAN) and k[len(SEED_MEAN):].isdigit()]
    if not means:
        return report
    finite = [m for m in means if np.isfinite(m)]
    nan = float("nan")
    return {**report, "episode_return_mean": float(np.mean(finite)) if finite else nan,
            "episode_return_mean_min": min(finite, default=nan), "episode_return_mean_max": max(finite, default=nan)}


def per_player_means(returns: list[deque], lengths: list[deque]) -> dict[str, float]:
    """`episode_return_mean_player{i}` and `episode_length_mean_player{i}` of each player's recent episodes."""
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    out = {f"episode_return_mean_player{i}": mean(r) for i, r in enumerate(returns)}
    out.update({f"episode_length_mean_player{i}": mean(n) for i, n in enumerate(lengths)})
    return out


SUMMED = ("sps", "episodes")  # the job's is the sum over processes; others are means (counters: equal everywhere)


def job_report(report: dict[str, Any]) -> dict[str, float] | None:
    """The job's report from every process's own `report` (same keys everywhere, taken at the
    same learner iteration): env steps/s and episodes summed, the rest averaged over processes
    (counters and learner metrics are equal on every process). A collective: every process calls
    it; process 0 gets the totals, the others None."""
    keys = sorted(k for k, v in report.items() if isinstance(v, (int, float, np.number)))
    rows = allgather(np.array([float(report[k]) for k in keys], np.float64))
    if jax.process_index() != 0:
        return None
    totals: dict[str, float] = {}
    for i, k in enumerate(keys):
        column = rows[:, i]
        totals[k] = float(column.sum()) if k in SUMMED else float(np.nanmean(column)) if np.isfinite(column).any() else float("nan")
    for k in ("env_steps", "learner_steps", "episodes"):
        if k in totals:
            totals[k] = int(totals[k])
    return seed_band({k: totals[k] for k in report if k in totals})  # the band of the job's replica means
