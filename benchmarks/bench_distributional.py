"""DQN's value heads side by side, as a user runs them (`python -m experiments.dqn --value_head
HEAD` and `python -m experiments.rainbow`, fresh processes, `--loop anakin`: on the built-in
CartPole-v1 the same run as the no-flag Sebulba one, in less time), one row per seed and head:
mean return over the last 20 episodes >= 475 within the 100k-step preset (the issue's bar: C51 and
QR-DQN within 200k). DQN's own scalar head is the same-run baseline. The test suite checks seed 0
of C51 at 50k.

    python benchmarks/bench_distributional.py [--seeds 0,1,2] [--no-write]
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
RUNS = (("DQN (scalar head)", "experiments.dqn", ["--loop=anakin"]),
        ("C51 (--value_head c51)", "experiments.dqn", ["--value_head=c51", "--loop=anakin"]),
        ("QR-DQN (--value_head qr)", "experiments.dqn", ["--value_head=qr", "--loop=anakin"]),
        ("Rainbow (experiments.rainbow)", "experiments.rainbow", ["--loop=anakin"]))


def main() -> None:
    seeds, no_write = seed_args(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        rows, curves = bar_rows(RUNS, seeds, Path(tmp), BAR)
        if not no_write:
            FIGURES.mkdir(parents=True, exist_ok=True)
            plot_curves(curves, FIGURES / "distributional_cartpole.png", "DQN's value heads, CartPole-v1 (the presets)")
    body = (
        "## DQN's value heads: C51, QR-DQN, Rainbow (`benchmarks/bench_distributional.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_distributional.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each run is `python -m` the entry point "
        "with its CartPole preset (100k env steps; C51 and QR-DQN: 51 atoms, C51's from -100 to 100) and "
        "`--loop anakin`, in a fresh process, timed whole. References: CleanRL's c51.py on CartPole-v1 (101 atoms, "
        "500k steps).\n\n"
        f"| run | seed | env steps | episodes | final return (last 20 episodes) | bar met? (>= {BAR:.0f}) | "
        "wall time (s) |\n|---|---|---:|---:|---:|---|---:|\n" + "\n".join(rows) + "\n\n"
        "![DQN's value heads on CartPole](benchmarks/figures/distributional_cartpole.png)\n"
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, "bench_distributional", body)


if __name__ == "__main__":
    main()
