"""The recurrent cores' learning bars (issue 53), as a user runs them (`python -m experiments.<agent>
--env ID`, each memory task's own preset, in fresh processes), with and without the core (`--core
none`: the same run without memory), seeds as given. Mean return over the last 20 episodes:

- PPO (LSTM) on gymnax/MemoryChain-bsuite >= 0.9 within 150k env steps; without a core <= 0.3;
- PPO (GRU) and IMPALA (LSTM) on CartPoleNoVelocity-v1 >= 475 within 500k; without a core < 200;
- PPO (GRU) on xminigrid/MiniGrid-Empty-6x6 >= 0.8 within 100k.

The test suite checks seed 0 of all four with their cores (tests/test_recurrent.py; CartPoleNoVelocity
in the Anakin loop).

    python benchmarks/bench_recurrent.py [--seeds 0,1,2] [--dir DIR] [--no-write]

Its runs are the memory suite's cells (`python -m benchmarks.suite memory`, benchmarks/suites.py), and
it writes that suite's report too.
"""

from __future__ import annotations

import argparse
import json
import datetime
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, verdict, write_section  # noqa: E402
from benchmarks.suite import FIGURES as SUITE_FIGURES, cell_dir, random_returns, report, run_suite  # noqa: E402
from benchmarks.suites import MEMORY, Cell  # noqa: E402
from sebulba.experiment.curves import plot_curves  # noqa: E402

FIGURES = Path(__file__).resolve().parent / "figures"
# (agent, env id, its preset's core, bar with the core, most without it (None: not a bar)); the
# runs are the memory suite's cells `{agent}` (the preset's core) and `{agent}-none`
BARS = [
    ("ppo", "gymnax/MemoryChain-bsuite", "lstm", 0.9, 0.3),
    ("ppo", "CartPoleNoVelocity-v1", "gru", 475.0, 200.0),
    ("impala", "CartPoleNoVelocity-v1", "lstm", 475.0, 200.0),
    ("ppo", "xminigrid/MiniGrid-Empty-6x6", "gru", 0.8, None),
]


def cell(label: str, env: str, seed: int) -> Cell:
    (task,) = [t for t in MEMORY.tasks if t.env == env]
    (agent,) = [a for a in task.agents if a.label == label]
    return Cell(agent, task, seed, MEMORY.budget)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--dir", type=Path, help="the suite's runs (default: a fresh temporary directory)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    seeds = tuple(int(s) for s in args.seeds.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        root = args.dir or Path(tmp)
        failures = run_suite(root, MEMORY, jobs=1, seeds=seeds)
        if failures:
            sys.exit("\n".join(failures))
        rows = []
        for agent, env, core, bar, ceiling in BARS:
            curves = []
            for seed in seeds:
                result = {}
                for kind in (core, "none"):
                    c = cell(agent if kind == core else f"{agent}-none", env, seed)
                    r = json.loads((cell_dir(root, MEMORY, c) / "result.json").read_text())
                    result[kind] = (r["return"], r["this_process_s"], r["env_steps"])
                    curves.append((f"{kind}, seed {seed}", cell_dir(root, MEMORY, c) / r["run_dir"] / "metrics.csv"))
                (with_core, wall, steps), (without, wall_none, _) = result[core], result["none"]
                below = "—" if ceiling is None else ("yes" if without <= ceiling else f"missed ({without:.2f} > {ceiling})")
                rows.append(f"| {agent} | {env} | {core} | {seed} | {steps:,} | {with_core:.2f} | "
                            f"{verdict(with_core, bar)} (>= {bar}) | {without:.2f} | {below} | {wall:.0f} / {wall_none:.0f} |")
                print(rows[-1], flush=True)
            if not args.no_write:
                FIGURES.mkdir(parents=True, exist_ok=True)
                name = f"recurrent_{agent}_{env.split('/')[-1]}.png"
                plot_curves(curves, FIGURES / name, f"{agent.upper()} on {env}: --core {core} vs none")
        suite_body = report(root, MEMORY, seeds, random_returns(root, MEMORY),
                            figures=SUITE_FIGURES if not args.no_write else Path(tmp) / "figures")
    body = (
        "## Recurrent cores: learning bars (`benchmarks/bench_recurrent.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_recurrent.py', *sys.argv[1:]])}` (the memory suite's cells, "
        "`python -m benchmarks.suite memory`)  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each run is `python -m experiments.<agent> "
        "--env ID` with the task's own preset (its core) or with `--core none`, in a fresh process, timed whole (the "
        "built-in CartPoleNoVelocity-v1 in the Sebulba loop, the JAX ids in the Anakin loop).\n\n"
        "| agent | env | core | seed | env steps | return with the core | bar met? | return with --core none | "
        "without a core below the ceiling? | wall time core / none (s) |\n"
        "|---|---|---|---|---:|---:|---|---:|---|---:|\n" + "\n".join(rows) + "\n\n"
        + "".join(f"![{agent} {env}](benchmarks/figures/recurrent_{agent}_{env.split('/')[-1]}.png)\n"
                  for agent, env, *_ in BARS)
    )
    print(body)
    print(suite_body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_recurrent", body)
        write_section(BENCH_FILE, "suite_memory", suite_body.replace("](assets/", "](docs/assets/"))
        write_section(BENCH_FILE.parent / "docs" / "benchmarks.md", "suite_memory", suite_body)


if __name__ == "__main__":
    main()
