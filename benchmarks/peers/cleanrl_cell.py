"""CleanRL's SAC, TD3 or PPO as a benchmark-suite cell (issue 55's mujoco suite): our entry points'
command line (--env, --seed, --total_env_steps, --logdir) and the run directory ours leave
(flags.json; metrics.csv with env_steps, episode_return_mean over the last 20 episodes and the
run's wall_time), so `python -m benchmarks.suite` runs CleanRL's scripts beside ours and reports
both the same way. The script runs in CleanRL's own venv through `cleanrl_run.py` beside this file
(the patched checkout at fe8d8a03, its defaults but for the env, the budget and the seed).

    python -m benchmarks.peers.cleanrl_cell --algo sac --env HalfCheetah-v5 --seed 0 \\
        --total_env_steps 300000 --logdir DIR [--cleanrl_python PY] [--cleanrl_dir DIR] [--cleanrl_threads 1]

CleanRL's scripts do not resume: an interrupted cell reruns whole. Its flags.json is written after
its metrics, at the end, so the suite's runner never takes a half-made run for a finished one (a
`--resume` of a finished run only says so).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALGOS = ("sac", "td3", "ppo")
WINDOW = 20  # episodes in a return mean, as ours log it
DEFAULT_PYTHON = os.environ.get("CLEANRL_PYTHON", "/work/venv-cleanrl/bin/python")
DEFAULT_DIR = os.environ.get("CLEANRL_DIR", "/work/cleanrl")


def launch(python: str, directory: str, algo: str, env_id: str, steps: int, seed: int, threads: str) -> dict:
    """CleanRL's script through cleanrl_run.py: its JSON line (wall_s, final_return, episodes, ...)."""
    # this repository on their path only for a peer module an env id names (benchmarks.peers.dm_control_shimmy)
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT)
    if threads:
        env["OMP_NUM_THREADS"] = threads
    out = subprocess.run([python, str(ROOT / "benchmarks/peers/cleanrl_run.py"), directory, algo, str(steps), str(seed),
                          "--env-id", env_id], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"CleanRL's {algo} on {env_id} exited {out.returncode}: "
                           f"{(out.stderr.strip().splitlines() or ['(no output)'])[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def metrics_rows(episodes: Sequence[Sequence[float]], wall_s: float, window: int = WINDOW) -> list[dict[str, str]]:
    """One metrics.csv row per finished episode, as ours log: env_steps, the mean return of the last
    `window` episodes, and the run's whole wall time on the last row (CleanRL's prints have no clock)."""
    rows, returns = [], []
    for step, ret in episodes:
        returns.append(float(ret))
        last = returns[-window:]
        rows.append({"env_steps": str(int(step)), "episode_return_mean": repr(sum(last) / len(last)), "wall_time": ""})
    if rows:
        rows[-1]["wall_time"] = f"{wall_s:.2f}"
    return rows


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not the usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="python -m benchmarks.peers.cleanrl_cell", description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=ALGOS, required=True)
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--total_env_steps", type=int, default=1_000_000)
    parser.add_argument("--logdir", type=Path, default=Path("runs"))
    parser.add_argument("--resume", type=Path, help="a finished run of this module's: reported, not rerun")
    parser.add_argument("--noprogress", action="store_true", help="accepted for the suite's runner (CleanRL prints none)")
    parser.add_argument("--cleanrl_python", default=DEFAULT_PYTHON)
    parser.add_argument("--cleanrl_dir", default=DEFAULT_DIR)
    parser.add_argument("--cleanrl_threads", default="1", help="OMP_NUM_THREADS for CleanRL's run ('': unset)")
    args = parser.parse_args(argv)
    if args.resume is not None:
        if not (args.resume / "flags.json").exists() or not (args.resume / "metrics.csv").exists():
            parser.error(f"--resume {args.resume}: not a finished CleanRL cell (CleanRL's runs do not resume; "
                         "delete it to rerun the cell)")
        return args
    if args.total_env_steps < 1:
        parser.error(f"--total_env_steps must be at least 1, got {args.total_env_steps}")
    if not os.access(args.cleanrl_python, os.X_OK):
        parser.error(f"--cleanrl_python {args.cleanrl_python}: no such interpreter (CleanRL's venv: see "
                     "benchmarks/bench_cleanrl.py's docstring)")
    if not (Path(args.cleanrl_dir) / "cleanrl").is_dir():
        parser.error(f"--cleanrl_dir {args.cleanrl_dir}: not a CleanRL checkout (no cleanrl/ in it)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.resume is not None:
        print(f"{args.resume}: finished", flush=True)
        return 0
    run = args.logdir / f"cleanrl_{args.algo}_{re.sub(r'[^A-Za-z0-9_.-]', '_', args.env)}_s{args.seed}"
    try:
        out = launch(args.cleanrl_python, args.cleanrl_dir, args.algo, args.env, args.total_env_steps, args.seed,
                     args.cleanrl_threads)
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    rows = metrics_rows(out["episodes"], out["wall_s"])
    if not rows:
        print(f"CleanRL's {args.algo} on {args.env} finished no episode in {args.total_env_steps:,} steps",
              file=sys.stderr)
        return 1
    run.mkdir(parents=True, exist_ok=True)
    with (run / "metrics.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    flags = {"algo": args.algo, "env": args.env, "seed": args.seed, "total_env_steps": args.total_env_steps,
             "cleanrl": {k: out[k] for k in ("agent", "sps", "sps_wall", "omp_num_threads", "log_path")}}
    (run / "flags.json").write_text(json.dumps(flags, indent=1) + "\n")  # last: the run is whole
    print(f"{run}: {float(rows[-1]['episode_return_mean']):.2f} at {rows[-1]['env_steps']} env steps "
          f"({out['wall_s']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
