"""Time to learning: from building an IMPALA Pong loop to the end of its second learner update,
this tree against an older commit of ours, in the same run.

    python benchmarks/bench_startup.py [--baseline REV] [--envs 16] [--inferencers 2] [--repeats 3]

Each repeat runs every version in a fresh process (interleaved, alternating which goes first):
the Atari preset (`experiments.impala.make_experiment("Pong-v5")`, IMPALA ResNet, 2 minibatches)
with `--envs` envs per inferencer, then `GymnasiumLoop(...)` and `loop.run(max_cycles=2)` in async
mode. Timed: the constructor (env pools; in this tree also compiling ahead), then the run (the
inferencers' first cycles, the learner's first two updates: what still compiles there), and their
sum. The baseline is checked out with `git worktree` into a temporary folder. Medians go into
BENCHMARKS.md between `<!-- bench_startup:start -->` and `<!-- bench_startup:end -->`; `--out DIR`
writes the section to DIR/bench_startup.md instead (the GPU host).

    python benchmarks/bench_startup.py --cli [--baseline REV] [--repeats 5]

`--cli`: what a user waits for, `python -m experiments.ppo` (CartPole) with a one-update budget
(`--total_env_steps=1 --checkpoint_every=0 --noprogress`), each run a fresh process: this tree
with an empty compilation cache (cold: a new XDG_CACHE_HOME), then again with the cache that run
filled (warm), and the baseline as it was (it had no cache). Timed: the process's wall time from
start to exit (imports, compiling, env pools, one cycle, one update, the run's outputs), and, for
this tree, the age of the process at its "the first learner update is done" line. Section
`bench_startup_cli`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import BENCH_FILE, write_section  # noqa: E402

SECTION = "bench_startup"
CLI_SECTION = "bench_startup_cli"
CLI_ARGS = ["-m", "experiments.ppo", "--total_env_steps=1", "--checkpoint_every=0", "--noprogress"]
FIRST_UPDATE = re.compile(r"the first learner update is done, ([0-9.]+) s after the process started")
CHILD = """
import json, sys, time
import envs
from experiments import impala
from sebulba.agents.impala.agent import Impala
from sebulba.loop.loop import GymnasiumLoop
import jax
exp = impala.make_experiment("Pong-v5", num_envs={envs}, inferencers_per_device={inferencers})
agent = Impala(envs.make_spec("Pong-v5", **exp.loop.env_kwargs), exp.agent)
t0 = time.perf_counter()
loop = GymnasiumLoop(agent, exp.loop)
t1 = time.perf_counter()
loop.run(max_cycles=2)
jax.block_until_ready(loop.learner.networks)
t2 = time.perf_counter()
loop.close()
print(json.dumps({{"construct": t1 - t0, "run": t2 - t1, "device": str(jax.devices()[0].device_kind)}}))
"""


def run_once(tree: Path, envs: int, inferencers: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, "-c", CHILD.format(envs=envs, inferencers=inferencers)], cwd=tree, env=env,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cli_once(tree: Path, cache: Path | None, logdir: Path) -> dict:
    """One `python -m experiments.ppo` process in `tree`: wall seconds, and the first update's age
    when the tree says it. `cache`: its XDG_CACHE_HOME (the compilation cache's parent)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    for name in ("XLA_FLAGS", "JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"):
        env.pop(name, None)
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, *CLI_ARGS, f"--logdir={logdir}"], cwd=tree, env=env, capture_output=True,
                         text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{tree}: exit {out.returncode}\n{out.stderr[-2000:]}")
    m = FIRST_UPDATE.search(out.stderr)
    return {"wall": wall, "first_update": float(m.group(1)) if m else None}


