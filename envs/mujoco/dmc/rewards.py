"""dm_control's `rewards.tolerance` over arrays: 1 inside the bounds, a sigmoid of the distance
outside them (scaled so the value at `margin` is `value_at_margin`). The same operations in the
same order as dm_control's, so a batch's values are what dm_control's tolerance gives on the same
array (numpy's vector loops for exp and friends may differ from its scalar ones in the last bit).

A pool calls these once a step on arrays of a few dozen values, where each numpy call's fixed cost
(~1 us) is the whole cost: the sigmoids' scales are computed once per `value_at_1`, and a point
target (lower == upper, the common case) skips the in-bounds select, which changes no value: the
distance |x - c| is bit for bit dm_control's (c - x where x < c, else x - c), and every sigmoid is
exactly 1 at a distance of 0."""

from __future__ import annotations

import functools

import numpy as np

VALUE_AT_MARGIN = 0.1
KINDS = ("gaussian", "hyperbolic", "long_tail", "reciprocal", "cosine", "linear", "quadratic", "tanh_squared")


@functools.lru_cache(maxsize=None)
def scale(kind: str, value_at_1: float) -> float:
    """The factor on x that makes `kind`'s sigmoid value_at_1 at x == 1 (dm_control's, in numpy)."""
    if kind == "gaussian":
        return np.sqrt(-2 * np.log(value_at_1))
    if kind == "hyperbolic":
        return np.arccosh(1 / value_at_1)
    if kind == "long_tail":
        return np.sqrt(1 / value_at_1 - 1)
    if kind == "reciprocal":
        return 1 / value_at_1 - 1
    if kind == "cosine":
        return np.arccos(2 * value_at_1 - 1) / np.pi
    if kind == "linear":
        return 1 - value_at_1
    if kind == "quadratic":
        return np.sqrt(1 - value_at_1)
    if kind == "tanh_squared":
        return np.arctanh(np.sqrt(1 - value_at_1))
    raise ValueError(f"unknown sigmoid {kind!r} (one of {', '.join(KINDS)})")


def sigmoid(x: np.ndarray, value_at_1: float, kind: str) -> np.ndarray:
    """1 at x == 0, falling to value_at_1 at x == 1 (dm_control's `_sigmoids`)."""
    k = scale(kind, value_at_1)
    if kind == "gaussian":
        return np.exp(-0.5 * (x * k) ** 2)
    if kind == "hyperbolic":
        return 1 / np.cosh(x * k)
    if kind == "long_tail":
        return 1 / ((x * k) ** 2 + 1)
    if kind == "reciprocal":
        return 1 / (abs(x) * k + 1)
    if kind == "cosine":
        scaled = x * k
        with np.errstate(invalid="ignore"):
            cos = np.cos(np.pi * scaled)
        return np.where(abs(scaled) < 1, (1 + cos) / 2, 0.0)
    if kind == "linear":
        scaled = x * k
        return np.where(abs(scaled) < 1, 1 - scaled, 0.0)
    if kind == "quadratic":  # 1 - scaled ** 2 where |scaled| < 1, else 0 (NaN too): fmax gives the same
        return np.fmax(1 - (x * k) ** 2, 0.0)
    # tanh_squared (scale refused any other kind)
    return 1 - np.tanh(x * k) ** 2


def tolerance(x: np.ndarray, bounds: tuple[float, float] = (0.0, 0.0), margin: float = 0.0, kind: str = "gaussian",
              value_at_margin: float = VALUE_AT_MARGIN) -> np.ndarray:
    lower, upper = bounds
    if margin != 0 and lower == upper:  # a point: no select needed (see the module's docstring)
        return sigmoid(abs(x - lower) / margin, value_at_margin, kind)
    in_bounds = np.logical_and(lower <= x, x <= upper)
    if margin == 0:
        return np.where(in_bounds, 1.0, 0.0)
    d = np.where(x < lower, lower - x, x - upper) / margin
    return np.where(in_bounds, 1.0, sigmoid(d, value_at_margin, kind))
