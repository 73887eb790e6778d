"""Steps/s of an actor loop through the XLA interface (`pool.xla()`, EnvPool's XLA interface) against the same
loop driven from Python, and against the `envpool` package's own xla() when it is installed.

    python benchmarks/bench_xla.py [--repeats 5] [--steps 2000] [--no-write]
    python benchmarks/bench_xla.py --pong [--repeats 5] [--steps 500] [--no-write]

The actor: an MLP policy (4 -> 64 -> 64 -> 2, fixed random weights, greedy) on CartPole-v1, sync
pools of 16 and 256 envs. "XLA": `jit(lax.fori_loop(0, steps, policy + step))`, one program.
"Python": a jitted policy call, then `pool.step(np.asarray(action))`, per step. Each repeat
builds a fresh pool, warms up (compiles), then times `--steps` steps; medians over interleaved
repeats; steps/s counts env steps (envs x loop iterations). The section goes into BENCHMARKS.md.

`--pong` runs only the Pong-v5 table instead (section bench_xla_pong): Atari's `step` on ALE's own
XLA targets against EnvPool's Pong `xla()`; see `pong_main`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
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
from benchmarks._paths import numpy_path
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


def numpy_pool(n: int):
    with numpy_path():
        return envs.make(TASK, num_envs=n)


CONTESTANTS = {
    "ours (compiled), XLA (fori_loop)": lambda n: (envs.make(TASK, num_envs=n), xla_loop),
    "ours (compiled), Python loop": lambda n: (envs.make(TASK, num_envs=n), python_loop),
    "ours (numpy path), XLA (fori_loop, callbacks)": lambda n: (numpy_pool(n), xla_loop),
    "ours (numpy path), Python loop": lambda n: (numpy_pool(n), python_loop),
    "ours (worker processes), XLA (fori_loop, callbacks)": lambda n: (envs.make(TASK, num_envs=n, backend="process"), xla_loop),
    "envpool, XLA (fori_loop)": lambda n: (envpool.make_gymnasium(TASK, num_envs=n), xla_loop),
    "envpool, Python loop": lambda n: (envpool.make_gymnasium(TASK, num_envs=n), python_loop),
}


def run_line() -> str:
    """The report's command and machine, up to the workload's description."""
    ep = envpool.__version__ if envpool is not None else "not installed"
    return (f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC with "
            f"`python benchmarks/bench_xla.py {' '.join(sys.argv[1:])}`  \n"
            f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; jax {jax.__version__}, envpool {ep}. ")


def interleaved(names: list[str], repeats: int, label: str, one: Callable[[str], float]) -> dict[str, list[float]]:
    """steps/s of each contestant per repeat, the order rotating from repeat to repeat."""
    rates: dict[str, list[float]] = {k: [] for k in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            rates[name].append(one(name))
            print(f"{label}, repeat {r + 1}, {name}: {rates[name][-1]:,.0f} steps/s", flush=True)
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--pong", action="store_true", help="run the Pong-v5 table instead (pong_main)")
    args = ap.parse_args()
    if args.pong:
        return pong_main(args)
    params = init_params(jax.random.key(0))
    names = [k for k in CONTESTANTS if envpool is not None or not k.startswith("envpool")]
    rows = []
    for n in (16, 256):
        def one(name: str, n: int = n) -> float:
            pool, loop = CONTESTANTS[name](n)
            try:
                return args.steps * n / loop(pool, params, args.steps)
            finally:
                pool.close()

        rates = interleaved(names, args.repeats, f"{n} envs", one)
        med = {k: statistics.median(v) for k, v in rates.items()}
        base = med["ours (compiled), Python loop"]
        peer = med.get("envpool, XLA (fori_loop)")
        for k in names:
            vs_peer = f"{med[k] / peer:.2f}x" if peer else "—"
            rows.append(f"| {n} | {k} | {med[k]:,.0f} | {med[k] / base:.2f}x | {vs_peer} |")
    body = (
        "## XLA interface: jitted actor loop vs Python loop (`benchmarks/bench_xla.py`)\n\n"
        + run_line() +
        f"MLP policy 4-64-64-2 on CartPole-v1, sync pools, {args.steps} loop iterations per repeat, "
        f"median of {args.repeats} interleaved repeats.\n\n"
        "Targets (issue 23): ours (compiled) XLA >= 1.5x EnvPool's XLA and >= 1.2x our Python loop, at 16 and 256 envs.\n\n"
        "| envs | loop | env steps/s | vs our (compiled) Python loop | vs EnvPool's XLA |\n|---:|---|---:|---:|---:|\n"
        + "\n".join(rows) + "\n"
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_xla", body)


# ------------------------------------------------------------------------- Pong-v5 (--pong)
PONG, PONG_ENVS = "Pong-v5", 16
PONG_MODES = {"sync": PONG_ENVS, "async": PONG_ENVS // 2}  # mode -> batch_size


def pong_policy(obs: jax.Array) -> jax.Array:
    """A cheap deterministic policy of the newest frame (Pong's 6 actions)."""
    return (obs[:, -1, ::8, ::8].astype(jnp.int32).sum(axis=(1, 2)) * 7) % 6


def pong_first(pool, batch: int) -> tuple:
    """(obs, env ids) of the first batch: reset (sync), or async_reset then recv."""
    if batch == pool.config["num_envs"]:
        obs, info = pool.reset()
    else:
        pool.async_reset()
        obs, *_, info = pool.recv()
    return obs, info["env_id"]


def pong_xla_step(pool, batch: int, steps: int) -> float:
    """jit(fori_loop(policy + step)): async, step sends for the last batch and receives the next."""
    handle, _, _, step = pool.xla()

    def body(i, carry):
        h, obs, ids = carry
        h, state = step(h, pong_policy(obs), ids)
        return h, state[0], state[-1]["env_id"]

    run = jax.jit(lambda n, c: lax.fori_loop(0, n, body, c))
    carry = jax.block_until_ready(run(10, (handle, *pong_first(pool, batch))))  # compile + warm-up
    start = time.perf_counter()
    jax.block_until_ready(run(steps, carry))  # the handle the warm-up returned (ours requires it)
    return time.perf_counter() - start


def pong_xla_recv_send(pool, batch: int, steps: int) -> float:
    """jit(fori_loop(recv, policy, send)), EnvPool's second XLA example (async pools)."""
    handle, recv, send, _ = pool.xla()

    def body(i, h):
        h, state = recv(h)
        return send(h, pong_policy(state[0]), state[-1]["env_id"])

    run = jax.jit(lambda n, h: lax.fori_loop(0, n, body, h))
    pool.async_reset()
    handle = jax.block_until_ready(run(10, handle))
    start = time.perf_counter()
    jax.block_until_ready(run(steps, handle))
    return time.perf_counter() - start


def pong_python(pool, batch: int, steps: int) -> float:
    """A jitted policy call, then pool.step (sync) or pool.recv / pool.send (async), per step."""
    act = jax.jit(pong_policy)
    obs, ids = pong_first(pool, batch)
    for i in range(steps + 10):
        if i == 10:
            start = time.perf_counter()
        pool.send(np.asarray(act(obs)), ids)
        obs, *_, info = pool.recv()
        ids = info["env_id"]
    return time.perf_counter() - start


def pong_contestants(batch: int) -> dict:
    threads = min(os.cpu_count() or 1, PONG_ENVS)
    ours = lambda: envs.make(PONG, num_envs=PONG_ENVS, batch_size=batch, num_threads=threads)  # noqa: E731
    theirs = lambda: envpool.make_gymnasium(PONG, num_envs=PONG_ENVS, batch_size=batch, num_threads=threads)  # noqa: E731
    out = {"ours, XLA step (fori_loop)": (ours, pong_xla_step)}
    if batch < PONG_ENVS:
        out["ours, XLA recv/send (fori_loop)"] = (ours, pong_xla_recv_send)
    out["ours, Python loop"] = (ours, pong_python)
    if envpool is not None:
        out["envpool, XLA step (fori_loop)"] = (theirs, pong_xla_step)
        if batch < PONG_ENVS:
            out["envpool, XLA recv/send (fori_loop)"] = (theirs, pong_xla_recv_send)
        out["envpool, Python loop"] = (theirs, pong_python)
    return out


def pong_main(args: argparse.Namespace) -> None:
    """Pong-v5, 16 envs, sync and async (batch 8): our Atari xla() (step on ALE's compiled
    targets; recv/send through the generic callbacks) against EnvPool's, and both Python loops."""
    rows = []
    for mode, batch in PONG_MODES.items():
        contestants = pong_contestants(batch)
        names = list(contestants)
        def one(name: str, batch: int = batch) -> float:
            make, loop = contestants[name]
            pool = make()
            try:
                return args.steps * batch / loop(pool, batch, args.steps)
            finally:
                pool.close()

        rates = interleaved(names, args.repeats, mode, one)
        med = {k: statistics.median(v) for k, v in rates.items()}
        base = med.get("envpool, XLA recv/send (fori_loop)" if batch < PONG_ENVS else "envpool, XLA step (fori_loop)")
        for k in names:
            vs = f"{med[k] / base:.2f}x" if base else "n/a"
            rows.append(f"| {mode} | {k} | {med[k]:,.0f} | {' / '.join(f'{x:,.0f}' for x in rates[k])} | {vs} |")
    body = (
        "## XLA interface on Atari: Pong-v5 (`benchmarks/bench_xla.py --pong`)\n\n"
        + run_line() +
        f"Pong-v5, {PONG_ENVS} envs, {min(os.cpu_count() or 1, PONG_ENVS)} threads, sync and async (batch "
        f"{PONG_MODES['async']}); policy: a function of the newest frame; {args.steps} loop iterations per repeat, "
        f"median of {args.repeats} interleaved repeats; env steps/s = batch x iterations. The last column is "
        "against EnvPool's XLA loop of the same mode (async: its recv/send loop).\n\n"
        "| mode | loop | env steps/s | repeats | vs EnvPool XLA |\n|---|---|---:|---|---:|\n" + "\n".join(rows) + "\n"
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_xla_pong", body)


if __name__ == "__main__":
    main()
