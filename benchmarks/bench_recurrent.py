"""The recurrent cores' learning bars (issue 53), as a user runs them (`python -m experiments.<agent>
--env ID`, each memory task's own preset, in fresh processes), with and without the core (`--core
none`: the same run without memory), seeds as given. Mean return over the last 20 episodes:

- PPO (LSTM) on gymnax/MemoryChain-bsuite >= 0.9 within 150k env steps; without a core <= 0.3;
- PPO (GRU) and IMPALA (LSTM) on CartPoleNoVelocity-v1 >= 475 within 500k; without a core < 200;
- PPO (GRU) on xminigrid/MiniGrid-Empty-6x6 >= 0.8 within 100k.

The test suite checks seed 0 of all four with their cores (tests/test_recurrent.py; CartPoleNoVelocity
in the Anakin loop).

    python benchmarks/bench_recurrent.py [--seeds 0,1,2] [--no-write]
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import BENCH_FILE, run_cli, seed_args, verdict, write_section  # noqa: E402
from sebulba.experiment.curves import plot_curves  # noqa: E402

FIGURES = Path(__file__).resolve().parent / "figures"
# (agent, env id, its preset's core, bar with the core, most without it (None: not a bar))
BARS = [
    ("ppo", "gymnax/MemoryChain-bsuite", "lstm", 0.9, 0.3),
    ("ppo", "CartPoleNoVelocity-v1", "gru", 475.0, 200.0),
    ("impala", "CartPoleNoVelocity-v1", "lstm", 475.0, 200.0),
    ("ppo", "xminigrid/MiniGrid-Empty-6x6", "gru", 0.8, None),
]


def main() -> None:
    seeds, no_write = seed_args(__doc__)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for agent, env, core, bar, ceiling in BARS:
            curves = []
            for seed in seeds:
                result = {}
                for kind in (core, "none"):
                    wall, last, run_dir = run_cli(f"experiments.{agent}", [f"--env={env}", f"--core={kind}",
                                                                           f"--seed={seed}"],
                                                  Path(tmp) / f"{agent}-{env.replace('/', '_')}-{kind}-{seed}")
                    result[kind] = (float(last["episode_return_mean"]), wall, int(last["env_steps"]))
                    curves.append((f"{kind}, seed {seed}", run_dir / "metrics.csv"))
                (with_core, wall, steps), (without, wall_none, _) = result[core], result["none"]
                below = "—" if ceiling is None else ("yes" if without <= ceiling else f"missed ({without:.2f} > {ceiling})")
                rows.append(f"| {agent} | {env} | {core} | {seed} | {steps:,} | {with_core:.2f} | "
                            f"{verdict(with_core, bar)} (>= {bar}) | {without:.2f} | {below} | {wall:.0f} / {wall_none:.0f} |")
                print(rows[-1], flush=True)
            if not no_write:
                FIGURES.mkdir(parents=True, exist_ok=True)
                name = f"recurrent_{agent}_{env.split('/')[-1]}.png"
                plot_curves(curves, FIGURES / name, f"{agent.upper()} on {env}: --core {core} vs none")
    body = (
        "## Recurrent cores: learning bars (`benchmarks/bench_recurrent.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join(['benchmarks/bench_recurrent.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; each run is `python -m experiments.<agent> "
        "--env ID --core C` with the task's own preset, in a fresh process, timed whole (the built-in "
        "CartPoleNoVelocity-v1 in the Sebulba loop, the JAX ids in the Anakin loop).\n\n"
        "| agent | env | core | seed | env steps | return with the core | bar met? | return with --core none | "
        "without a core below the ceiling? | wall time core / none (s) |\n"
        "|---|---|---|---|---:|---:|---|---:|---|---:|\n" + "\n".join(rows) + "\n\n"
        + "".join(f"![{agent} {env}](benchmarks/figures/recurrent_{agent}_{env.split('/')[-1]}.png)\n"
                  for agent, env, *_ in BARS)
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, "bench_recurrent", body)


if __name__ == "__main__":
    main()
