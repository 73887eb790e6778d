"""Craftax-Symbolic with PPO-RNN (the CRAFTAX preset: a GRU of 512, 64 envs, 1M env steps), as a
user runs it: `python -m experiments.ppo --env craftax/Craftax-Symbolic-v1` (needs `pip install
-e ".[craftax]"`), or `--run_dir` to report a run made (or resumed) that way. The bar: the
Craftax README's PPO-RNN at 1M env steps, 2.3% of the maximum return (226, the sum of the
achievements' rewards: 1 basic, 3 intermediate, 5 advanced, 8 very advanced), i.e. 5.2, over the
last 20 episodes. One seed: a run takes over an hour on this host.

    python benchmarks/bench_craftax.py [--seed 0] [--run_dir RUN] [--no-write]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, run_cli, verdict, write_section  # noqa: E402

MAX_RETURN = 226.0  # craftax.craftax.constants.ACHIEVEMENT_REWARD_MAP.sum()
BAR = 0.023 * MAX_RETURN  # the published PPO-RNN at 1M env steps: 2.3% of the maximum


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_dir", type=Path, help="report this run directory instead of training one")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.run_dir is None:
            wall, _, run_dir = run_cli("experiments.ppo", ["--env=craftax/Craftax-Symbolic-v1", f"--seed={args.seed}"],
                                       Path(tmp))
            how = f"trained in one process, {wall / 60:.0f} minutes whole"
        else:
            run_dir = args.run_dir
            how = "a run made with that command (resumed after a stop), read from its directory"
        rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
        flags = json.loads((run_dir / "flags.json").read_text())
    last = rows[-1]
    ret = float(last["episode_return_mean"])
    row = (f"| PPO-RNN (GRU 512), CRAFTAX preset | {flags.get('seed')} | {int(last['env_steps']):,} | "
           f"{int(last['episodes']):,} | {ret:.2f} | {100 * ret / MAX_RETURN:.2f}% | {verdict(ret, BAR, '{:.2f}')} | "
           f"{float(last['wall_time']) / 60:.0f} |")
    body = (
        "## Craftax-Symbolic, PPO-RNN at 1M env steps (`benchmarks/bench_craftax.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_craftax.py', *sys.argv[1:]])}` ({how})  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only. Reference: the Craftax README's PPO-RNN "
        f"at 1M env steps, 2.3% of the maximum return {MAX_RETURN:g} (= {BAR:.2f}; 1,024 envs there, 64 here).\n\n"
        "| run | seed | env steps | episodes | return (last 20 episodes) | % of the maximum | bar met? (>= 2.3%) | "
        "training minutes (wall_time) |\n|---|---|---:|---:|---:|---:|---|---:|\n" + row + "\n"
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_craftax", body)


if __name__ == "__main__":
    main()
