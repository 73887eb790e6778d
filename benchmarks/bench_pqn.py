"""PQN's learning bars, as a user runs them (`python -m experiments.pqn ...` in fresh processes), one
row per seed and run: the no-flag run on the built-in CartPole-v1 (the Sebulba loop), the same with
`--loop anakin` (the same run, in one compiled program) and gymnax's CartPole-v1 (the Anakin loop);
mean return over the last 20 episodes >= 475 within the 500k-step budget (CleanRL's PQN: 495.1).
The test suite checks seed 0 of the built-in CartPole with `--loop anakin`.

    python benchmarks/bench_pqn.py [--seeds 0,1,2] [--no-write]
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
RUNS = (("CartPole-v1 (Sebulba, no flags)", "experiments.pqn", []),
        ("CartPole-v1 --loop anakin", "experiments.pqn", ["--loop=anakin"]),
        ("gymnax/CartPole-v1 (Anakin)", "experiments.pqn", ["--env=gymnax/CartPole-v1"]))


def main() -> None:
    seeds, no_write = seed_args(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        rows, curves = bar_rows(RUNS, seeds, Path(tmp), BAR)
        if not no_write:
            FIGURES.mkdir(parents=True, exist_ok=True)
            plot_curves(curves, FIGURES / "pqn_cartpole.png", "PQN, CartPole-v1 (the preset)")
    body = (
        "## PQN learning bars (`benchmarks/bench_pqn.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_pqn.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each run is `python -m experiments.pqn` "
        "with the preset (CleanRL's pqn.py settings, reward scale 0.1) in a fresh process, timed whole. "
        "Reference: CleanRL's PQN, 495.1 +- 6.9 on CartPole-v1 at 500k.\n\n"
        f"| run | seed | env steps | episodes | final return (last 20 episodes) | bar met? (>= {BAR:.0f}) | "
        "wall time (s) |\n|---|---|---:|---:|---:|---|---:|\n" + "\n".join(rows) + "\n\n"
        "![PQN CartPole](benchmarks/figures/pqn_cartpole.png)\n"
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, "bench_pqn", body)


if __name__ == "__main__":
    main()
