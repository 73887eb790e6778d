"""Issue 39's IPPO/MAPPO bar on MPE's simple_spread_v3, all in one run: random play, our IPPO and
MAPPO (`python -m experiments.ppo`'s preset, 1M env steps, each seed a fresh CLI process timed
whole, under 10 minutes each), and the peer: JaxMARL's published IPPO baseline (its code and
config, `benchmarks/peers/jaxmarl_ippo.py`, in JaxMARL's own venv) at 1M env steps and at its
config's own budget (1e7). The bar: our median closes at least half of the gap between random and
the best peer figure; MAPPO at least as good as IPPO.

    python benchmarks/bench_ippo.py [--seeds 0,1,2] [--agents ippo,mappo] [--episodes 2000]
        [--agents ippo,mappo,ippo-anakin,mappo-anakin] [--section NAME] [--jaxmarl DIR --jaxmarl_python PYTHON --jaxmarl_budgets 1e6:3,1e7:1] [--no-write]

Units: the mean per-player episode return (PettingZoo's simple_spread_v3, local_ratio 0.5), what
our `episode_return_mean` reports; JaxMARL's logged returns (x 3 agents) are divided back.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._report import publish, run_cli  # noqa: E402

SPREAD = "pettingzoo/mpe2/simple_spread_v3"
JAX_SPREAD = "jaxmarl/MPE_simple_spread_v3"  # JaxMARL's spread in the Anakin loop (the `jaxmarl` extra)
# Each agent: the env id and the flags of `python -m experiments.ppo` besides --env and --seed.
AGENTS = {"ippo": (SPREAD, []), "mappo": (SPREAD, ["--env_kwargs=global_state=True"]),
          "ippo-anakin": (JAX_SPREAD, ["--loop=anakin"]),
          "mappo-anakin": (JAX_SPREAD, ["--loop=anakin", "--env_kwargs=global_state=True"])}
MINUTES = 10.0


def random_play(episodes: int, seed: int = 0) -> tuple[float, float]:
    """Mean and standard error of the per-player return of uniform random actions, over `episodes`
    player episodes of our pool (16 envs x 3 players, 25-step episodes)."""
    import envs

    pool = envs.make(SPREAD, num_envs=16, seed=seed)
    rng = np.random.default_rng(seed)
    pool.reset()
    running = np.zeros(16 * 3)
    finished: list[float] = []
    while len(finished) < episodes:
        _, reward, terminated, truncated, _ = pool.step(rng.integers(5, size=16 * 3))
        running += reward
        done = np.logical_or(terminated, truncated)
        finished.extend(running[done].tolist())
        running[done] = 0.0
    pool.close()
    r = np.array(finished[:episodes])
    return float(r.mean()), float(r.std(ddof=1) / np.sqrt(len(r)))


def jaxmarl(directory: str, python: str, total: float, seeds: int) -> dict:
    """JaxMARL's IPPO at `total` env steps, `seeds` seeds under vmap: the peer runner's JSON."""
    runner = Path(__file__).resolve().parent / "peers" / "jaxmarl_ippo.py"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLA_FLAGS")}
    out = subprocess.run([python, str(runner), directory, str(total), str(seeds)], env=env, check=True,
                         capture_output=True, text=True, cwd=directory)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--agents", default="ippo,mappo",
                        help=f"of {', '.join(AGENTS)}: the -anakin ones train JaxMARL's spread in the Anakin loop")
    parser.add_argument("--section", default="bench_ippo", help="the BENCHMARKS.md section this run replaces")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--jaxmarl", default=None, help="a JaxMARL checkout (github.com/FLAIROx/JaxMARL)")
    parser.add_argument("--jaxmarl_python", default=None, help="the python of a venv with jaxmarl, distrax, hydra")
    parser.add_argument("--jaxmarl_budgets", default="1e6,1e7",
                        help="env steps of the peer's runs (its config: 1e7), each BUDGET or BUDGET:SEEDS (default: as many "
                             "seeds as ours)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    unknown = sorted(set(args.agents.split(",")) - set(AGENTS))
    if unknown:
        parser.error(f"--agents: unknown {unknown}; known: {', '.join(AGENTS)}")
    command = "python benchmarks/bench_ippo.py " + " ".join(sys.argv[1:])

    mean, se = random_play(args.episodes)
    lines = ["| policy | seed(s) | env steps | mean per-player return | whole command |", "|---|---|---:|---:|---|",
             f"| random (uniform over the 5 actions) | - | - | {mean:.1f} (s.e. {se:.2f}, {args.episodes} episodes) | - |"]
    print(lines[-1], flush=True)
    peers: dict[str, float] = {}
    if args.jaxmarl:
        for spec in args.jaxmarl_budgets.split(","):
            total_text, _, seeds_text = spec.partition(":")
            total, num_seeds = float(total_text), int(seeds_text or len(seeds))
            got = jaxmarl(args.jaxmarl, args.jaxmarl_python or sys.executable, total, num_seeds)
            med = statistics.median(got["returns_per_player"])
            peers[f"JaxMARL IPPO at {total:.0e}"] = med
            lines.append(f"| JaxMARL IPPO (`baselines/IPPO/ippo_ff_mpe.py`, its config) | {num_seeds} under vmap | "
                         f"{int(total):,} | {med:.1f} (per seed {', '.join(f'{r:.1f}' for r in got['returns_per_player'])}) | "
                         f"{got['compile_s'] + got['train_s']:.0f} s ({got['compile_s']:.0f} s compiling) |")
            print(lines[-1], flush=True)
    best = max(peers.values()) if peers else None
    bar = None if best is None else mean + 0.5 * (best - mean)
    finals: dict[str, list[float]] = {}
    walls: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for agent in args.agents.split(","):
            for seed in seeds:
                env_id, flags = AGENTS[agent]
                wall, last, _ = run_cli("experiments.ppo", [f"--env={env_id}", *flags, f"--seed={seed}",
                                                            "--checkpoint_every=0"], Path(tmp) / agent)
                ret = float(last["episode_return_mean"])
                finals.setdefault(agent, []).append(ret)
                walls.setdefault(agent, []).append(wall)
                lines.append(f"| {agent.upper()} (`python -m experiments.ppo --env {env_id}"
                             f"{' ' + ' '.join(flags) if flags else ''}`) | {seed} | "
                             f"{int(float(last['env_steps'])):,} | {ret:.1f} | {wall / 60:.1f} min"
                             f"{'' if wall < MINUTES * 60 else ': over 10 min'} |")
                print(lines[-1], flush=True)
    summary = []
    for agent, values in finals.items():
        med = statistics.median(values)
        closed = "" if best is None else f", {100 * (med - mean) / (best - mean):.0f}% of the gap from random to the best peer figure"
        met = "" if bar is None else (" (bar met)" if med >= bar else f" (bar missed: {med:.1f} of {bar:.1f})")
        summary.append(f"- {agent.upper()}: median {med:.1f} over seeds {args.seeds}{closed}{met}; "
                       f"slowest run {max(walls[agent]) / 60:.1f} min")
    for suffix in ("", "-anakin"):
        if f"ippo{suffix}" in finals and f"mappo{suffix}" in finals:
            a, b = statistics.median(finals[f"ippo{suffix}"]), statistics.median(finals[f"mappo{suffix}"])
            summary.append(f"- MAPPO{suffix.upper()} vs IPPO{suffix.upper()}: medians {b:.1f} vs {a:.1f}: MAPPO "
                           f"{'at least as good' if b >= a else 'worse'}")
    if bar is not None:
        summary.insert(0, f"- Bar: random {mean:.1f} + half the gap to the best peer figure ({best:.1f}) = {bar:.1f}")
    where = ("the Anakin loop on JaxMARL's spread" if all(a.endswith("-anakin") for a in finals)
             else "worker processes, PettingZoo's spread" if not any(a.endswith("-anakin") for a in finals) else "both loops")
    header = (f"## IPPO and MAPPO on MPE simple_spread_v3, 1M env steps, {where} (`benchmarks/bench_ippo.py`)\n\n"
              f"Command: `{command}`; {platform.node()} ({os.cpu_count()} CPUs, no GPU), "
              f"{datetime.date.today().isoformat()}. Units: the mean per-player episode return.\n\n")
    publish(args.section, header + "\n".join(lines) + "\n\n" + "\n".join(summary) + "\n", not args.no_write)


if __name__ == "__main__":
    main()
