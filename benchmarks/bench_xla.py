"""Steps/s of an actor loop through the XLA interface (`pool.xla()`, seed 000) against the same
loop driven from Python, and against the `envpool` package's own xla() when it is installed.

    python benchmarks/bench_xla.py [--repeats 5] [--steps 2000] [--no-write]

The actor: an MLP policy (4 -> 64 -> 64 -> 2, fixed random weights, greedy) on CartPole-v1, sync
pools of 16 and 256 envs. "XLA": `jit(lax.fori_loop(0, steps, policy + step))`, one program.
"Python": a jitted policy call, then `pool.step(np.asarray(action))`, per step. Each repeat
builds a fresh pool, warms up (compiles), then times `--steps` steps; medians over interleaved
repeats; steps/s counts env steps (envs x loop iterations). The section goes into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import envs
from benchmarks._report import BENCH_FILE, write_section

try:
    import envpool
except ImportError:
    envpool = None

TASK = "CartPole-v1"


def init_params(key: jax.Array) -> list[tuple[jax.Array, jax.Array]]:
    sizes = [4, 64, 64, 2]
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (a, b)) / np.sqrt(a), jnp.zeros(b)) for k, a, b in zip(keys, sizes[:-1], sizes[1:])]


def policy(params, obs: jax.Array) -> jax.Array:
    x = obs.astype(jnp.float32)
    for i, (w, b) in enumerate(params):
        x = x @ w + b
        if i < len(params) - 1:
            x = jnp.tanh(x)
    return jnp.argmax(x, axis=-1).astype(jnp.int32)


def xla_loop(pool, params, steps: int) -> float:
    handle, _, _, step = pool.xla()

    def body(i, carry):
        h, obs = carry
        h, state = step(h, policy(params, obs))
        return h, state[0]

    run = jax.jit(lambda n, h, obs: lax.fori_loop(0, n, body, (h, obs)))
    obs = pool.reset()[0]
    jax.block_until_ready(run(10, handle, obs))  # compile + warm-up
    start = time.perf_counter()
    jax.block_until_ready(run(steps, handle, obs))
    return time.perf_counter() - start


def python_loop(pool, params, steps: int) -> float:
    act = jax.jit(policy)
    obs = pool.reset()[0]
    for _ in range(10):
        obs = pool.step(np.asarray(act(params, obs)))[0]
    start = time.perf_counter()
    for _ in range(steps):
        obs = pool.step(np.asarray(act(params, obs)))[0]
    return time.perf_counter() - start


CONTESTANTS = {
    "ours, XLA (fori_loop)": lambda n: (envs.make(TASK, num_envs=n), xla_loop),
    "ours, Python loop": lambda n: (envs.make(TASK, num_envs=n), python_loop),
    "envpool, XLA (fori_loop)": lambda n: (envpool.make_gymnasium(TASK, num_envs=n), xla_loop),
    "envpool, Python loop": lambda n: (envpool.make_gymnasium(TASK, num_envs=n), python_loop),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    params = init_params(jax.random.key(0))
    names = [k for k in CONTESTANTS if envpool is not None or not k.startswith("envpool")]
    rows = []
    for n in (16, 256):
        rates = {k: [] for k in names}
        for r in range(args.repeats):
            for name in names[r % len(names):] + names[: r % len(names)]:
                pool, loop = CONTESTANTS[name](n)
                try:
                    rates[name].append(args.steps * n / loop(pool, params, args.steps))
                finally:
                    pool.close()
                print(f"{n} envs, repeat {r + 1}, {name}: {rates[name][-1]:,.0f} steps/s", flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        base = med["ours, Python loop"]
        for k in names:
            rows.append(f"| {n} | {k} | {med[k]:,.0f} | {med[k] / base:.2f}x |")
    ep = envpool.__version__ if envpool is not None else "not installed"
    body = (
        "## XLA interface: jitted actor loop vs Python loop (`benchmarks/bench_xla.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC with "
        f"`python benchmarks/bench_xla.py {' '.join(sys.argv[1:])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; jax {jax.__version__}, envpool {ep}. "
        f"MLP policy 4-64-64-2 on CartPole-v1, sync pools, {args.steps} loop iterations per repeat, "
        f"median of {args.repeats} interleaved repeats.\n\n"
        "| envs | loop | env steps/s | vs our Python loop |\n|---:|---|---:|---:|\n" + "\n".join(rows) + "\n"
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_xla", body)


if __name__ == "__main__":
    main()
