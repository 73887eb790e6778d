"""The off-policy agents' learning bars through the CLI (each a fresh process, its preset and
budget, timed whole), in the Sebulba loop on the host pools and in the Anakin loop on gymnax's
twins: DQN on CartPole-v1 >= 475 within 100k env steps, SAC and TD3 on Pendulum-v1 >= -250
within 20k (mean of the last 20 episodes). The learner's optimizer steps per second come from
metrics.csv (learner steps x the preset's optimizer steps per learner step, between the first
and the last row).

    python benchmarks/bench_off_policy.py [--seeds 0,1,2] [--no-write]
    python benchmarks/bench_off_policy.py --mujoco 300000 [--mujoco_envs HalfCheetah-v5,Hopper-v5]
        [--flags=--replay_ratio=0.5] [--agents sac,td3] [--seeds 0]   # SAC and TD3 on MuJoCo (the preset: CleanRL's
        settings, and any flags over it) for that many env steps, bars 5,000 / 2,500 at 300k (issue 38)
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

BARS = [  # module, env, flags, bar
    ("experiments.dqn", "CartPole-v1", [], 475.0),
    ("experiments.dqn", "gymnax/CartPole-v1", [], 475.0),
    ("experiments.sac", "Pendulum-v1", [], -250.0),
    ("experiments.sac", "gymnax/Pendulum-v1", [], -250.0),
    ("experiments.td3", "Pendulum-v1", [], -250.0),
    ("experiments.td3", "gymnax/Pendulum-v1", [], -250.0),
]


# Issue 38's MuJoCo bars at 300k env steps (medians of 3 seeds), each run under 15 minutes on 2 cores.
MUJOCO_BARS = {"HalfCheetah-v5": 5000.0, "Hopper-v5": 2500.0}


def optims_per_learner_step(run_dir: Path) -> int:
    """replay_ratio x num_envs x steps_per_cycle, from the run's config.json."""
    import json

    config = json.loads((run_dir / "config.json").read_text())
    loop = config["loop"]
    return round(config["agent"]["config"]["replay_ratio"] * loop["num_envs"] * loop["steps_per_cycle"])


def updates_per_s(run_dir: Path) -> float | None:
    """The learner's optimizer steps/s over the metrics rows whose interval was all learning: from
    the last row whose interval was not (a row's `learning` is its interval's mean; the Anakin loop
    may log its first row well past learning_starts) to the last row."""
    import csv

    optims = optims_per_learner_step(run_dir)
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    partial = [i for i, r in enumerate(rows) if float(r.get("learning") or 1) < 1]
    rows = rows[partial[-1]:] if partial else rows
    if len(rows) < 2:
        return None
    first, last = rows[0], rows[-1]
    dt = float(last["wall_time"]) - float(first["wall_time"])
    return (float(last["learner_steps"]) - float(first["learner_steps"])) * optims / dt if dt > 0 else None


def pop_option(name: str, default: str | None) -> str | None:
    """`--name VALUE` or `--name=VALUE` taken out of sys.argv (seed_args parses the rest)."""
    for i, arg in enumerate(sys.argv):
        if arg == name:
            value = sys.argv[i + 1]
            del sys.argv[i:i + 2]
            return value
        if arg.startswith(name + "="):
            del sys.argv[i]
            return arg.split("=", 1)[1]
    return default


def main() -> None:
    command = "python benchmarks/bench_off_policy.py " + " ".join(sys.argv[1:])
    mujoco = pop_option("--mujoco", None)
    mujoco = int(mujoco) if mujoco else None
    mujoco_envs = pop_option("--mujoco_envs", "HalfCheetah-v5").split(",")
    extra = (pop_option("--flags", "") or "").split()
    agents = pop_option("--agents", "sac,td3").split(",")
    seeds, no_write = seed_args(__doc__)
    bars = BARS if mujoco is None else [
        (module, env, [f"--total_env_steps={mujoco}", *extra], MUJOCO_BARS[env] if mujoco == 300_000 else None)
        for env in mujoco_envs for module in (f"experiments.{a}" for a in agents)]
    lines = ["| agent | env (loop) | seed | env steps | final return (last 20 episodes) | bar | optimizer steps/s "
             "| whole command s |", "|---|---|---:|---:|---:|---|---:|---:|"]
    finals: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for module, env, flags, bar in bars:
            for seed in seeds:
                wall, last, run_dir = run_cli(module, [f"--env={env}", *flags, f"--seed={seed}", "--checkpoint_every=0"],
                                              Path(tmp) / module)
                ret = float(last["episode_return_mean"])
                finals.setdefault((module, env), []).append(ret)
                ups = updates_per_s(run_dir)
                loop = "Anakin" if env.startswith("gymnax/") else "Sebulba, host pool"
                if mujoco:
                    loop += f", {wall / 60:.1f} min" + ("" if wall < 900 else ": over 15 min")
                lines.append(f"| {module.split('.')[1]} | {env} ({loop}) | {seed} | {int(float(last['env_steps'])):,} | "
                             f"{ret:.1f} | {verdict(ret, bar, '{:.1f}')} | {ups:,.0f} | {wall:.1f} |" if ups else
                             f"| {module.split('.')[1]} | {env} ({loop}) | {seed} | {int(float(last['env_steps'])):,} | "
                             f"{ret:.1f} | {verdict(ret, bar, '{:.1f}')} | - | {wall:.1f} |")
                print(lines[-1], flush=True)
    medians = "\n".join(f"- {m.split('.')[1]} on {env}: median {statistics.median(v):.1f} over seeds "
                        f"{', '.join(map(str, seeds))}" for (m, env), v in finals.items())
    title = ("Off-policy learning bars" if mujoco is None else
             f"SAC and TD3 on MuJoCo, {mujoco:,} env steps{', flags ' + ' '.join(extra) if extra else ', CleanRL settings'}")
    header = (f"## {title} (`benchmarks/bench_off_policy.py`)\n\nCommand: `{command}`; "
              f"{platform.node()} ({os.cpu_count()} CPUs, no GPU), {datetime.date.today().isoformat()}; each run is "
              "`python -m experiments.<agent> --env ENV --seed S` in a fresh process, timed whole (compilation "
              "included).\n\n")
    section = "bench_off_policy" if mujoco is None else f"bench_off_policy_mujoco_{mujoco // 1000}k" + (
        "_" + "".join(c for c in "".join(extra) if c.isalnum()) if extra else "")
    publish(section, header + "\n".join(lines) + "\n\n" + medians + "\n", not no_write)


if __name__ == "__main__":
    main()
