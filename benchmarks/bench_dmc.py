"""DMC env steps/s: our native dm_control suite (envs/mujoco/dmc) against EnvPool's DMC.

Run from the repository root (EnvPool installed: `pip install -e '.[bench]'`):

    python benchmarks/bench_dmc.py                      # 4 tasks x sync/async x 16/256 envs
    python benchmarks/bench_dmc.py --only cheetah --no-write
    python benchmarks/bench_dmc.py --only async --baseline 2326cf9   # also ours at that commit, one run

The same tasks on both pools, 2 threads each (this host's cores), sync (16 and 256 envs) and
async (16 envs in batches of 8, 256 in batches of 128), measured interleaved as
benchmarks/bench_envs.py measures (its drivers and timing: random valid actions drawn
beforehand, each contestant built afresh every repeat, the median of the repeats). Ours steps
dm_control's exact physics sequence and tasks (tests/test_dmc.py); EnvPool's C++ tasks are its
own port. The table goes to BENCHMARKS.md between `<!-- bench_dmc:start/end -->`.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import envs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _baseline import import_baseline, short_rev  # noqa: E402  (benchmarks/_baseline.py)
from bench_envs import (  # noqa: E402  (benchmarks/bench_envs.py, run as a script)
    Contestant,
    Peer,
    Workload,
    envpool_async,
    envpool_contestant,
    envpool_sync,
    measure_workload,
    ours_async,
    ours_sync,
    parse_args,
    publish,
    render,
)

SECTION = "bench_dmc"
TASKS = ("CartpoleSwingup-v1", "CheetahRun-v1", "WalkerWalk-v1", "HumanoidRun-v1")
SHAPES = ((16, 16), (256, 256), (16, 8), (256, 128))  # (num_envs, batch_size): sync where equal
TARGET = 1.1  # issue 56: >= 1.1x EnvPool's DMC


def workloads(baseline: tuple[str, ModuleType] | None = None) -> list[Workload]:
    """The workloads; with `baseline` (rev, its `envs`), ours at that commit is a peer too."""
    out = []

    def before(build: Callable[..., Any]) -> list[Peer]:
        if baseline is None:
            return []
        rev, lib = baseline
        return [Peer(Contestant(f"ours at {rev}", lambda: build(lib=lib)))]

    for task, (n, b) in itertools.product(TASKS, SHAPES):
        mode = "sync" if n == b else f"async batch {b}"

        def ours(task: str = task, n: int = n, b: int = b, lib: ModuleType = envs) -> Any:
            return (ours_sync(task, n, lib=lib, num_threads=2) if n == b
                    else ours_async(task, n, b, lib=lib, num_threads=2))

        def peer(task: str = task, n: int = n, b: int = b) -> Any:
            return envpool_sync(task, n, num_threads=2) if n == b else envpool_async(task, n, b, num_threads=2)

        out.append(Workload(f"dmc-{task.split('-')[0].lower()}-{n}" + ("" if n == b else f"x{b}"),
                            f"{task}, {n} envs, {mode}, 2 threads", Contestant("ours", ours),
                            [Peer(envpool_contestant(peer), target=TARGET), *before(ours)]))
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv, __doc__.splitlines()[0])
    baseline = (short_rev(args.baseline), import_baseline(args.baseline)) if args.baseline else None
    only = args.only.lower()
    chosen = [w for w in workloads(baseline) if only in w.key.lower() or only in w.title.lower()]
    if not chosen:
        sys.exit(f"--only {args.only!r} matches no workload (keys: {[w.key for w in workloads()]})")
    sections = [(w, measure_workload(w, args.repeats, args.seconds)) for w in chosen]
    publish(SECTION, render(sections, args, "DMC env steps/s", "benchmarks/bench_dmc.py"), not args.no_write)


if __name__ == "__main__":
    main()
