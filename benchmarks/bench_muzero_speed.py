"""MuZero's throughput (issue 57): env steps/s of `python -m experiments.muzero` on CartPole-v1 with
16 and 50 simulations per env step, on the Sebulba loop (the host pool, sync) and the Anakin loop
(the compiled env), each a fresh process, the median of its metrics rows after the first learner
update (the steady rate, start-up and compiling left out); and the share of an actor's env step the
search takes: the jitted act (root, search) against the root's networks alone and the pool's step,
16 envs, timed in one process.

    python benchmarks/bench_muzero_speed.py [--steps 30000] [--no-write]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, run_cli, write_section  # noqa: E402

SIMULATIONS = (16, 50)
LOOPS = ("sebulba", "anakin")
NUM_ENVS = 16


def steady_sps(run_dir: Path) -> float:
    rows = [r for r in csv.DictReader((run_dir / "metrics.csv").open()) if float(r.get("learning") or 0) > 0]
    if len(rows) < 2:  # an Anakin run logs once per call: too short a run to leave its first call out
        raise SystemExit(f"{run_dir}: fewer than 2 metrics rows that learned: raise --steps")
    return statistics.median(float(r["sps"]) for r in rows[1:])  # from the second row that learned


def act_times(simulations: int, repeats: int = 200) -> tuple[float, float, float]:
    """Seconds per call: the jitted act (root and search), the root's networks alone, a pool step."""
    import jax
    import numpy as np

    import envs
    from experiments.muzero import CARTPOLE
    from sebulba.agents.muzero import MuZero
    from sebulba.agents.muzero.networks import root
    from sebulba.types import EnvStep

    spec = envs.make_spec("CartPole-v1")
    agent = MuZero(spec, dataclasses.replace(CARTPOLE.agent, num_simulations=simulations))
    networks = agent.init_networks(jax.random.key(0))
    pool = envs.make("CartPole-v1", num_envs=NUM_ENVS, seed=0)
    obs, _ = pool.reset()
    zeros = np.zeros(NUM_ENVS, bool)
    env_step = EnvStep(obs, np.zeros(NUM_ENVS, np.float32), zeros, zeros, zeros)
    act = jax.jit(agent.step)
    forward = jax.jit(lambda params, o: root(agent.net, params, o))
    state = agent.init_step_state(networks, NUM_ENVS, jax.random.key(1))

    def timed(fn) -> float:
        jax.block_until_ready(fn())
        start = time.perf_counter()
        for _ in range(repeats):
            jax.block_until_ready(fn())
        return (time.perf_counter() - start) / repeats

    t_act = timed(lambda: act(networks, state, env_step))
    t_forward = timed(lambda: forward(networks.online, obs))
    action = np.zeros(NUM_ENVS, np.int64)
    t_env = timed(lambda: pool.step(action)[0])
    pool.close()
    return t_act, t_forward, t_env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30_000, help="env steps of each CLI run")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for sims in SIMULATIONS:
            t_act, t_forward, t_env = act_times(sims)
            share = (t_act - t_forward) / (t_act + t_env)
            for loop in LOOPS:
                wall, _, run_dir = run_cli("experiments.muzero", [f"--loop={loop}", f"--num_simulations={sims}",
                                                                  f"--total_env_steps={args.steps}", "--seed=0"],
                                           Path(tmp) / f"{loop}-{sims}")
                rows.append(f"| {loop} | {sims} | {steady_sps(run_dir):,.0f} | {wall:.0f} | "
                            f"{t_act * 1e3:.2f} | {t_forward * 1e3:.3f} | {t_env * 1e3:.3f} | {share:.0%} |")
                print(rows[-1], flush=True)
    body = (
        "## MuZero throughput (`benchmarks/bench_muzero_speed.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_muzero_speed.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only. CartPole-v1, {NUM_ENVS} envs, the preset "
        f"otherwise (sync, 8 learner steps per cycle), {args.steps:,} env steps a run. env steps/s: the median of a "
        "run's metrics rows from the second that learned (acting and learning together, start-up left out). The act "
        f"columns time one env step of {NUM_ENVS} envs in one process: the jitted act (the root's networks and the "
        "search), the root's networks alone, the pool's step; the search's share is (act - networks) / (act + pool "
        "step), the part of an actor's env step spent searching.\n\n"
        "| loop | simulations | env steps/s | run wall time (s) | act (ms) | networks alone (ms) | pool step (ms) | "
        "search's share of an env step |\n|---|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_muzero_speed", body)


if __name__ == "__main__":
    main()
