"""The off-policy agents' learning bars through the CLI (each a fresh process, its preset and
budget, timed whole), in the Sebulba loop on the host pools and in the Anakin loop on gymnax's
twins: DQN on CartPole-v1 >= 475 within 100k env steps, SAC and TD3 on Pendulum-v1 >= -250
within 20k (mean of the last 20 episodes). The learner's optimizer steps per second come from
metrics.csv (learner steps x the preset's optimizer steps per learner step, between the first
and the last row).

    python benchmarks/bench_off_policy.py [--seeds 0,1,2] [--no-write]
    python benchmarks/bench_off_policy.py --mujoco 30000 [--seeds 0]   # SAC and TD3 at CleanRL's
        MuJoCo settings on HalfCheetah-v5 for that many env steps: the learner's optimizer steps/s
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._report import publish, run_cli, seed_args, verdict  # noqa: E402

BARS = [  # module, env, flags, bar, optimizer steps per learner step (replay_ratio x num_envs x steps_per_cycle)
    ("experiments.dqn", "CartPole-v1", [], 475.0, 8),
    ("experiments.dqn", "gymnax/CartPole-v1", [], 475.0, 8),
    ("experiments.sac", "Pendulum-v1", [], -250.0, 32),
    ("experiments.sac", "gymnax/Pendulum-v1", [], -250.0, 32),
    ("experiments.td3", "Pendulum-v1", [], -250.0, 32),
    ("experiments.td3", "gymnax/Pendulum-v1", [], -250.0, 32),
]


def updates_per_s(run_dir: Path, optims: int) -> float | None:
    import csv

    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    if len(rows) < 2:
        return None
    first, last = rows[0], rows[-1]
    dt = float(last["wall_time"]) - float(first["wall_time"])
    return (float(last["learner_steps"]) - float(first["learner_steps"])) * optims / dt if dt > 0 else None


def main() -> None:
    mujoco = None
    if "--mujoco" in sys.argv:  # seed_args parses the rest
        i = sys.argv.index("--mujoco")
        mujoco = int(sys.argv[i + 1])
        del sys.argv[i:i + 2]
    seeds, no_write = seed_args(__doc__)
    bars = BARS if mujoco is None else [
        (module, "HalfCheetah-v5", [f"--total_env_steps={mujoco}"], None, 32) for module in
        ("experiments.sac", "experiments.td3")]
    lines = ["| agent | env (loop) | seed | env steps | final return (last 20 episodes) | bar | optimizer steps/s "
             "| whole command s |", "|---|---|---:|---:|---:|---|---:|---:|"]
    finals: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for module, env, flags, bar, optims in bars:
            for seed in seeds:
                wall, last, run_dir = run_cli(module, [f"--env={env}", *flags, f"--seed={seed}", "--checkpoint_every=0"],
                                              Path(tmp) / module)
                ret = float(last["episode_return_mean"])
                finals.setdefault((module, env), []).append(ret)
                ups = updates_per_s(run_dir, optims)
                loop = "Anakin" if env.startswith("gymnax/") else "Sebulba, host pool"
                lines.append(f"| {module.split('.')[1]} | {env} ({loop}) | {seed} | {int(float(last['env_steps'])):,} | "
                             f"{ret:.1f} | {verdict(ret, bar, '{:.1f}')} | {ups:,.0f} | {wall:.1f} |" if ups else
                             f"| {module.split('.')[1]} | {env} ({loop}) | {seed} | {int(float(last['env_steps'])):,} | "
                             f"{ret:.1f} | {verdict(ret, bar, '{:.1f}')} | - | {wall:.1f} |")
                print(lines[-1], flush=True)
    medians = "\n".join(f"- {m.split('.')[1]} on {env}: median {statistics.median(v):.1f} over seeds "
                        f"{', '.join(map(str, seeds))}" for (m, env), v in finals.items())
    command = "python benchmarks/bench_off_policy.py " + " ".join(sys.argv[1:]) + (
        f" --mujoco {mujoco}" if mujoco else "")
    title = "Off-policy learning bars" if mujoco is None else f"SAC and TD3 on MuJoCo at CleanRL's settings, {mujoco:,} env steps"
    header = (f"## {title} (`benchmarks/bench_off_policy.py`)\n\nCommand: `{command}`; "
              f"{platform.node()} ({os.cpu_count()} CPUs, no GPU), {datetime.date.today().isoformat()}; each run is "
              "`python -m experiments.<agent> --env ENV --seed S` in a fresh process, timed whole (compilation "
              "included).\n\n")
    publish("bench_off_policy" if mujoco is None else "bench_off_policy_mujoco", header + "\n".join(lines) + "\n\n" + medians + "\n", not no_write)


if __name__ == "__main__":
    main()
