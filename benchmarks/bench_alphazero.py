"""AlphaZero's bars on pgx/connect_four, as a user runs them, one row per seed: the no-flag run
(`python -m experiments.alphazero`, a fresh process, timed whole), then `experiments.evaluate` of
its checkpoint as each seat against a uniformly random player (>= 95% wins) and against a
200-simulation pure MCTS (>= 70%), within 20 minutes of training on this host (issue 57). Beside
it, in the same run on the same host, self-play PPO on the same game with its preset, evaluated
the same way: where planning with the true model stands against a policy-gradient self-play.

    python benchmarks/bench_alphazero.py [--seeds 0,1,2] [--no-write]
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, cli_env, run_cli, seed_args, write_section  # noqa: E402

GAME = "pgx/connect_four"
RANDOM_BAR, MCTS_BAR, MINUTES = 0.95, 0.70, 20.0
MCTS_SIMULATIONS, RANDOM_GAMES, MCTS_GAMES = 200, 100, 50
RUNS = (("AlphaZero (no flags)", "experiments.alphazero", []),
        ("self-play PPO (its preset)", "experiments.ppo", [f"--env={GAME}"]))


def evaluate(run_dir: Path, opponent: str, games: int, seed: int) -> tuple[dict[str, float], float]:
    """({seat: the trained seat's win rate}, wall seconds) of `experiments.evaluate` against `opponent`."""
    extra = [f"--mcts_simulations={MCTS_SIMULATIONS}"] if opponent == "mcts" else []
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "experiments.evaluate", str(run_dir), f"--opponent={opponent}",
                    f"--episodes={games}", f"--num_envs={min(games, 50)}", f"--seed={1000 + seed}", *extra],
                   cwd=Path(__file__).resolve().parents[1], env=cli_env(), check=True, capture_output=True)
    wall = time.perf_counter() - start
    record = json.loads((run_dir / "eval.json").read_text())[f"vs_{opponent}"]
    return {seat: m["win_rate"] for seat, m in record.items()}, wall


def main() -> None:
    seeds, no_write = seed_args(__doc__)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, module, args in RUNS:
            for seed in seeds:
                wall, last, run_dir = run_cli(module, [*args, f"--seed={seed}"], Path(tmp) / f"{module}-{seed}")
                vs_random, _ = evaluate(run_dir, "random", RANDOM_GAMES, seed)
                vs_mcts, mcts_wall = evaluate(run_dir, "mcts", MCTS_GAMES, seed)
                met = (min(vs_random.values()) >= RANDOM_BAR and min(vs_mcts.values()) >= MCTS_BAR
                       and wall <= MINUTES * 60)
                rows.append(f"| {label} | {seed} | {int(last['env_steps']):,} | {wall:.0f} | "
                            f"{vs_random['player_0']:.0%} / {vs_random['player_1']:.0%} | "
                            f"{vs_mcts['player_0']:.0%} / {vs_mcts['player_1']:.0%} | "
                            f"{'yes' if met else 'no'} | {mcts_wall:.0f} |")
                print(rows[-1], flush=True)
    body = (
        "## AlphaZero on connect four (`benchmarks/bench_alphazero.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_alphazero.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each training run is `python -m "
        "experiments.<agent>` in a fresh process, timed whole (start-up and compiling included), then "
        f"`experiments.evaluate` of its last checkpoint (greedy policy): {RANDOM_GAMES} games per seat against a "
        f"uniformly random legal player, {MCTS_GAMES} per seat against a {MCTS_SIMULATIONS}-simulation pure MCTS "
        "(uniform prior, one random playout per new node, PUCT, the most visited move; "
        "`sebulba/loop/mcts_player.py`). player_0 moves first. Bars (issue 57): >= 95% against random and >= 70% "
        f"against the MCTS as either seat, within {MINUTES:.0f} minutes of training.\n\n"
        "| run | seed | env steps | training wall (s) | wins vs random (player_0 / player_1) | "
        f"wins vs MCTS-{MCTS_SIMULATIONS} (player_0 / player_1) | bars met? | MCTS evaluation wall (s) |\n"
        "|---|---|---:|---:|---|---|---|---:|\n" + "\n".join(rows) + "\n"
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, "bench_alphazero", body)


if __name__ == "__main__":
    main()
