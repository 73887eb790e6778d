"""MuZero's learning bar, as a user runs it (`python -m experiments.muzero` in fresh processes),
one row per seed: the no-flag run on the built-in CartPole-v1 (Gumbel MuZero's search with 16
simulations in the actors' step), mean return over the last 20 episodes >= 475 within 100k env
steps (issue 57), and beside it PPO's preset cut at the same 100k env steps, in the same run on
the same host: where MuZero stands in samples and in wall time.

    python benchmarks/bench_muzero.py [--seeds 0,1,2] [--no-write]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import learning_bar_benchmark  # noqa: E402

BAR = 475.0
RUNS = (("CartPole-v1, MuZero (no flags: 100k env steps)", "experiments.muzero", []),
        ("CartPole-v1, PPO's preset cut at 100k env steps", "experiments.ppo", ["--total_env_steps=100000"]))


def main() -> None:
    learning_bar_benchmark(
        "bench_muzero.py", "bench_muzero", "MuZero learning bar", RUNS, BAR, "muzero_cartpole.png",
        "MuZero and PPO, CartPole-v1, 100k env steps",
        "each run is `python -m experiments.<agent>` in a fresh process, timed whole (start-up and compiling "
        "included). MuZero: Gumbel MuZero's search with 16 simulations per env step in the actors' jitted step, "
        "K = 5, n = 10, 8 learner steps per cycle. PPO: its CartPole preset (500k env steps) cut at 100k.", __doc__)


if __name__ == "__main__":
    main()
