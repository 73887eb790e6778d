"""A multi-player Atari game against single-player Pong-v5, both through our pool at the same
settings: env steps/s and player steps/s (batch rows/s), and their ratios (issue 39's target: a
multi-player ROM within 0.8x of Pong's env steps/s per player).

Run from the repository root:

    python benchmarks/bench_multiplayer_ale.py                   # Combat-v5, 8 envs, 3 repeats of ~2 s
    python benchmarks/bench_multiplayer_ale.py --game Warlords-v5 --seconds 1 --no-write

Same settings for both: num_envs, num_threads (default: every core, for ALE's vector env's
threads and for the multi-player game's worker processes alike), sync pools, the Atari defaults
(frame skip 4, grayscale, 84x84 area resize, 4 stacked frames, up to 30 noops, FIRE at reset).
The two are measured interleaved, each pool built afresh per repeat and warmed up, with seeded
random actions drawn beforehand; the median over the repeats is reported. Pong is stepped by
ALE's C++ vector env, the multi-player game by multi_agent_ale_py in worker processes (one
Python frame loop per env), so the machine's other load moves the two differently: a busy
machine is a poor judge. The result goes into BENCHMARKS.md between `<!-- bench_multiplayer_ale:start -->`
and `<!-- bench_multiplayer_ale:end -->`; --no-write only prints it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
import envs  # noqa: E402
from _report import publish, verdict  # noqa: E402  (benchmarks/_report.py)

SECTION = "bench_multiplayer_ale"
TARGET = 0.8  # issue 39: within 0.8x of Pong's env steps/s per player
WARMUP_S = 0.5


def measure(task_id: str, num_envs: int, num_threads: int, seconds: float) -> tuple[float, int]:
    """(env steps/s, players) of a sync pool stepped with seeded random actions for ~seconds."""
    with envs.make(task_id, num_envs=num_envs, num_threads=num_threads, seed=0) as pool:
        players = pool.config.max_num_players
        actions = np.random.default_rng(0).integers(pool.action_space.n, size=(64, num_envs * players))
        pool.reset()
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < WARMUP_S:
            pool.step(actions[calls % 64])
            calls += 1
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            pool.step(actions[calls % 64])
            calls += 1
        return calls * num_envs / (time.perf_counter() - start), players


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="Combat-v5", help="a multi-player Atari id: Combat-v5, Joust-v5, MazeCraze-v5, Warlords-v5")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    pong, game, players = [], [], 1
    for _ in range(args.repeats):
        pong.append(measure("Pong-v5", args.num_envs, args.num_threads, args.seconds)[0])
        rate, players = measure(args.game, args.num_envs, args.num_threads, args.seconds)
        game.append(rate)
    pong_rate, game_rate = statistics.median(pong), statistics.median(game)
    env_ratio, player_ratio = game_rate / pong_rate, game_rate * players / pong_rate
    rows = [
        f"| Pong-v5 (ALE's vector env) | 1 | {pong_rate:,.0f} | {pong_rate:,.0f} | — |",
        f"| {args.game} (multi_agent_ale_py, worker processes) | {players} | {game_rate:,.0f} | "
        f"{game_rate * players:,.0f} | env steps {env_ratio:.2f}x, player steps {player_ratio:.2f}x |",
    ]
    body = (
        f"## Multi-player Atari against Pong (`benchmarks/bench_multiplayer_ale.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC with `python benchmarks/bench_multiplayer_ale.py "
        f"{' '.join(sys.argv[1:])}` on {os.cpu_count()} CPU cores, {platform.platform()}; load average "
        f"{os.getloadavg()[0]:.1f} at the end. Sync pools of {args.num_envs} envs, num_threads={args.num_threads}, "
        f"the Atari defaults; median of {args.repeats} repeats of {args.seconds:g} s each, interleaved.\n\n"
        "| task | players | env steps/s | player steps/s (rows/s) | ratio to Pong |\n"
        "|---|---:|---:|---:|---|\n" + "\n".join(rows) + "\n\n"
        f"Target (issue 39): within {TARGET}x of Pong's env steps/s per player. Counting each player's step "
        f"(rows/s): {verdict(player_ratio, TARGET)}; counting env steps alone: {verdict(env_ratio, TARGET)}.\n"
    )
    publish(SECTION, body, not args.no_write)


if __name__ == "__main__":
    main()
