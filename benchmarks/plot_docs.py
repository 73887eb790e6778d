"""The docs site's benchmark figures, drawn from the benchmark outputs (never from numbers copied
by hand): the tables of BENCHMARKS.md, parsed, and the metrics.csv files of benchmark runs
(benchmarks/results/*_metrics.csv, and any run directories passed with --runs).

    python benchmarks/plot_docs.py                       # writes docs/assets/bench-*.png
    python benchmarks/plot_docs.py --runs runs/ppo-*     # also a learning curve of these run dirs

Writes PNGs with matplotlib's Agg canvas (no display needed); docs/benchmarks.md shows them.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
Table = list[dict[str, str]]


# ---------------------------------------------------------------- parsing
def section(text: str, heading: str) -> str:
    """The text under the first Markdown heading that starts with `heading` (any level), up to the
    next heading of the same or a higher level."""
    m = re.search(rf"^(#+) {re.escape(heading)}.*$", text, re.M)
    if m is None:
        raise ValueError(f"BENCHMARKS.md has no heading starting with {heading!r}")
    level = len(m.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(text, m.end())
    return text[m.end():end.start() if end else len(text)]


def tables(text: str) -> list[Table]:
    """Every pipe table of a Markdown text, as rows of {column: cell} (cells stripped)."""
    found, lines = [], text.splitlines()
    i = 0
    while i + 1 < len(lines):
        if lines[i].startswith("|") and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                rows.append(dict(zip(header, cells)))
                i += 1
            found.append(rows)
        else:
            i += 1
    return found


def number(cell: str) -> float:
    """A table cell's number: `17,475,954` -> 17475954.0, `**59,597**` -> 59597.0; NaN if none."""
    m = re.search(r"-?[\d,]*\.?\d+", cell.replace("**", ""))
    return float(m.group().replace(",", "")) if m else math.nan


def read_metrics(path: Path) -> tuple[list[float], list[float]]:
    """(env_steps, episode_return_mean) of a metrics.csv, rows without a return left out."""
    steps, returns = [], []
    with path.open() as f:
        for row in csv.DictReader(f):
            ret = float(row.get("episode_return_mean") or "nan")
            if not math.isnan(ret):
                steps.append(float(row["env_steps"]))
                returns.append(ret)
    return steps, returns


# ---------------------------------------------------------------- figures
def envpool_figure(text: str, out: Path) -> None:
    """Env steps/s, ours vs EnvPool, per workload of the bench_envs table."""
    (table, *_) = tables(section(text, "Env steps/s"))
    rows = [r for r in table if r["peer"] == "envpool"]
    if not rows:
        raise ValueError("the Env steps/s table has no envpool rows")
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
    y = range(len(rows))
    ax.barh([i + 0.2 for i in y], [number(r["ours (steps/s)"]) for r in rows], 0.4, label="ours")
    ax.barh([i - 0.2 for i in y], [number(r["peer (steps/s)"]) for r in rows], 0.4, label="EnvPool")
    ax.set_yticks(list(y), [r["workload"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("env steps/s (log scale)")
    ax.set_title("Env steps/s: ours vs EnvPool (BENCHMARKS.md, bench_envs.py)")
    ax.legend()
    save(fig, out)


def anakin_figure(text: str, out: Path) -> None:
    """PPO on CartPole: training env steps/s by env count, per run (Anakin, PureJaxRL, Sebulba)."""
    (table, *_) = tables(section(text, "Anakin vs PureJaxRL"))
    runs: dict[str, list[tuple[float, float]]] = {}
    for r in table:
        sps = number(r["training env steps/s (compile apart)"])
        if not math.isnan(sps):
            runs.setdefault(r["run"], []).append((number(r["envs"]), sps))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run, points in runs.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=run)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("envs")
    ax.set_ylabel("training env steps/s")
    ax.set_title("PPO on CartPole, PureJaxRL's configuration, 2 CPUs")
    ax.legend(fontsize=8)
    save(fig, out)


def learning_figure(curves: dict[str, Path], title: str, out: Path, xlabel: str = "env steps") -> None:
    """Episode return (mean of the last 20 episodes) against env steps, one line per metrics.csv."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = 0
    for label, path in curves.items():
        steps, returns = read_metrics(path)
        if steps:
            ax.plot(steps, returns, label=label)
            drawn += 1
    if not drawn:
        raise ValueError(f"no episode returns in {sorted(map(str, curves.values()))}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("episode return (last 20 episodes)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    save(fig, out)


def off_policy_figure(text: str, out: Path) -> None:
    """Off-policy learning bars: each seed's final return, per agent and env."""
    (table, *_) = tables(section(text, "Off-policy learning bars"))
    groups: dict[str, list[float]] = {}
    for r in table:
        groups.setdefault(f"{r['agent']}, {r['env (loop)']}", []).append(number(r["final return (last 20 episodes)"]))
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(groups) + 1.5))
    for i, (name, finals) in enumerate(groups.items()):
        ax.scatter(finals, [i] * len(finals), zorder=2)
    ax.set_yticks(range(len(groups)), list(groups), fontsize=8)
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel("final return (last 20 episodes), one dot per seed")
    ax.set_title("Off-policy learning bars (bench_off_policy.py)")
    save(fig, out)


def save(fig: plt.Figure, out: Path) -> None:
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def pong_curves(results: Path) -> dict[str, Path]:
    """The IMPALA Pong runs of bench_atari_gpu.py, labelled by their settings."""
    curves = {}
    for path in sorted(results.glob("impala_pong_h100_*metrics.csv")):
        label = path.name.removeprefix("impala_pong_h100_").removesuffix("metrics.csv").strip("_")
        curves[label.replace("_", ", ") or "the 2026-11-22 run"] = path
    return curves


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "assets")
    parser.add_argument("--runs", type=Path, nargs="*", default=[], help="run directories with a metrics.csv")
    args = parser.parse_args(argv)
    text = args.benchmarks.read_text()
    written = [args.out / name for name in ("bench-envpool.png", "bench-anakin-purejaxrl.png",
                                            "bench-off-policy.png", "bench-pong-learning.png")]
    envpool_figure(text, written[0])
    anakin_figure(text, written[1])
    off_policy_figure(text, written[2])
    learning_figure(pong_curves(args.results), "IMPALA on Pong-v5, one H100 (bench_atari_gpu.py)", written[3],
                   "env steps (4 frames each)")
    runs = {p.name: p / "metrics.csv" for p in args.runs if (p / "metrics.csv").is_file()}
    if runs:
        written.append(args.out / "bench-runs-learning.png")
        learning_figure(runs, "Learning curves of the given runs", written[-1])
    for path in written:
        print(path)
    return written


if __name__ == "__main__":
    main()
