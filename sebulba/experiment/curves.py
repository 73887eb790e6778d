"""Learning-curve PNGs from metrics.csv files: episode return against env steps and against wall
time. Uses matplotlib's Agg canvas on a bare `Figure` (no pyplot), so it never changes the
process's matplotlib backend and works without a display and from any thread."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

X_AXES = (("env_steps", "env steps"), ("wall_time", "wall time (s)"))


def read_columns(csv_path: str | os.PathLike, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """The named columns of a metrics.csv as float arrays (empty or non-numeric cells are NaN,
    a column the file lacks is all NaN)."""

    def num(cell: str | None) -> float:
        try:
            return float(cell) if cell not in (None, "") else math.nan
        except ValueError:
            return math.nan

    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([num(r.get(k)) for r in rows], dtype=float) for k in keys}


def plot_curves(
    runs: Sequence[tuple[str, str | os.PathLike]],
    png_path: str | os.PathLike,
    title: str = "",
    y: str = "episode_return_mean",
    parts: Sequence[str] = (),
) -> Path:
    """One figure, two panels (`y` against env steps, and against wall time), one line per
    (label, metrics.csv) in `runs`: for comparing runs, e.g. R2D2 with an LSTM vs an MLP.
    Rows where `y` is NaN (no finished episode yet) are skipped; where the CSV has `y`_min and
    `y`_max (a `--num_seeds` run), their band is shaded. `parts`: suffixes of columns `y`_part
    (a multi-player run's `player0`, ...) drawn as thin lines next to each run's. Returns the
    PNG's path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # here: its import costs a run's start 0.35 s
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    plotted = False
    evaluated = banded = False
    for label, csv_path in runs:
        cols = read_columns(csv_path, [y, f"{y}_min", f"{y}_max", *(x for x, _ in X_AXES), "eval_return_mean",
                                       "eval_env_steps", *(f"{y}_{part}" for part in parts)])
        for ax, (x, _) in zip(axes, X_AXES):
            for part in parts:
                ok = np.isfinite(cols[x]) & np.isfinite(cols[f"{y}_{part}"])
                if ok.any():
                    ax.plot(cols[x][ok], cols[f"{y}_{part}"][ok], label=f"{label} {part}" if len(runs) > 1 else part,
                            linewidth=0.8, alpha=0.8)
            ok = np.isfinite(cols[x]) & np.isfinite(cols[y])
            if ok.any():
                lines = ax.plot(cols[x][ok], cols[y][ok], label=label, linewidth=1.5, marker="." if ok.sum() < 30 else None)
                plotted = True
                band = ok & np.isfinite(cols[f"{y}_min"]) & np.isfinite(cols[f"{y}_max"])
                if band.any():  # a --num_seeds run: the replicas' min to max around their mean
                    ax.fill_between(cols[x][band], cols[f"{y}_min"][band], cols[f"{y}_max"][band], alpha=0.25,
                                    color=lines[0].get_color(), linewidth=0, label=f"{label} (min-max of seeds)")
                    banded = True
            if y == "episode_return_mean":  # evaluation returns, at the env step their networks belong to
                ev = np.isfinite(cols["eval_return_mean"])
                xs = cols["eval_env_steps"] if x == "env_steps" else cols[x]
                if ev.any():
                    color = lines[0].get_color() if ok.any() else None
                    ax.plot(xs[ev], cols["eval_return_mean"][ev], linestyle="none", marker="D", markersize=5,
                            color=color, label=f"{label} (evaluation)")
                    evaluated = plotted = True
    for ax, (_, xlabel) in zip(axes, X_AXES):
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(y.replace("_", " "))
    if not plotted:
        axes[0].text(0.5, 0.5, f"no finite {y} yet", ha="center", va="center", transform=axes[0].transAxes)
    elif len(runs) > 1 or evaluated or banded or parts:
        axes[0].legend(loc="best", fontsize="small")
    if title:
        fig.suptitle(title)
    png_path = Path(png_path)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path)
    return png_path


def plot_learning_curve(csv_path: str | os.PathLike, png_path: str | os.PathLike, title: str = "") -> Path:
    """episode_return_mean against env steps and against wall time, from one run's metrics.csv,
    with each player's (`episode_return_mean_player{i}` columns: a multi-player run)."""
    with open(csv_path, newline="") as f:
        header = next(csv.reader(f), [])
    prefix = "episode_return_mean_"
    parts = [k[len(prefix):] for k in header if k.startswith(prefix) and k[len(prefix):] not in ("min", "max")]
    return plot_curves([(Path(csv_path).parent.name, csv_path)], png_path, title, parts=parts)
