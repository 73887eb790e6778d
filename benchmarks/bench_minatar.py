"""MinAtar at 1e7 env steps (gymnax's four games, the Anakin loop), as a user runs it: `python -m
experiments.AGENT --env gymnax/GAME-MinAtar` with the MINATAR preset in a fresh process, timed
whole, then `python -m experiments.evaluate RUN --episodes 32` (greedy) on its last checkpoint.
Each row: the training return (last 20 episodes, the actors' own, PQN's epsilon 0.05 included),
the greedy evaluation's, the run's minutes, against gymnax's published PPO at 1e7 (Asterix 15,
Breakout 28, Freeway 58, SpaceInvaders 131; gymnax README). Any agent with a MinAtar preset runs
here (`--agents muzero --games Breakout` is issue 57's MuZero bar), each row judged on its greedy
evaluation, as gymnax's figure is an evaluation of its final policy (gymnax-blines: 164 episodes,
actions sampled from the policy).

    python benchmarks/bench_minatar.py [--agents pqn,ppo] [--games Breakout,Asterix,Freeway,SpaceInvaders]
        [--seeds 0] [--steps 10000000] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, run_cli, verdict, write_section  # noqa: E402

GYMNAX_PPO = {"Asterix": 15.0, "Breakout": 28.0, "Freeway": 58.0, "SpaceInvaders": 131.0}  # gymnax README, 1e7 steps


def evaluate(run_dir: Path) -> float:
    """The greedy evaluation's mean return over 32 episodes (experiments.evaluate, eval.json)."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("XLA_FLAGS", None)
    subprocess.run([sys.executable, "-m", "experiments.evaluate", str(run_dir), "--episodes=32"], cwd=root, env=env,
                   check=True, capture_output=True)
    return float(json.loads((run_dir / "eval.json").read_text())["eval_return_mean"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", default="pqn,ppo")
    parser.add_argument("--games", default=",".join(GYMNAX_PPO))
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--steps", type=int, default=10_000_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    games = args.games.split(",")
    unknown = sorted(set(games) - set(GYMNAX_PPO))
    if unknown:
        parser.error(f"unknown games {unknown}; the four: {', '.join(GYMNAX_PPO)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for agent in args.agents.split(","):
            for game in games:
                for seed in map(int, args.seeds.split(",")):
                    wall, last, run_dir = run_cli(f"experiments.{agent}", [
                        f"--env=gymnax/{game}-MinAtar", f"--seed={seed}", f"--total_env_steps={args.steps}"],
                        Path(tmp) / f"{agent}-{game}-{seed}")
                    greedy, ref = evaluate(run_dir), GYMNAX_PPO[game]
                    rows.append(f"| {agent} | {game} | {seed} | {int(last['env_steps']):,} | "
                                f"{float(last['episode_return_mean']):.1f} | {greedy:.1f} | {ref:g} | "
                                f"{verdict(greedy, ref, '{:.1f}')} | {wall / 60:.1f} |")
                    print(rows[-1], flush=True)
    body = (
        "## MinAtar (`benchmarks/bench_minatar.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_minatar.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each run is `python -m experiments.AGENT "
        "--env gymnax/GAME-MinAtar` (the MINATAR preset, the Anakin loop) in a fresh process, timed whole; the "
        "greedy return is `experiments.evaluate` over 32 episodes of its last checkpoint. Reference: gymnax's "
        "published PPO at 1e7 env steps.\n\n"
        "| agent | game | seed | env steps | training return (last 20 episodes) | greedy return (32 episodes) | "
        "gymnax PPO | met? | minutes |\n|---|---|---|---:|---:|---:|---:|---|---:|\n" + "\n".join(rows) + "\n"
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_minatar", body)


if __name__ == "__main__":
    main()
