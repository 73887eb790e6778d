"""The Anakin loop against PureJaxRL and against our Sebulba loop, PPO on CartPole with
PureJaxRL's `ppo.py` configuration (4 envs x 128 steps, 4 epochs x 4 minibatches, 64x64 tanh
MLP, lr 2.5e-4 annealed, 5e5 env steps), each a fresh process, interleaved over repeats:

- PureJaxRL's `ppo.py` in its own venv (gymnax 0.0.9: the project never installs it), through
  `benchmarks/peers/purejaxrl_ppo.py` (compilation timed apart from training) and, at its own 4
  envs, `python ppo.py` itself, unchanged (the whole command a user runs);
- ours: `python -m experiments.ppo` on `gymnax/CartPole-v1` (Anakin, by the id) and on the
  built-in CartPole-v1 with `--loop anakin` (the stateless compiled env), and the Sebulba loop
  on the built-in CartPole-v1, sync and async.

Training env steps/s leave compilation out: PureJaxRL's is its one call's; ours is measured
between the first and the last metrics row (the first row comes after the first, compiling,
call). `--seeds_curve` instead measures `--num_seeds` 1, 2, 4, 8, 16 on gymnax/CartPole-v1
against PureJaxRL's `jax.vmap(make_train)` over as many seeds (`--seeds_budget` steps each);
`--bars` runs the issue's learning bars in the Anakin loop through the CLI (each agent's preset
and budget, seeds 0-2): PPO and IMPALA >= 475, R2D2 >= 400, on gymnax/CartPole-v1 and on the
built-in CartPole-v1 with `--loop anakin`.

    python benchmarks/bench_anakin.py [--envs 4,64,1024] [--repeats 3] [--seeds_curve | --bars]
        [--purejaxrl_python /work/venv-pjrl/bin/python] [--purejaxrl_dir /work/pjrl] [--no-write]

PureJaxRL's venv: `python -m venv V && V/bin/pip install jax==0.10.2 flax optax distrax
gymnax==0.0.9 six brax navix` (its wrappers.py imports brax and navix), and ppo.py and
wrappers.py from github.com/luchris429/purejaxrl (purejaxrl/) in one directory.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import publish, run_cli, verdict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STEPS, TOTAL = 128, 500_000
PPO_FLAGS = ["--steps_per_cycle=128", "--num_epochs=4", "--num_minibatches=4", "--learning_rate=2.5e-4",
             "--hidden_sizes=64,64", "--clip_coef=0.2", "--entropy_cost=0.01", "--value_cost=0.5",
             "--max_grad_norm=0.5", "--discount=0.99", "--gae_lambda=0.95", "--eval_every=0", "--checkpoint_every=0",
             "--nocompilation_cache"]
OURS = {  # name: (env, extra flags)
    "ours Anakin, gymnax/CartPole-v1": ("gymnax/CartPole-v1", []),
    "ours Anakin, built-in CartPole-v1 (--loop anakin)": ("CartPole-v1", ["--loop=anakin"]),
    "ours Sebulba sync, built-in CartPole-v1": ("CartPole-v1", ["--loop=sebulba", "--noasync_mode"]),
    "ours Sebulba async, built-in CartPole-v1": ("CartPole-v1", ["--loop=sebulba", "--async_mode"]),
}


def budget(num_envs: int) -> int:
    """PureJaxRL's env steps at this many envs: whole updates of num_envs x 128 within 5e5."""
    per_update = num_envs * STEPS
    return TOTAL // per_update * per_update


def training_sps(run_dir: Path) -> float:
    """Env steps/s between the first and the last metrics row (compilation before the first)."""
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    first, last = rows[0], rows[-1]
    dt = float(last["wall_time"]) - float(first["wall_time"])
    return (float(last["env_steps"]) - float(first["env_steps"])) / dt if dt > 0 else float("nan")


HUNG: list[str] = []  # the PureJaxRL runs that hung and were run again


