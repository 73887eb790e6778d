"""SAC and TD3 side by side with CleanRL on HalfCheetah-v5, same host, same run (issue 38): ours,
`python -m experiments.sac | td3 --env HalfCheetah-v5` (the MuJoCo preset: CleanRL's settings over
4 envs x 8 steps a cycle), against CleanRL's `sac_continuous_action.py` (PyTorch) and
`td3_continuous_action_jax.py` (JAX), run by `benchmarks/peers/cleanrl_run.py` in CleanRL's own
venv (its scripts patched for Gymnasium 1.x only: `benchmarks/peers/cleanrl.patch`). Each run is
a fresh process timed whole (imports, compilation, training); the return is the mean of the last 20
episodes. The pairs alternate (ours, theirs) so that the host's drift falls on both.

    python benchmarks/bench_cleanrl.py [--steps 100000] [--seeds 0] [--agents sac,td3]
        [--cleanrl_threads 1] [--cleanrl_python /work/venv-cleanrl/bin/python] [--cleanrl_dir /work/cleanrl]
        [--env HalfCheetah-v5] [--flags "--replay_ratio=1"] [--no-write]

Each env's figures are their own BENCHMARKS.md section.

CleanRL: `git clone https://github.com/vwxyzjn/cleanrl`, `git checkout fe8d8a03` and `git apply
benchmarks/peers/cleanrl.patch` in it; its venv: torch 2.13 (CPU), gymnasium[mujoco] 1.3, tyro,
tensorboard, jax, flax, optax (the versions of ours), and shimmy with dm_control for dm_control's suite
(`--env CheetahRun-v1 --cleanrl_env benchmarks.peers.dm_control_shimmy:dm_control/cheetah-run-v0`).
--cleanrl_threads sets OMP_NUM_THREADS for theirs (default 1: torch's SAC ran ~10x slower with its default intra-op threads on this 2-core
host while anything else ran; '' leaves it unset).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._report import publish, run_cli  # noqa: E402
from benchmarks.peers.cleanrl_cell import DEFAULT_DIR, DEFAULT_PYTHON, launch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
THEIRS = {"sac": "sac_continuous_action.py (PyTorch)", "td3": "td3_continuous_action_jax.py (JAX)",
          "ppo": "ppo_continuous_action.py (PyTorch)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--agents", default="sac,td3")
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--cleanrl_env", default=None,
                        help="the env id CleanRL's script gets (default: --env); for dm_control's suite, "
                             "benchmarks.peers.dm_control_shimmy:dm_control/cheetah-run-v0 (Shimmy's ids)")
    parser.add_argument("--cleanrl_python", default=DEFAULT_PYTHON)
    parser.add_argument("--cleanrl_dir", default=DEFAULT_DIR)
    parser.add_argument("--cleanrl_threads", default="1", help="OMP_NUM_THREADS for CleanRL's runs ('': unset)")
    parser.add_argument("--flags", default="", help="more flags for ours, e.g. '--replay_ratio=1'")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    lines = ["| agent | seed | ours: whole s | ours: return | CleanRL: whole s | CleanRL: return | wall ratio "
             "(theirs / ours) |", "|---|---:|---:|---:|---:|---:|---:|"]
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for agent in args.agents.split(","):
            for seed in seeds:
                wall, last, _ = run_cli(f"experiments.{agent}", [f"--env={args.env}", f"--total_env_steps={args.steps}",
                                                                 f"--seed={seed}", "--checkpoint_every=0",
                                                                 "--eval_every=0", *args.flags.split()],
                                       Path(tmp) / agent)
                ours = float(last["episode_return_mean"])
                theirs = launch(args.cleanrl_python, args.cleanrl_dir, agent, args.cleanrl_env or args.env, args.steps,
                                 seed, args.cleanrl_threads)
                ratio = theirs["wall_s"] / wall
                ratios.setdefault(agent, []).append(ratio)
                lines.append(f"| {agent} | {seed} | {wall:.0f} | {ours:.1f} | {theirs['wall_s']:.0f} | "
                             f"{theirs['final_return']:.1f} | {ratio:.2f}x |")
                print(lines[-1], flush=True)
    medians = "\n".join(f"- {agent}: CleanRL's {THEIRS[agent]} takes {statistics.median(r):.2f}x our wall time "
                        f"(median over seeds {args.seeds})" for agent, r in ratios.items())
    header = (f"## SAC and TD3 side by side with CleanRL, {args.env}, {args.steps:,} env steps "
              f"(`benchmarks/bench_cleanrl.py`)\n\nCommand: `python benchmarks/bench_cleanrl.py "
              f"{' '.join(sys.argv[1:])}`; {platform.node()} ({os.cpu_count()} CPUs, no GPU), "
              f"{datetime.date.today().isoformat()}. Ours: `python -m experiments.<agent> --env {args.env} "
              f"--total_env_steps {args.steps}{' ' + args.flags if args.flags else ''}` (the MuJoCo preset, CleanRL's "
              "settings); theirs: "
              "CleanRL's scripts (commit fe8d8a03) at their defaults with `--env-id` and `--total-timesteps`"
              f"{f' (--env-id {args.cleanrl_env})' if args.cleanrl_env else ''}, "
              "patched for Gymnasium 1.x only (`benchmarks/peers/cleanrl.patch`), "
              f"OMP_NUM_THREADS={args.cleanrl_threads or 'unset'}. Each a fresh process timed whole; returns are the "
              "mean of the last 20 episodes.\n\n")
    publish(f"bench_cleanrl_{args.env}", header + "\n".join(lines) + "\n\n" + medians + "\n", not args.no_write)


if __name__ == "__main__":
    main()
