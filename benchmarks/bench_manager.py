"""Env manager steps/s with a 100 kB observation env: shared memory on vs off.

Run from the repository root:

    python benchmarks/bench_manager.py                  # 5 interleaved repeats of ~1 s each
    python benchmarks/bench_manager.py --repeats 3 --seconds 0.5 --no-write

SyncSubprocessEnvManager steps --envs BigObsEnv envs (a uint8 Box of shape (100, 1000): 100 kB)
whose step does almost nothing, so the figure is the cost of moving observations between
processes. With shared_memory=True the worker writes the observation into a shared block and the
manager copies it out; with False it is pickled through the pipe. Each repeat builds one manager
afresh (only one is alive at a time), warms it up, and times a number of step() calls calibrated
once to take about --seconds; the median steps/s over the repeats is reported, the two settings
interleaved. The result goes between `<!-- bench_manager:start/end -->` in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from _report import BENCH_FILE, write_section

from envs import SyncSubprocessEnvManager
from tests.support.manager_envs import BigObsEnv

SECTION = "bench_manager"
SHAPE = (100, 1000)


def make_env() -> BigObsEnv:
    return BigObsEnv(shape=SHAPE, length=10**9)


def run(shared: bool, envs: int, calls: int | None, seconds: float) -> tuple[float, int]:
    """(steps/s, calls) of one fresh manager; calls=None calibrates to about `seconds`."""
    with SyncSubprocessEnvManager([make_env] * envs, dict(shared_memory=shared)) as mgr:
        mgr.launch()
        assert mgr.uses_shared_memory(0) is shared
        actions = {i: 0 for i in range(envs)}
        for _ in range(20):  # warm-up
            mgr.step(actions)
        if calls is None:
            t0, calls = time.perf_counter(), 0
            while time.perf_counter() - t0 < seconds / 2:
                mgr.step(actions)
                calls += 1
            calls *= 2
        t0 = time.perf_counter()
        for _ in range(calls):
            mgr.step(actions)
        dt = time.perf_counter() - t0
    return calls * envs / dt, calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--envs", type=int, default=4)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    calls: dict[bool, int | None] = {True: None, False: None}
    rates: dict[bool, list[float]] = {True: [], False: []}
    for r in range(args.repeats):
        for shared in (True, False) if r % 2 == 0 else (False, True):
            rate, calls[shared] = run(shared, args.envs, calls[shared], args.seconds)
            rates[shared].append(rate)
    on, off = statistics.median(rates[True]), statistics.median(rates[False])
    command = shlex.join(["python", "benchmarks/bench_manager.py", *sys.argv[1:]])
    obs_kb = np.prod(SHAPE) / 1000
    body = "\n".join([
        "## Env manager: shared memory on vs off (`benchmarks/bench_manager.py`)",
        "",
        f"Run {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} with `{command}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} cores; python {platform.python_version()}, "
        f"numpy {np.__version__}, gymnasium {gym.__version__}  ",
        f"SyncSubprocessEnvManager, {args.envs} envs of a {obs_kb:.0f} kB uint8 observation ({SHAPE}), one "
        f"worker process each; median of {args.repeats} interleaved repeats of ~{args.seconds:g} s.",
        "",
        "| shared_memory | env steps/s | repeats (steps/s) |",
        "|---|---:|---|",
        f"| True | {on:,.0f} | {', '.join(f'{x:,.0f}' for x in rates[True])} |",
        f"| False (pickled through the pipe) | {off:,.0f} | {', '.join(f'{x:,.0f}' for x in rates[False])} |",
        "",
        f"Shared memory is {on / off:.2f}x the pickled path.",
        "",
    ])
    print("\n" + body)
    if not args.no_write:
        write_section(BENCH_FILE, SECTION, body)


if __name__ == "__main__":
    main()
