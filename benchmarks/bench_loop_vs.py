"""`bench_loop.py` before and after a change, in one run: an older commit's tree and this one,
each variant's figure from fresh processes in turn.

    python benchmarks/bench_loop_vs.py --baseline fb7de65                     # actor-only and end to end
    python benchmarks/bench_loop_vs.py --baseline fb7de65 --only actor --repeats 5 --no-write

`git archive REV` puts the older tree in a temporary folder. Each repeat runs
`benchmarks/bench_loop.py --repeats 1 --no-write --only ...` once in each tree, in a fresh
process, the order alternating from repeat to repeat; the median of each variant's repeats is
reported with after / before. Variants are matched by their keys (`actor-donate-16`,
`e2e-async-256`, ...): a key only one side has is reported on that side alone. Results go into
BENCHMARKS.md between `<!-- bench_loop_vs:start -->` and `<!-- bench_loop_vs:end -->`.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _report import BENCH_FILE, publish

ROOT = Path(__file__).resolve().parents[1]
SECTION = "bench_loop_vs"
MEDIAN = re.compile(r"^\s*median (\S+)\s+([\d,]+) steps/s", re.M)


def checkout(rev: str) -> Path:
    """The tree at rev, in a temporary folder (removed at exit by the caller)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-loop-baseline-"))
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def one_run(tree: Path, only: str) -> dict[str, float]:
    """{variant key: env steps/s} of one `bench_loop.py --repeats 1` in tree, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "benchmarks/bench_loop.py", "--repeats", "1", "--no-write", "--only", only],
                         cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"bench_loop.py in {tree} failed:\n{out.stderr[-3000:]}")
    return {key: float(rate.replace(",", "")) for key, rate in MEDIAN.findall(out.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the older commit, e.g. fb7de65")
    ap.add_argument("--only", default="actor-donate,e2e", help="bench_loop.py's --only (default: actor-only, end to end)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help=f"print the table only, leave {BENCH_FILE.name} alone")
    args = ap.parse_args()
    rev = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()
    before_tree = checkout(rev)
    rates: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    try:
        for r in range(args.repeats):
            sides = [("before", before_tree), ("after", ROOT)]
            for side, tree in sides if r % 2 == 0 else sides[::-1]:
                for key, rate in one_run(tree, args.only).items():
                    rates[side].setdefault(key, []).append(rate)
                    print(f"  repeat {r + 1}/{args.repeats} {side:<6} {key:<18} {rate:>12,.0f} steps/s", flush=True)
    finally:
        shutil.rmtree(before_tree, ignore_errors=True)
    keys = list(dict.fromkeys([*rates["before"], *rates["after"]]))
    med = {side: {k: statistics.median(v) for k, v in rates[side].items()} for side in rates}
    rows = []
    for key in keys:
        b, a = med["before"].get(key), med["after"].get(key)
        ratio = f"{a / b:.2f}x" if a and b else "—"
        spread = lambda side: ", ".join(f"{x:,.0f}" for x in rates[side].get(key, []))  # noqa: E731
        rows.append(f"| {key} | {b:,.0f} ({spread('before')}) | {a:,.0f} ({spread('after')}) | {ratio} |"
                    if a and b else f"| {key} | {b or '—'} | {a or '—'} | — |")
    command = shlex.join(["python", "benchmarks/bench_loop_vs.py", *sys.argv[1:]])
    body = "\n".join([
        "## The loop before and after a change (`benchmarks/bench_loop_vs.py`)",
        "",
        f"Run {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} with `{command}`: before = {rev}, "
        f"after = {head} (working tree)  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} cores. `bench_loop.py`'s workloads (SimplePolicyGradient "
        "5x200, CartPole-v1, 100 steps per cycle, 20 timed cycles), each tree in a fresh process per repeat, the order "
        f"alternating; median of {args.repeats} (each repeat's figure in brackets), env steps/s.",
        "",
        "| variant | before | after | after / before |",
        "|---|---:|---:|---:|",
        *rows,
    ]) + "\n"
    publish(SECTION, body, not args.no_write)


if __name__ == "__main__":
    main()
