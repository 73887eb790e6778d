"""MuZero's MinAtar bar, as a user runs it (`python -m experiments.muzero --env
gymnax/Breakout-MinAtar` in a fresh process, the Anakin loop): mean return over the last 20
episodes >= 28 (gymnax's published PPO at 1e7) within 1e7 env steps, one seed (issue 57); beside
it PPO's MinAtar preset (gymnax's PPO settings, 1e7 env steps) in the same run on the same host.
About 25 minutes for MuZero on 2 cores.

    python benchmarks/bench_muzero_minatar.py --seeds 0 [--no-write]    # the bar asks one seed
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import learning_bar_benchmark  # noqa: E402

BAR = 28.0
ENV = "gymnax/Breakout-MinAtar"
RUNS = ((f"{ENV}, MuZero (its MinAtar preset: 1e7 env steps)", "experiments.muzero", [f"--env={ENV}"]),
        (f"{ENV}, PPO (its MinAtar preset: 1e7 env steps)", "experiments.ppo", [f"--env={ENV}"]))


def main() -> None:
    learning_bar_benchmark(
        "bench_muzero_minatar.py", "bench_muzero_minatar", "MuZero on MinAtar", RUNS, BAR,
        "muzero_breakout_minatar.png", f"MuZero and PPO, {ENV}, 1e7 env steps",
        "each run is `python -m experiments.<agent>` in a fresh process (the Anakin loop), timed whole. MuZero: "
        "Gumbel MuZero's search with 16 simulations per env step, the planes flattened into a 128-unit MLP, 64 envs, "
        "each env step replayed about twice. PPO: gymnax's published settings.", __doc__)


if __name__ == "__main__":
    main()
