"""IMPALA's CartPole learning bar, as a user runs it: `python -m experiments.impala --seed N`
in a fresh process per seed, timed whole (imports and compilation included).

    python benchmarks/bench_impala_cartpole.py [--seeds 0,1,2] [--no-write]

Writes the table into BENCHMARKS.md and the learning curves into benchmarks/figures/.
"""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, run_cli, seed_args, verdict, write_section  # noqa: E402
from sebulba.experiment.curves import plot_curves  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "benchmarks" / "figures"
BAR, GOAL_S = 475.0, 60.0


def main() -> None:
    seeds, no_write = seed_args(__doc__)
    rows, curves = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            wall, last, run_dir = run_cli("experiments.impala", [f"--seed={seed}"], Path(tmp))
            ret = float(last["episode_return_mean"])
            rows.append(f"| {seed} | {int(last['env_steps']):,} | {ret:.1f} | {verdict(ret, BAR, '{:.1f}')} | "
                        f"{wall:.1f} | {verdict(GOAL_S / wall, 1.0) if wall > GOAL_S else 'yes'} |")
            print(rows[-1], flush=True)
            png = FIGURES / f"impala_cartpole_seed{seed}.png"
            if not no_write:
                FIGURES.mkdir(parents=True, exist_ok=True)
                shutil.copy(run_dir / "learning_curve.png", png)
            curves.append((f"seed {seed}", run_dir / "metrics.csv"))
        if not no_write:
            plot_curves(curves, FIGURES / "impala_cartpole.png", "IMPALA, CartPole-v1 (no-flag run)")
    body = (
        "## IMPALA on CartPole-v1: the learning bar (`benchmarks/bench_impala_cartpole.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_impala_cartpole.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each seed is "
        "`python -m experiments.impala --seed N` (the no-flag configuration) in a fresh process, timed whole: "
        "imports, compilation, 400k env steps, outputs.  \n"
        "Bar: mean return >= 475 over the last 20 finished episodes at the end of the budget. "
        "Goal: under 60 s including compilation.\n\n"
        "| seed | env steps | final return (last 20 episodes) | bar met? | wall time (s) | under 60 s? |\n"
        "|---|---:|---:|---|---:|---|\n" + "\n".join(rows) + "\n\n"
        "![IMPALA CartPole learning curves](benchmarks/figures/impala_cartpole.png)\n"
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, "bench_impala_cartpole", body)


if __name__ == "__main__":
    main()
