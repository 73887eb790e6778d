"""MuZero's learning bar, as a user runs it (`python -m experiments.muzero` in fresh processes),
one row per seed: the no-flag run on the built-in CartPole-v1 (Gumbel MuZero's search with 16
simulations in the actors' step), mean return over the last 20 episodes >= 475 within 100k env
steps (issue 57), and beside it PPO's preset cut at the same 100k env steps, in the same run on
the same host: where MuZero stands in samples and in wall time.

    python benchmarks/bench_muzero.py [--seeds 0,1,2] [--no-write]
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, bar_rows, seed_args, write_section  # noqa: E402
from sebulba.experiment.curves import plot_curves  # noqa: E402

FIGURES = Path(__file__).resolve().parent / "figures"
BAR = 475.0
RUNS = (("CartPole-v1, MuZero (no flags: 100k env steps)", "experiments.muzero", []),
        ("CartPole-v1, PPO's preset cut at 100k env steps", "experiments.ppo", ["--total_env_steps=100000"]))


def main() -> None:
    seeds, no_write = seed_args(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        rows, curves = bar_rows(RUNS, seeds, Path(tmp), BAR)
        if not no_write:
            FIGURES.mkdir(parents=True, exist_ok=True)
            plot_curves(curves, FIGURES / "muzero_cartpole.png", "MuZero and PPO, CartPole-v1, 100k env steps")
    body = (
        "## MuZero learning bar (`benchmarks/bench_muzero.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_muzero.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each run is `python -m experiments.<agent>` "
        "in a fresh process, timed whole (start-up and compiling included). MuZero: Gumbel MuZero's search with 16 "
        "simulations per env step in the actors' jitted step, K = 5, n = 10, 8 learner steps per cycle. PPO: its "
        "CartPole preset (500k env steps) cut at 100k.\n\n"
        f"| run | seed | env steps | episodes | final return (last 20 episodes) | bar met? (>= {BAR:.0f}) | "
        "wall time (s) |\n|---|---|---:|---:|---:|---|---:|\n" + "\n".join(rows) + "\n\n"
        "![MuZero CartPole](benchmarks/figures/muzero_cartpole.png)\n"
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, "bench_muzero", body)


if __name__ == "__main__":
    main()