def purejaxrl(python: str, directory: str, num_envs: int, total: int = TOTAL, seeds: int = 1, tries: int = 3) -> dict:
    """One run of PureJaxRL's ppo.py. With several seeds its `vmap(make_train)` initialises the
    networks with a batched QR (orthogonal init), whose LAPACK kernel in jaxlib 0.10.2 on a CPU
    sometimes deadlocks the thread pool (seen here with gdb: every thread waiting in
    ParallelBatchMap); such a run is killed after `timeout` and run again (recorded in HUNG)."""
    timeout = 120 + 60 * seeds * total / 1e6  # compilation plus ten times the expected training time
    for attempt in range(tries):
        start = time.perf_counter()
        try:
            out = subprocess.run([python, str(ROOT / "benchmarks/peers/purejaxrl_ppo.py"), directory, str(num_envs),
                                  str(total), str(seeds)], capture_output=True, text=True, check=True, timeout=timeout)
            break
        except subprocess.TimeoutExpired:
            HUNG.append(f"{num_envs} envs x {seeds} seeds")
            print(f"PureJaxRL ({num_envs} envs, {seeds} seeds) hung for {timeout:.0f} s: run again", flush=True)
    else:
        raise RuntimeError(f"PureJaxRL ({num_envs} envs, {seeds} seeds) hung {tries} times")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - start
    result["sps"] = result["env_steps"] / result["train_s"]
    return result


def purejaxrl_unchanged(python: str, directory: str) -> float:
    start = time.perf_counter()
    subprocess.run([python, "ppo.py"], cwd=directory, capture_output=True, check=True)
    return time.perf_counter() - start


def ours(env: str, flags: list[str], num_envs: int, logdir: Path, extra: list[str] = (), total: int | None = None
         ) -> dict:
    total = budget(num_envs) if total is None else total
    wall, last, run_dir = run_cli("experiments.ppo", [f"--env={env}", f"--num_envs={num_envs}",
                                                      f"--total_env_steps={total}", *PPO_FLAGS, *flags,
                                                      *extra], logdir)
    return {"wall_s": wall, "sps": training_sps(run_dir), "final_return": float(last["episode_return_mean"]),
            "env_steps": int(float(last["env_steps"]))}


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def compare(args: argparse.Namespace) -> str:
    env_counts = [int(n) for n in args.envs.split(",")]
    results: dict[tuple[int, str], list[dict]] = {}
    unchanged: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for n in env_counts:
                results.setdefault((n, "PureJaxRL ppo.py"), []).append(
                    purejaxrl(args.purejaxrl_python, args.purejaxrl_dir, n))
                print(n, "PureJaxRL", results[(n, "PureJaxRL ppo.py")][-1], flush=True)
                for name, (env, flags) in OURS.items():
                    if n >= 1024 and "Sebulba" in name:
                        continue  # 3 updates of 131k steps: the Sebulba loop's host envs at 1,024 are another table
                    results.setdefault((n, name), []).append(ours(env, flags, n, Path(tmp) / f"r{repeat}"))
                    print(n, name, results[(n, name)][-1], flush=True)
            if 4 in env_counts:
                unchanged.append(purejaxrl_unchanged(args.purejaxrl_python, args.purejaxrl_dir))
                print("PureJaxRL ppo.py unchanged", unchanged[-1], flush=True)
    lines = ["| envs | run | whole command s | training env steps/s (compile apart) | vs PureJaxRL | final return |",
             "|---|---|---|---|---|---|"]
    for n in env_counts:
        peer = median([r["sps"] for r in results[(n, "PureJaxRL ppo.py")]])
        for (count, name), runs in results.items():
            if count != n:
                continue
            sps = median([r["sps"] for r in runs])
            lines.append(f"| {n} | {name} | {median([r['wall_s'] for r in runs]):.1f} | {sps:,.0f} | "
                         f"{sps / peer:.2f}x | {median([r['final_return'] for r in runs]):.1f} |")
    if unchanged:
        lines.append(f"| 4 | PureJaxRL `python ppo.py` unchanged (DEBUG prints every update) | {median(unchanged):.1f} | "
                     "| | |")
    return "\n".join(lines) + "\n"


