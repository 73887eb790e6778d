"""The learner alone, IMPALA Pong preset: frames/s of back-to-back updates on one cycle's
trajectory, i.e. how much of a shared device the learner takes per frame (issue 6: the peer's
learner alone sustained about 200k frames/s on the H100 host).

    python benchmarks/bench_learner.py --out DIR [--num_envs 32,64] [--updates 50]

Per setting: a GymnasiumLoop from `experiments.impala`'s Atari preset makes one real trajectory
(one inferencer cycle), then `Learner.update` runs on it `--updates` times after one warm-up
update (compilation). frames/s = updates x envs x unroll x frame skip (4) / seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _report  # noqa: E402
import envs  # noqa: E402
from experiments import impala  # noqa: E402
from sebulba.agents.impala.agent import Impala  # noqa: E402
from sebulba.loop.loop import GymnasiumLoop  # noqa: E402

FRAME_SKIP = 4


def learner_fps(num_envs: int, updates: int) -> tuple[float, float]:
    """(frames/s, ms per update) of the preset's learner on a batch of num_envs trajectories."""
    exp = impala.make_experiment("Pong-v5", num_envs=num_envs, inferencers_per_device=1)
    loop_config = dataclasses.replace(exp.loop, async_mode=False)
    with GymnasiumLoop(Impala(envs.make_spec("Pong-v5", **exp.loop.env_kwargs), exp.agent), loop_config) as loop:
        learner = loop.learner
        r = loop.inferencers[0].run_cycle(learner.version, learner.networks)
        jax.block_until_ready(learner.update(r.initial_step_state, r.final_step_state, r.trajectory))
        start = time.perf_counter()
        for _ in range(updates):
            metrics = learner.update(r.initial_step_state, r.final_step_state, r.trajectory)
        jax.block_until_ready((metrics, learner.networks))
        elapsed = time.perf_counter() - start
    frames = updates * num_envs * loop_config.steps_per_cycle * FRAME_SKIP
    return frames / elapsed, elapsed / updates * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--num_envs", default="32,64", help="comma-separated batch sizes (envs per trajectory)")
    ap.add_argument("--updates", type=int, default=50)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(x) for x in args.num_envs.split(",")):
        fps, ms = learner_fps(n, args.updates)
        rows.append(f"| {n} x 20 | {ms:.1f} | {fps:,.0f} |")
        print(rows[-1], flush=True)
    header = "| batch (envs x unroll) | ms per update | frames/s |\n|---|---:|---:|"
    _report.device_section(args.out, "bench_learner.py", "The learner alone, IMPALA Pong", "", header, rows)


if __name__ == "__main__":
    main()
