"""A PettingZoo env through our pool (worker processes, EnvPool's multi-player rows) against
PettingZoo's own `ParallelEnv`s stepped one after another in a Python loop, the way a user without
a pool steps them: env steps/s (issue 39's target: >= 2x). Both step MPE's simple_spread_v3 (3
agents, 25-step episodes, resets included) with the same seeded random actions.

    python benchmarks/bench_pettingzoo.py [--envs 16] [--seconds 2] [--repeats 3] [--no-write]

Ours: `envs.make("pettingzoo/mpe2/simple_spread_v3", num_envs=N, num_threads=cores)`, sync, one
`step` per batch of N envs x 3 player rows. Theirs: N `simple_spread_v3.parallel_env()`s, each
`step(dict of the agents' actions)` in turn and `reset` at its episode's end. Interleaved repeats,
each built afresh and warmed up; medians.
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

TASK = "pettingzoo/mpe2/simple_spread_v3"
TARGET = 2.0
WARMUP_S = 0.5


def timed(step, seconds: float) -> float:
    """Calls of step() per second over ~seconds, after WARMUP_S of them."""
    for phase in (WARMUP_S, seconds):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < phase:
            step(calls)
            calls += 1
    return calls / (time.perf_counter() - start)


def ours(num_envs: int, seconds: float, actions: np.ndarray) -> float:
    with envs.make(TASK, num_envs=num_envs, num_threads=os.cpu_count(), seed=0) as pool:
        pool.reset()
        return timed(lambda i: pool.step(actions[i % len(actions)]), seconds) * num_envs


def theirs(num_envs: int, seconds: float, actions: np.ndarray) -> float:
    from mpe2 import simple_spread_v3

    pz = [simple_spread_v3.parallel_env() for _ in range(num_envs)]
    for i, env in enumerate(pz):
        env.reset(seed=i)
    names = pz[0].possible_agents

    def step(i: int) -> None:
        rows = actions[i % len(actions)].reshape(num_envs, len(names))
        for env, row in zip(pz, rows):
            _, _, terminated, truncated, _ = env.step(dict(zip(names, row.tolist())))
            if not env.agents or all(terminated.values()) or all(truncated.values()):
                env.reset()

    try:
        return timed(step, seconds) * num_envs
    finally:
        for env in pz:
            env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    actions = np.random.default_rng(0).integers(5, size=(64, args.envs * 3))
    runs: dict[str, list[float]] = {"ours": [], "theirs": []}
    for _ in range(args.repeats):
        runs["ours"].append(ours(args.envs, args.seconds, actions))
        runs["theirs"].append(theirs(args.envs, args.seconds, actions))
    o, t = statistics.median(runs["ours"]), statistics.median(runs["theirs"])
    ratio = o / t
    body = (f"## PettingZoo through the pool vs PettingZoo's ParallelEnv in a Python loop (`benchmarks/bench_pettingzoo.py`)\n\n"
            f"Command: `python benchmarks/bench_pettingzoo.py {' '.join(sys.argv[1:])}`; {platform.node()} "
            f"({os.cpu_count()} CPUs), {datetime.date.today().isoformat()}; {TASK}, {args.envs} envs x 3 players, "
            f"random actions, medians of {args.repeats} interleaved repeats of {args.seconds:g} s.\n\n"
            "| stepper | env steps/s | player steps/s |\n|---|---:|---:|\n"
            f"| ours: `envs.make(\"{TASK}\", num_envs={args.envs}, num_threads={os.cpu_count()})` | {o:,.0f} | {3 * o:,.0f} |\n"
            f"| PettingZoo: {args.envs} `parallel_env()`s stepped in turn | {t:,.0f} | {3 * t:,.0f} |\n\n"
            f"Ratio {ratio:.2f}x (target >= {TARGET:g}x: {verdict(ratio, TARGET)}).\n")
    publish("bench_pettingzoo", body, not args.no_write)


if __name__ == "__main__":
    main()