def seeds_curve(args: argparse.Namespace) -> str:
    """`--num_seeds` 1..16 against PureJaxRL's `vmap(make_train)` over as many seeds, each replica
    `--seeds_budget` env steps (the curve's point is throughput, not the final return)."""
    counts = [1, 2, 4, 8, 16]
    total = args.seeds_budget // (4 * STEPS) * 4 * STEPS
    runs: dict[tuple[str, int], list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for s in counts:
                peer = purejaxrl(args.purejaxrl_python, args.purejaxrl_dir, 4, total, s)
                runs.setdefault(("PureJaxRL", s), []).append(peer)
                print(s, "PureJaxRL", peer, flush=True)
                r = ours("gymnax/CartPole-v1", [], 4, Path(tmp) / f"r{repeat}", [f"--num_seeds={s}"], total=total)
                r["sps"] *= s  # training_sps counts one replica's env steps (the budget's): all seeds' are s times
                runs.setdefault(("ours", s), []).append(r)
                print(s, "ours", r, flush=True)
    lines = ["| seeds | run | whole command s | training env steps/s, all seeds | vs its 1 seed | vs PureJaxRL |"
             " mean final return |", "|---|---|---|---|---|---|---|"]
    for s in counts:
        for name in ("ours", "PureJaxRL"):
            sps = median([r["sps"] for r in runs[(name, s)]])
            one = median([r["sps"] for r in runs[(name, 1)]])
            peer = median([r["sps"] for r in runs[("PureJaxRL", s)]])
            wall = median([r["wall_s"] for r in runs[(name, s)]])
            ret = median([r["final_return"] for r in runs[(name, s)]])
            lines.append(f"| {s} | {name} | {wall:.1f} | {sps:,.0f} | {sps / one:.2f}x | {sps / peer:.2f}x | {ret:.1f} |")
    ratio = {name: median([r["sps"] for r in runs[(name, 8)]]) / median([r["sps"] for r in runs[(name, 1)]])
             for name in ("ours", "PureJaxRL")}
    lines.append(f"\nTarget: 8 seeds >= 4x one seed's env steps/s: {verdict(ratio['ours'], 4.0)} "
                 f"(PureJaxRL's own 8 seeds: {ratio['PureJaxRL']:.2f}x its one seed)")
    if HUNG:
        lines.append(f"\nPureJaxRL runs that hung in jaxlib's batched QR (its vmapped orthogonal init) and were run "
                     f"again: {', '.join(HUNG)}.")
    return "\n".join(lines) + "\n"


BARS = [("experiments.ppo", 475.0), ("experiments.impala", 475.0), ("experiments.r2d2", 400.0)]


def bars(args: argparse.Namespace) -> str:
    lines = ["| agent | env | seed | env steps | final return (last 20 episodes) | bar | whole command s |",
             "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for module, bar in BARS:
            for env, flags in (("gymnax/CartPole-v1", []), ("CartPole-v1", ["--loop=anakin"])):
                for seed in (0, 1, 2):
                    wall, last, _ = run_cli(module, [f"--env={env}", *flags, f"--seed={seed}", "--checkpoint_every=0"],
                                            Path(tmp) / module)
                    ret = float(last["episode_return_mean"])
                    lines.append(f"| {module.split('.')[1]} | {env} {' '.join(flags)} | {seed} | "
                                 f"{int(float(last['env_steps'])):,} | {ret:.1f} | {verdict(ret, bar, '{:.1f}')} | "
                                 f"{wall:.1f} |")
                    print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="4,64,1024")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds_curve", action="store_true")
    parser.add_argument("--seeds_budget", type=int, default=200_000, help="--seeds_curve: env steps per replica")
    parser.add_argument("--bars", action="store_true")
    parser.add_argument("--purejaxrl_python", default=os.environ.get("PUREJAXRL_PYTHON", "/work/venv-pjrl/bin/python"))
    parser.add_argument("--purejaxrl_dir", default=os.environ.get("PUREJAXRL_DIR", "/work/pjrl"))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    command = "python benchmarks/bench_anakin.py " + " ".join(sys.argv[1:])
    header = (f"Command: `{command}`; {platform.node()} ({os.cpu_count()} CPUs), "
              f"{datetime.date.today().isoformat()}; medians of {args.repeats} interleaved repeats.\n\n")
    if args.bars:
        publish("bench_anakin_bars", "### Learning bars in the Anakin loop (each agent's preset and budget)\n\n"
                + header.replace(f"; medians of {args.repeats} interleaved repeats", "") + bars(args), not args.no_write)
    elif args.seeds_curve:
        publish("bench_anakin_seeds", "### `--num_seeds` on gymnax/CartPole-v1 (PPO, 4 envs x 128 steps)\n\n"
                + header + seeds_curve(args), not args.no_write)
    else:
        publish("bench_anakin", "### Anakin vs PureJaxRL vs Sebulba: PPO on CartPole, PureJaxRL's configuration\n\n"
                + header + compare(args), not args.no_write)


if __name__ == "__main__":
    main()