def cli_main(args: argparse.Namespace, trees: dict[str, Path]) -> str:
    """The --cli section: this tree cold and warm, the baseline, interleaved."""
    (ours, ours_tree), (peer, peer_tree) = trees.items()
    results: dict[str, list[dict]] = {"cold": [], "warm": [], "baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            cache, logdir = Path(tmp) / f"cache{r}", Path(tmp) / "runs"
            runs = [("cold", ours_tree, cache), ("warm", ours_tree, cache)]
            order = [("baseline", peer_tree, None), *runs] if r % 2 else [*runs, ("baseline", peer_tree, None)]
            for name, tree, c in order:
                results[name].append(cli_once(tree, c, logdir))
                print(f"repeat {r + 1}/{args.repeats} {name:8s} {results[name][-1]}", flush=True)

    def med(name: str, key: str) -> str:
        values = [x[key] for x in results[name] if x[key] is not None]
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})" if values else "—"

    base_wall = statistics.median(x["wall"] for x in results["baseline"])
    rows = [f"| {ours}, cold cache | {med('cold', 'first_update')} | {med('cold', 'wall')} | "
            f"{base_wall / statistics.median(x['wall'] for x in results['cold']):.2f}x |",
            f"| {ours}, warm cache | {med('warm', 'first_update')} | {med('warm', 'wall')} | "
            f"{base_wall / statistics.median(x['wall'] for x in results['warm']):.2f}x |",
            f"| {peer} (no cache) | — (no such line) | {med('baseline', 'wall')} | 1.00x |"]
    return (
        "## Time to the first update, `python -m experiments.ppo` (`benchmarks/bench_startup.py --cli`)\n\n"
        f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC with `python benchmarks/bench_startup.py "
        f"{' '.join(sys.argv[1:])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores  \n"
        f"`python {' '.join(CLI_ARGS)}` (CartPole-v1, 8 envs x 128 steps, one cycle and one update), each run a "
        f"fresh process; seconds, median (min-max) of {args.repeats} interleaved repeats. First update: the process's "
        "age at its 'the first learner update is done' line (imports, compiling, env pools, the first cycle and "
        "update). Whole process: start to exit, the run's outputs included (the baseline's figure too). Cold: an "
        "empty compilation cache; warm: the cache the cold run filled.\n\n"
        "| version | first update (s) | whole process (s) | baseline / this (whole) |\n"
        "|---|---:|---:|---:|\n" + "\n".join(rows) + "\n"
    )


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="1a4ac82", help="an older commit of ours to compare with")
    ap.add_argument("--baseline_tree", type=Path,
                    help="that commit already exported to a folder (`git archive REV | tar -x -C DIR`): for a host "
                         "whose copy of the tree has no .git, such as the lent GPU host")
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--inferencers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the section to OUT/bench_startup.md, not BENCHMARKS.md")
    ap.add_argument("--cli", action="store_true", help="time `python -m experiments.ppo` to its first update instead "
                    "(cold and warm compilation cache)")
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        if args.baseline_tree:
            rev, head, base = args.baseline, "working tree", args.baseline_tree
        else:
            rev, head = (git("rev-parse", "--short", r) for r in (args.baseline, "HEAD"))
            head += " with local changes" if git("status", "--porcelain", "--untracked-files=no") else ""
            base = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "baseline"
            git("worktree", "add", "--detach", str(base), rev)
            stack.callback(subprocess.run, ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
        trees = {f"this tree ({head})": ROOT, f"baseline ({rev})": base}
        if args.cli:
            body = cli_main(args, trees)
            print(body)
            write_section(BENCH_FILE, CLI_SECTION, body)
            return
        results: dict[str, list[dict]] = {name: [] for name in trees}
        for r in range(args.repeats):
            for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                results[name].append(run_once(trees[name], args.envs, args.inferencers))
                print(name, results[name][-1], flush=True)

    def med(name: str, key: str) -> float:
        return statistics.median(x["construct"] + x["run"] if key == "total" else x[key] for x in results[name])

    ours, peer = trees
    device = results[ours][0]["device"]
    rows = [f"| {name} | {med(name, 'construct'):.1f} | {med(name, 'run'):.1f} | {med(name, 'total'):.1f} | "
            + ("—" if name == ours else f"{med(peer, 'total') / med(ours, 'total'):.2f}x") + " |"
            for name in (ours, peer)]
    body = (
        "## Time to learning, IMPALA Pong (`benchmarks/bench_startup.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC with `python benchmarks/bench_startup.py "
        f"{' '.join(sys.argv[1:])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, jax device {device}  \n"
        f"The Atari preset with {args.inferencers} inferencers x {args.envs} envs, async mode; seconds, median of "
        f"{args.repeats} interleaved repeats, each a fresh process. Constructor: env pools (and, since this tree, "
        "compiling the act and the learner's update ahead); run: `loop.run(max_cycles=2)`, the first cycles and "
        "two learner updates.\n\n"
        "| version | constructor (s) | run of 2 updates (s) | total (s) | baseline / this tree |\n"
        "|---|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
    )
    print(body)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_startup.md").write_text(body)
    else:
        write_section(BENCH_FILE, SECTION, body)


if __name__ == "__main__":
    main()
