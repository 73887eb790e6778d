"""R2D2's learning bars, as a user runs them (`python -m experiments.r2d2 ...` in fresh processes):
1. CartPole-v1, the no-flag run, one row per seed: mean return over the last 20 episodes >= 400;
2. the memory task CartPoleNoVelocity-v1 (its own preset), one row per seed: the LSTM core's
   final return >= 3x the MLP core's (`--core mlp`, otherwise the same no-flag run), all curves
   in one PNG. The test suite checks seed 0 of both bars.

    python benchmarks/bench_r2d2.py [--seeds 0,1,2] [--no-write]
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, run_cli, seed_args, verdict, write_section  # noqa: E402
from sebulba.experiment.curves import plot_curves  # noqa: E402

FIGURES = Path(__file__).resolve().parent / "figures"
CARTPOLE_BAR, MEMORY_RATIO = 400.0, 3.0


def main() -> None:
    seeds, no_write = seed_args(__doc__)
    rows, curves = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            wall, last, run_dir = run_cli("experiments.r2d2", [f"--seed={seed}"], Path(tmp) / "cartpole")
            ret = float(last["episode_return_mean"])
            rows.append(f"| CartPole-v1 | {seed} | {int(last['env_steps']):,} | {ret:.1f} | "
                        f"{verdict(ret, CARTPOLE_BAR, '{:.1f}')} | {wall:.0f} |")
            print(rows[-1], flush=True)
            curves.append((f"seed {seed}", run_dir / "metrics.csv"))
        memory, memory_rows = [], []
        for seed in seeds:
            returns, walls = {}, {}
            for core in ("lstm", "mlp"):
                walls[core], last, run_dir = run_cli(
                    "experiments.r2d2", ["--env=CartPoleNoVelocity-v1", f"--core={core}", f"--seed={seed}"],
                    Path(tmp) / f"{core}{seed}")
                returns[core] = float(last["episode_return_mean"])
                memory.append((f"{core.upper()} core, seed {seed}", run_dir / "metrics.csv"))
            ratio = returns["lstm"] / max(returns["mlp"], 1e-9)
            memory_rows.append(f"| CartPoleNoVelocity-v1 | {seed} | {int(last['env_steps']):,} | {returns['lstm']:.1f} | "
                               f"{returns['mlp']:.1f} | {ratio:.2f}x | {verdict(ratio, MEMORY_RATIO)} | "
                               f"{walls['lstm']:.0f} + {walls['mlp']:.0f} |")
            print(memory_rows[-1], flush=True)
        if not no_write:
            FIGURES.mkdir(parents=True, exist_ok=True)
            plot_curves(curves, FIGURES / "r2d2_cartpole.png", "R2D2, CartPole-v1 (no-flag run)")
            plot_curves(memory, FIGURES / "r2d2_memory.png", "R2D2 on CartPoleNoVelocity-v1: LSTM vs MLP core")
    body = (
        "## R2D2 learning bars (`benchmarks/bench_r2d2.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_r2d2.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each run is `python -m experiments.r2d2` "
        "in a fresh process, timed whole.\n\n"
        "| task | seed | env steps | final return (last 20 episodes) | bar met? (>= 400) | wall time (s) |\n"
        "|---|---|---:|---:|---|---:|\n" + "\n".join(rows) + "\n\n"
        "Memory task (its own preset; the MLP run is the same no-flag run with `--core mlp`), final return over the "
        "last 20 episodes:\n\n"
        f"| task | seed | env steps | LSTM | MLP | LSTM / MLP | bar met? (>= {MEMORY_RATIO:.0f}x) | wall time (s) |\n"
        "|---|---|---:|---:|---:|---:|---|---:|\n" + "\n".join(memory_rows) + "\n\n"
        "![R2D2 CartPole](benchmarks/figures/r2d2_cartpole.png)\n"
        "![R2D2 memory task: LSTM vs MLP](benchmarks/figures/r2d2_memory.png)\n"
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, "bench_r2d2", body)


if __name__ == "__main__":
    main()
