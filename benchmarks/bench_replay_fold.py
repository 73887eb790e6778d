"""The transition replay's fold (`sebulba.replay.transitions.add`: one cycle written into a 1M-transition
replay, the first of the learner's two calls per cycle) beside the same function at an older commit,
in one process on one machine.

    python benchmarks/bench_replay_fold.py [--baseline 43d3885] [--calls 300] [--repeats 5] [--no-write]

Shapes are HalfCheetah-v5's (17 observations, 6 actions), n_step 1, per layout (envs x steps per
cycle): 1 x 1 (CleanRL's schedule: one env, one update per env step) and 4 x 8 (the MuJoCo preset).
Each version is jitted with the replay donated, as the learner calls it, warmed up, then timed over
`--calls` back-to-back calls; the repeats alternate the versions, and the table gives their median
(ms a call) and the copies of replay arrays in each compiled program.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _report  # noqa: E402
from sebulba.replay import transitions  # noqa: E402
from sebulba.types import EnvStep  # noqa: E402

MODULE = "sebulba/replay/transitions.py"
CAPACITY = 1_000_000
OBS, ACT = 17, 6
LAYOUTS = ((1, 1), (4, 8))


def module_at(rev: str, folder: Path):
    """transitions.py as it was at commit `rev`, imported under its own name (its imports are this
    tree's: priorities and types, which the fold's change left alone)."""
    source = subprocess.run(["git", "show", f"{rev}:{MODULE}"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    path = folder / f"transitions_{rev}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"transitions_{rev}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fold_program(module, envs: int, steps: int):
    """(jitted add with the replay donated, a fresh replay, the cycle's env steps and actions, copies
    of replay arrays in its compiled program)."""
    spec = jax.ShapeDtypeStruct
    row = EnvStep(obs=spec((OBS,), jnp.float32), reward=spec((), jnp.float32), terminated=spec((), jnp.bool_),
                  truncated=spec((), jnp.bool_), first=spec((), jnp.bool_))
    replay = module.init(CAPACITY, envs, steps, 1, row, spec((ACT,), jnp.float32))
    env_step = EnvStep(obs=jnp.ones((steps + 1, envs, OBS)), reward=jnp.ones((steps + 1, envs)),
                       terminated=jnp.zeros((steps + 1, envs), bool), truncated=jnp.zeros((steps + 1, envs), bool),
                       first=jnp.zeros((steps + 1, envs), bool))
    action = jnp.ones((steps, envs, ACT))
    add = jax.jit(lambda r, e, a: module.add(r, e, a, 1), donate_argnums=(0,))
    rows = -(-CAPACITY // envs)
    text = add.lower(replay, env_step, action).compile().as_text()
    copies = len(re.findall(rf"= [a-z0-9]+\[1,{rows},{envs}[\],]\S* copy\(", text))
    return add, replay, env_step, action, copies


def time_calls(add, replay, env_step, action, calls: int) -> tuple[float, object]:
    for _ in range(3):
        replay = add(replay, env_step, action)
    jax.block_until_ready(replay)
    start = time.perf_counter()
    for _ in range(calls):
        replay = add(replay, env_step, action)
    jax.block_until_ready(replay)
    return (time.perf_counter() - start) / calls * 1e3, replay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="43d3885", help="the older commit to hold the fold against")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        versions = {f"{args.baseline} (before)": module_at(args.baseline, Path(tmp)), "this tree": transitions}
        rows = []
        for envs, steps in LAYOUTS:
            programs = {name: list(fold_program(m, envs, steps)) for name, m in versions.items()}
            times = {name: [] for name in versions}
            for _ in range(args.repeats):
                for name, p in programs.items():
                    ms, p[1] = time_calls(*p[:4], args.calls)
                    times[name].append(ms)
            (old, new) = (statistics.median(times[name]) for name in versions)
            (old_copies, new_copies) = (programs[name][4] for name in versions)
            rows.append(f"| {envs} x {steps} | {old:.3f} | {new:.3f} | {old / new:.1f}x | {old_copies} | {new_copies} |")
    body = (
        "## The transition replay's fold against its older version (`benchmarks/bench_replay_fold.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`{' '.join(['python benchmarks/bench_replay_fold.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only (jax {jax.__version__}); the cores may "
        "have been shared with other work. `transitions.add` into a replay of "
        f"{CAPACITY:,} HalfCheetah-v5 transitions, jitted with the replay donated; ms a call, the median of "
        f"{args.repeats} alternating repeats of {args.calls} calls.\n\n"
        f"| envs x steps a cycle | {args.baseline}: ms | this tree: ms | speed-up | copies of replay arrays, "
        f"{args.baseline} | this tree |\n|---|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
    )
    _report.publish("bench_replay_fold", body, not args.no_write)


if __name__ == "__main__":
    main()
