"""dm_control's `rewards.tolerance` over arrays: 1 inside the bounds, a sigmoid of the distance
outside them (scaled so the value at `margin` is `value_at_margin`). The same operations in the
same order as dm_control's, so a batch's values are its scalars' values."""

from __future__ import annotations

import numpy as np

VALUE_AT_MARGIN = 0.1


def sigmoid(x: np.ndarray, value_at_1: float, kind: str) -> np.ndarray:
    """1 at x == 0, falling to value_at_1 at x == 1 (dm_control's `_sigmoids`)."""
    if kind == "gaussian":
        scale = np.sqrt(-2 * np.log(value_at_1))
        return np.exp(-0.5 * (x * scale) ** 2)
    if kind == "hyperbolic":
        return 1 / np.cosh(x * np.arccosh(1 / value_at_1))
    if kind == "long_tail":
        return 1 / ((x * np.sqrt(1 / value_at_1 - 1)) ** 2 + 1)
    if kind == "reciprocal":
        return 1 / (abs(x) * (1 / value_at_1 - 1) + 1)
    if kind == "cosine":
        scaled = x * (np.arccos(2 * value_at_1 - 1) / np.pi)
        with np.errstate(invalid="ignore"):
            cos = np.cos(np.pi * scaled)
        return np.where(abs(scaled) < 1, (1 + cos) / 2, 0.0)
    if kind == "linear":
        scaled = x * (1 - value_at_1)
        return np.where(abs(scaled) < 1, 1 - scaled, 0.0)
    if kind == "quadratic":
        scaled = x * np.sqrt(1 - value_at_1)
        return np.where(abs(scaled) < 1, 1 - scaled ** 2, 0.0)
    if kind == "tanh_squared":
        return 1 - np.tanh(x * np.arctanh(np.sqrt(1 - value_at_1))) ** 2
    raise ValueError(f"unknown sigmoid {kind!r}")


def tolerance(x: np.ndarray, bounds: tuple[float, float] = (0.0, 0.0), margin: float = 0.0, kind: str = "gaussian",
              value_at_margin: float = VALUE_AT_MARGIN) -> np.ndarray:
    lower, upper = bounds
    in_bounds = np.logical_and(lower <= x, x <= upper)
    if margin == 0:
        return np.where(in_bounds, 1.0, 0.0)
    d = np.where(x < lower, lower - x, x - upper) / margin
    return np.where(in_bounds, 1.0, sigmoid(d, value_at_margin, kind))
