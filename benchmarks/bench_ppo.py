"""PPO's (and continuous IMPALA's) learning results as a user gets them: each seed is
`python -m experiments.ppo --env ENV --seed N` (the no-flag preset) in a fresh process, timed
whole (imports and compilation included).

    python benchmarks/bench_ppo.py --task cartpole|pendulum|impala-pendulum|mujoco [--seeds 0,1,2] [--no-write]

`mujoco` runs HalfCheetah-v5 and Hopper-v5 for the preset's 1M env steps (pip install -e ".[mujoco]").
Each task writes its own section of BENCHMARKS.md and its learning curves into benchmarks/figures/.
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
from benchmarks._report import BENCH_FILE, run_cli, verdict, write_section  # noqa: E402
from sebulba.experiment.curves import plot_curves  # noqa: E402

FIGURES = Path(__file__).resolve().parents[1] / "benchmarks" / "figures"
# task: (title, module, [(env, bar on the final return (last 20 episodes), goal wall seconds or None)], bar's source)
TASKS = {
    "cartpole": ("PPO on CartPole-v1", "experiments.ppo", [("CartPole-v1", 475.0, 30.0)],
                 "the learning bar (tests/test_ppo.py); goal: under 30 s with compilation"),
    "pendulum": ("PPO on Pendulum-v1", "experiments.ppo", [("Pendulum-v1", -300.0, None)],
                 "the learning bar (tests/test_ppo.py: >= -300; PPO usually reaches about -200)"),
    "impala-pendulum": ("IMPALA (Gaussian policy) on Pendulum-v1", "experiments.impala", [("Pendulum-v1", -300.0, None)],
                        "the learning bar (tests/test_impala.py)"),
    "mujoco": ("PPO on MuJoCo (Gymnasium v5, worker processes)", "experiments.ppo",
               [("HalfCheetah-v5", 1500.0, None), ("Hopper-v5", 2000.0, None)],
               "CleanRL's published PPO results at 1M steps: the median over seeds of the final return"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", choices=sorted(TASKS), required=True)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    title, module, envs_, bar_source = TASKS[args.task]
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for env, bar, goal_s in envs_:
            rows, curves, finals = [], [], []
            for seed in seeds:
                wall, last, run_dir = run_cli(module, [f"--env={env}", f"--seed={seed}"], Path(tmp))
                ret, steps = float(last["episode_return_mean"]), int(last["env_steps"])
                finals.append(ret)
                goal = "" if goal_s is None else f" {'yes' if wall <= goal_s else verdict(goal_s / wall, 1.0)} |"
                rows.append(f"| {seed} | {steps:,} | {ret:.1f} | {verdict(ret, bar, '{:.1f}')} | {wall:.1f} | "
                            f"{steps / wall:,.0f} |{goal}")
                print(env, rows[-1], flush=True)
                curves.append((f"seed {seed}", run_dir / "metrics.csv"))
            name = f"{module.split('.')[1]}_{env.split('-')[0].lower()}"  # e.g. ppo_hopper
            if not args.no_write:
                FIGURES.mkdir(parents=True, exist_ok=True)
                plot_curves(curves, FIGURES / f"{name}.png", f"{title.split(' on ')[0]}, {env} (no-flag runs)")
            median = statistics.median(finals)
            tables.append(
                f"### {env}\n\nMedian final return over seeds: {median:.1f} against a bar of {bar:g}: "
                f"{verdict(median, bar, '{:.1f}')}.\n\n"
                "| seed | env steps | final return (last 20 episodes) | bar met? | wall time (s) | env steps/s (whole run) |"
                + ("" if goal_s is None else f" under {goal_s:g} s? |") + "\n|---|---:|---:|---|---:|---:|"
                + ("" if goal_s is None else "---|") + "\n" + "\n".join(rows) + "\n\n"
                f"![{title.split(' on ')[0]}, {env}](benchmarks/figures/{name}.png)\n")
    body = (
        f"## {title} (`benchmarks/bench_ppo.py --task {args.task}`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_ppo.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each seed is `python -m {module} "
        "--env ENV --seed N` (the no-flag preset) in a fresh process, timed whole: imports, compilation, the "
        f"preset's budget, outputs.  \nBar: {bar_source}.\n\n" + "\n".join(tables)
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, f"bench_ppo_{args.task}", body)


if __name__ == "__main__":
    main()
