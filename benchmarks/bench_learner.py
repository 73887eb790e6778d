"""The learner alone, IMPALA Pong preset: frames/s of back-to-back updates on one cycle's
trajectory, i.e. how much of a shared device the learner takes per frame (issue 6: the peer's
learner alone sustained about 200k frames/s on the H100 host).

    python benchmarks/bench_learner.py --out DIR [--num_envs 32,64] [--updates 50]

Per setting: a GymnasiumLoop from `experiments.impala`'s Atari preset makes one real trajectory
(one inferencer cycle), then `Learner.update` runs on it `--updates` times after two warm-up
updates (compilation). frames/s = updates x envs x unroll x frame skip (4) / seconds. The preset
learns a trajectory as 2 minibatches, each its own awaited call (so that on a shared GPU the
inferencers' calls run between them); the same update as 1 minibatch is timed beside it.

Beside it, the same optimizer step (`Agent.optimize` on that trajectory) jitted alone and inside a
length-1 `lax.scan`, which is how the learner ran a single step before: XLA:CPU runs convolution
gradients inside a loop body many times slower (jax-ml/jax#12868), so the learner now calls a
single step directly and loops only for several.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import jax
from jax.sharding import PartitionSpec as P

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _report  # noqa: E402
import envs  # noqa: E402
from experiments import impala  # noqa: E402
from sebulba.agents.impala.agent import Impala  # noqa: E402
from sebulba.loop.loop import GymnasiumLoop  # noqa: E402

FRAME_SKIP = 4


def _ms_per_call(fn, args, calls: int, warmup: int = 1) -> float:
    for _ in range(warmup):  # compilation
        jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    for _ in range(calls):
        out = fn(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls * 1e3


def optimize_ms(learner, trajectory, calls: int) -> tuple[float, float]:
    """ms per optimizer step on trajectory: (jitted alone, inside a length-1 lax.scan)."""
    agent, key = learner.agent, jax.random.key(0)

    def direct(networks, opt_state, traj):
        return agent.optimize(networks, opt_state, traj, key)[:2]

    def in_scan(networks, opt_state, traj):
        step = lambda carry, k: (agent.optimize(*carry, traj, k)[:2], None)
        return jax.lax.scan(step, (networks, opt_state), key[None])[0]

    specs = (P(), P(), jax.tree.map(lambda x: x.sharding.spec, trajectory))
    jitted = [jax.jit(jax.shard_map(f, mesh=learner.sharding.mesh, in_specs=specs, out_specs=(P(), P()), check_vma=False))
              for f in (direct, in_scan)]
    args = (learner.networks, learner.opt_state, trajectory)
    return _ms_per_call(jitted[0], args, calls), _ms_per_call(jitted[1], args, calls)


def update_ms(num_envs: int, updates: int, minibatches: int | None, scan_calls: int = 0) -> tuple[float, float, float]:
    """(ms per update, ms per optimizer step alone, ms per step in a length-1 scan; the last two
    only with scan_calls) of the preset's learner on a batch of num_envs trajectories, learned as
    `minibatches` (None: the preset's)."""
    exp = impala.make_experiment("Pong-v5", num_envs=num_envs, inferencers_per_device=1, num_minibatches=minibatches)
    loop_config = dataclasses.replace(exp.loop, async_mode=False)
    with GymnasiumLoop(Impala(envs.make_spec("Pong-v5", **exp.loop.env_kwargs), exp.agent), loop_config) as loop:
        learner = loop.learner
        r = loop.inferencers[0].run_cycle(learner.version, learner.networks)
        ms = _ms_per_call(lambda: learner.update(r.initial_step_state, r.final_step_state, r.trajectory), (), updates,
                          warmup=2)  # the experience state's pytree changes once: two compilations
        alone, in_scan = optimize_ms(learner, r.trajectory, scan_calls) if scan_calls else (float("nan"),) * 2
    return ms, alone, in_scan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--num_envs", default="32,64", help="comma-separated batch sizes (envs per trajectory)")
    ap.add_argument("--updates", type=int, default=50)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(x) for x in args.num_envs.split(",")):
        ms, _, _ = update_ms(n, args.updates, None)
        whole, alone, in_scan = update_ms(n, args.updates, 1, scan_calls=max(1, args.updates // 5))
        fps = n * 20 * FRAME_SKIP / ms * 1e3
        rows.append(f"| {n} x 20 | {ms:.1f} | {fps:,.0f} | {whole:.1f} | {ms / whole:.2f}x | {alone:.1f} | {in_scan:.1f} "
                    f"| {in_scan / alone:.1f}x |")
        print(rows[-1], flush=True)
    header = ("| batch (envs x unroll) | ms per update (preset: 2 minibatches) | frames/s | ms per update as 1 minibatch "
              "| 2 / 1 minibatch | one optimizer step, jitted alone (ms) | the same step in a length-1 lax.scan (ms) "
              "| scan / alone |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    _report.device_section(args.out, "bench_learner.py", "The learner alone, IMPALA Pong", "", header, rows)


if __name__ == "__main__":
    main()
