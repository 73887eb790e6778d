"""What evaluation during training costs a run: `python -m experiments.ppo` (CartPole-v1, the
no-flag preset) with and without `--eval_every`, alternating, each in a fresh process timed whole.

    python benchmarks/bench_eval_cost.py [--repeats 3] [--eval_every 20000] [--eval_episodes 10] [--no-write]

Writes its section of BENCHMARKS.md: median wall times, their ratio, and the evaluations' own
time (`eval_s` in metrics.csv, spent in a thread beside training).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, run_cli, write_section  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eval_every", type=int, default=20000)
    parser.add_argument("--eval_episodes", type=int, default=10)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    walls: dict[str, list[float]] = {"off": [], "on": []}
    eval_s, evals = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for mode in ("off", "on"):
                extra = [] if mode == "off" else [f"--eval_every={args.eval_every}", f"--eval_episodes={args.eval_episodes}"]
                wall, _, run_dir = run_cli("experiments.ppo", extra, Path(tmp) / f"{mode}{i}")
                walls[mode].append(wall)
                if mode == "on":
                    rows = [r for r in csv.DictReader((run_dir / "metrics.csv").open()) if r.get("eval_s")]
                    evals = len(rows)
                    eval_s.append(sum(float(r["eval_s"]) for r in rows))
                print(mode, f"{wall:.1f} s", flush=True)
    off, on = statistics.median(walls["off"]), statistics.median(walls["on"])
    body = (
        "## What evaluation during training costs (`benchmarks/bench_eval_cost.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_eval_cost.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only. `python -m experiments.ppo` (CartPole-v1, "
        f"200k env steps, sync mode) without and with `--eval_every {args.eval_every} --eval_episodes "
        f"{args.eval_episodes}`, alternating, {args.repeats} runs each, each timed whole in a fresh process.\n\n"
        "| | median wall time (s) | runs (s) |\n|---|---:|---|\n"
        f"| no evaluation | {off:.1f} | {', '.join(f'{w:.1f}' for w in walls['off'])} |\n"
        f"| evaluation every {args.eval_every:,} env steps | {on:.1f} | {', '.join(f'{w:.1f}' for w in walls['on'])} |\n\n"
        f"Ratio with/without: {on / off:.2f}x. The {evals} evaluations of {args.eval_episodes} episodes took "
        f"{statistics.median(eval_s):.1f} s in all (median over runs; `eval_s` summed), in their thread: on 2 cores "
        "they compete with the actor and the learner for the CPU; sync mode also waits for a due evaluation "
        "still running when the next comes due (it keeps runs reproducible).\n"
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_eval_cost", body)


if __name__ == "__main__":
    main()
