"""Aggregate scores over tasks and seeds, as Agarwal et al. (2021, "Deep RL at the Edge of the
Statistical Precipice") report them: normalised scores, the interquartile mean, median and mean
with 95% stratified-bootstrap percentile intervals, and performance profiles (score
distributions). Their definitions are `rliable`'s; the code is numpy's, not rliable's (why:
docs/decisions/benchmark-suites.md). Pure functions over arrays, checked against hand computations
and a plain loop in tests/test_bench_suite.py.

A score matrix is [runs, tasks]: run n of task m (the seeds), every task with the same number of
runs; normalised so that 0 is a uniformly random policy and 1 the task's reference score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

METRICS = ("IQM", "median", "mean")


class Estimate(NamedTuple):
    """A point estimate and its confidence interval [low, high]."""

    value: float
    low: float
    high: float


def normalise(returns: np.ndarray, random: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(return - random) / (reference - random), per task (the last axis): 0 is a uniformly random
    policy, 1 the reference. Raises ValueError where a reference equals its random score."""
    random, reference = np.asarray(random, float), np.asarray(reference, float)
    span = reference - random
    if np.any(span == 0):
        raise ValueError(f"a task's reference equals its random score ({reference[span == 0]}): nothing to normalise by")
    return (np.asarray(returns, float) - random) / span


def _trimmed_mean(x: np.ndarray) -> np.ndarray:
    """The mean of the middle 50% of the last axis, dropping floor(n / 4) values from each end (as
    scipy's trim_mean(x, 0.25) does)."""
    x = np.sort(x, axis=-1)
    cut = x.shape[-1] // 4
    return x[..., cut:x.shape[-1] - cut].mean(-1)


def iqm(scores: np.ndarray) -> float:
    """The interquartile mean of all the scores (every run of every task): rliable's
    `aggregate_iqm`."""
    return float(_trimmed_mean(np.asarray(scores, float).reshape(-1)))


def _runs_and_tasks(s: np.ndarray) -> np.ndarray:
    return s.reshape(*s.shape[:-2], -1)  # [..., runs, tasks] -> [..., runs x tasks]


AGGREGATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {  # of score matrices [..., runs, tasks]
    "IQM": lambda s: _trimmed_mean(_runs_and_tasks(s)),
    "median": lambda s: np.median(_runs_and_tasks(s), axis=-1),
    "mean": lambda s: _runs_and_tasks(s).mean(-1),
}


def stratified_resamples(scores: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """`reps` bootstrap copies [reps, runs, tasks] of a score matrix, each task's runs drawn with
    replacement from that task's own (rliable's StratifiedBootstrap: the tasks are strata)."""
    runs, tasks = scores.shape
    rows = rng.integers(0, runs, size=(reps, runs, tasks))
    return scores[rows, np.arange(tasks)]


def interval_estimates(score_dict: Mapping[str, np.ndarray], reps: int = 2000, seed: int = 0,
                       size: float = 0.95) -> dict[str, dict[str, Estimate]]:
    """{agent: {"IQM" | "median" | "mean": Estimate}} from {agent: scores [runs, tasks]}: each
    aggregate on the scores, within the `size` percentile interval of its values on `reps`
    stratified bootstrap resamples (numpy's Generator seeded with `seed`, one per agent in order)."""
    out = {}
    for i, (name, scores) in enumerate(score_dict.items()):
        scores = np.asarray(scores, float)
        if scores.ndim != 2 or min(scores.shape) < 1 or not np.isfinite(scores).all():
            raise ValueError(f"{name}: scores must be a finite [runs, tasks] matrix, got shape {scores.shape}")
        samples = stratified_resamples(scores, reps, np.random.default_rng([seed, i]))
        tail = 100 * (1 - size) / 2
        out[name] = {}
        for metric, fn in AGGREGATES.items():
            low, high = np.percentile(fn(samples), [tail, 100 - tail])
            out[name][metric] = Estimate(float(fn(scores)), float(low), float(high))
    return out


def performance_profile(score_dict: Mapping[str, np.ndarray], taus: Sequence[float]) -> dict[str, np.ndarray]:
    """{agent: the share of its runs (of every task) scoring above each tau}: the run-score
    distribution, rliable's default performance profile."""
    return {k: np.array([np.mean(np.asarray(v, float) > t) for t in taus]) for k, v in score_dict.items()}
