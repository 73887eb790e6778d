"""MuZero's MinAtar bar, as a user runs it (`python -m experiments.muzero --env
gymnax/Breakout-MinAtar` in a fresh process, the Anakin loop): mean return over the last 20
episodes >= 28 (gymnax's published PPO at 1e7) within 1e7 env steps, one seed (issue 57); beside
it PPO's MinAtar preset (gymnax's PPO settings, 1e7 env steps) in the same run on the same host.
About 25 minutes for MuZero on 2 cores.

    python benchmarks/bench_muzero_minatar.py --seeds 0 [--no-write]    # the bar asks one seed
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
BAR = 28.0
ENV = "gymnax/Breakout-MinAtar"
RUNS = ((f"{ENV}, MuZero (its MinAtar preset: 1e7 env steps)", "experiments.muzero", [f"--env={ENV}"]),
        (f"{ENV}, PPO (its MinAtar preset: 1e7 env steps)", "experiments.ppo", [f"--env={ENV}"]))


def main() -> None:
    seeds, no_write = seed_args(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        rows, curves = bar_rows(RUNS, seeds, Path(tmp), BAR)
        if not no_write:
            FIGURES.mkdir(parents=True, exist_ok=True)
            plot_curves(curves, FIGURES / "muzero_breakout_minatar.png", f"MuZero and PPO, {ENV}, 1e7 env steps")
    body = (
        "## MuZero on MinAtar (`benchmarks/bench_muzero_minatar.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_muzero_minatar.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each run is `python -m experiments.<agent>` "
        "in a fresh process (the Anakin loop), timed whole. MuZero: Gumbel MuZero's search with 16 simulations per "
        "env step, the planes flattened into a 128-unit MLP, 64 envs, each env step replayed about twice. PPO: gymnax's "
        "published settings.\n\n"
        f"| run | seed | env steps | episodes | final return (last 20 episodes) | bar met? (>= {BAR:.0f}) | "
        "wall time (s) |\n|---|---|---:|---:|---:|---|---:|\n" + "\n".join(rows) + "\n\n"
        "![MuZero Breakout-MinAtar](benchmarks/figures/muzero_breakout_minatar.png)\n"
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, "bench_muzero_minatar", body)


if __name__ == "__main__":
    main()
