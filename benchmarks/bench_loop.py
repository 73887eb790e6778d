"""Inference-loop throughput: the Sebulba design notes' donation benchmark (earl's, 1.37x) and issue 3's targets.

Run from the repository root:

    python benchmarks/bench_loop.py                     # everything, 3 repeats (a few minutes)
    python benchmarks/bench_loop.py --repeats 5
    python benchmarks/bench_loop.py --only actor --no-write
    python benchmarks/bench_loop.py --only actor,limit --repeats 5 --no-write

Seed 002's setting throughout: SimplePolicyGradient with 5 hidden layers of 200, CartPole-v1,
100 env steps per cycle, 20 timed cycles; for 16 and 256 envs per inferencer. Measured:

- actor-only: one inferencer of a sync-mode `GymnasiumLoop` (`inferencers_per_device=1`) runs
  `run_cycle` with the learner's networks (donated, in-place bookkeeping); beside it the tests'
  reference cycle (`tests/support/reference.py`: a jitted `Agent.step` per env step, the
  trajectory stacked on the host), the design notes' "donation off". Two warm-up cycles compile
  everything; then 20 cycles are timed. A loop's cycle includes copying its trajectory and step
  states to the learner devices, as it does in the loop.
- end-to-end: `loop.run(max_cycles=20)` with learning, donation on, in async mode (2 inferencer
  threads per device, the default) and in sync mode, after a `loop.run(max_cycles=3)` on the
  same loop that compiles everything. steps/s is the env steps the learner consumed over the
  wall time of the call, so it includes starting the inferencer threads, filling the pipeline,
  and joining them (each finishes the cycle it is in). The loop's metrics window is set longer
  than the run, so its one report covers the whole timed run (its queue waits are printed).
- limit: no loop at all; one thread does, per env step, one jitted call of the same 5x200 policy
  MLP (flax linen) with categorical sampling and the key split inside, then one step of
  `envs.make("CartPole-v1", num_envs=N)`. What a loop without bookkeeping could reach.

Every repeat builds each variant afresh (only one loop is alive at a time) and the order of the
variants rotates from repeat to repeat; the median over repeats is reported, ratios are ratios
of medians. Compilation is never timed. Results go into BENCHMARKS.md between
`<!-- bench_loop:start -->` and `<!-- bench_loop:end -->`; --no-write only prints them.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import flax
import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
import envs  # noqa: E402
from _report import BENCH_FILE, publish, verdict  # noqa: E402  (benchmarks/_report.py)
from sebulba.agents.simple_pg import MLP, SimplePolicyGradient, SPGConfig  # noqa: E402
from sebulba.loop.config import LoopConfig  # noqa: E402
from sebulba.episodes import episode_stats  # noqa: E402
from sebulba.loop.loop import GymnasiumLoop  # noqa: E402
from sebulba.types import EnvStep, Trajectory  # noqa: E402
from tests.support.reference import ReferenceCycle  # noqa: E402

SECTION = "bench_loop"
TASK = "CartPole-v1"
HIDDEN = (200,) * 5
NUM_ENVS = (16, 256)
STEPS_PER_CYCLE = 100
TIMED_CYCLES = 20
WARMUP_CYCLES = 2  # actor-only and limit
E2E_WARMUP_CYCLES = 3  # the first loop.run, which compiles the learner too
SEED = 0

ACTOR_TARGET = {16: 32_000.0}  # issue 3: actor-only env steps/s (donation on, the default)
E2E_TARGET = 0.5  # issue 3: end-to-end / actor-only
SEED_DONATION_RATIO = 1.37  # the Sebulba design notes (earl): donation on / off
ISSUE_LIMIT = {16: 40_000, 256: 180_000}  # issue 3: the limit measured on this machine type

Wait = tuple[float, float]  # (learner wait fraction, actor wait fraction) of an end-to-end run


# ---------------------------------------------------------------------------- variants
def make_agent() -> SimplePolicyGradient:
    return SimplePolicyGradient(envs.make_spec(TASK), SPGConfig(hidden_sizes=HIDDEN))


def make_loop(num_envs: int, **config: object) -> GymnasiumLoop:
    return GymnasiumLoop(
        make_agent(), LoopConfig(env_id=TASK, num_envs=num_envs, steps_per_cycle=STEPS_PER_CYCLE, seed=SEED, **config)
    )


def actor_only(num_envs: int) -> float:
    """Env steps/s of one inferencer's cycles, learner idle."""
    loop = make_loop(num_envs, async_mode=False, inferencers_per_device=1)
    try:
        inf, learner = loop.inferencers[0], loop.learner
        for _ in range(WARMUP_CYCLES):
            jax.block_until_ready(inf.run_cycle(learner.version, learner.networks))
        start = time.perf_counter()
        for _ in range(TIMED_CYCLES):
            result = inf.run_cycle(learner.version, learner.networks)
        jax.block_until_ready(result)
        elapsed = time.perf_counter() - start
    finally:
        loop.close()
    return TIMED_CYCLES * STEPS_PER_CYCLE * num_envs / elapsed


def host_bookkeeping(num_envs: int) -> float:
    """Env steps/s of the tests' reference cycle (tests/support/reference.py): a jitted
    `Agent.step` per env step, the trajectory stacked and the episodes summed with numpy on the
    host (the Sebulba design notes' "donation off" path)."""
    agent = make_agent()
    networks = jax.jit(agent.init_networks)(jax.random.key(SEED))
    cycle = ReferenceCycle(agent, networks, TASK, num_envs, SEED, jax.random.key(SEED + 1))
    try:
        for _ in range(WARMUP_CYCLES):
            cycle.run(STEPS_PER_CYCLE)
        start = time.perf_counter()
        for _ in range(TIMED_CYCLES):
            cycle.run(STEPS_PER_CYCLE)
        elapsed = time.perf_counter() - start
    finally:
        cycle.close()
    return TIMED_CYCLES * STEPS_PER_CYCLE * num_envs / elapsed


def end_to_end(num_envs: int, async_mode: bool, waits: list[Wait]) -> float:
    """Env steps/s learned from by `loop.run`, donation on; appends the run's queue waits."""
    loop = make_loop(num_envs, async_mode=async_mode, log_every_s=3600.0)
    try:
        loop.run(max_cycles=E2E_WARMUP_CYCLES)
        jax.block_until_ready(loop.learner.networks)
        start = time.perf_counter()
        ctx = loop.run(max_cycles=TIMED_CYCLES)
        jax.block_until_ready(loop.learner.networks)
        elapsed = time.perf_counter() - start
        report = loop.reports[-1]
        waits.append((report["learner_wait_frac"], report["actor_wait_frac"]))
    finally:
        loop.close()
    return ctx.env_steps / elapsed


def limit(num_envs: int) -> float:
    """Env steps/s of jitted policy + pool step in one thread, nothing else."""
    pool = envs.make(TASK, num_envs=num_envs, seed=SEED)
    net = MLP(HIDDEN, int(pool.action_space.n))

    @jax.jit
    def act(params, key, obs):
        key, sample_key = jax.random.split(key)
        return key, jax.random.categorical(sample_key, net.apply(params, obs))

    key = jax.random.key(SEED)
    params = net.init(key, jnp.zeros((1, *pool.observation_space.shape), jnp.float32))
    try:
        obs, _ = pool.reset()

        def run(steps: int) -> None:
            nonlocal obs, key
            for _ in range(steps):
                key, action = act(params, key, obs)
                obs, *_ = pool.step(np.asarray(action))

        run(WARMUP_CYCLES * STEPS_PER_CYCLE)
        start = time.perf_counter()
        run(TIMED_CYCLES * STEPS_PER_CYCLE)
        elapsed = time.perf_counter() - start
    finally:
        pool.close()
    return TIMED_CYCLES * STEPS_PER_CYCLE * num_envs / elapsed


def anakin(num_envs: int) -> float:
    """Env steps/s of Podracers' Anakin shape: a whole cycle as one jitted `lax.scan` of
    `Agent.step` and the compiled pool's `xla()` step, recording what the threaded cycle records
    (env steps, actions, extras, episode statistics), without the copy to learner devices."""
    agent = make_agent()
    pool = envs.make(TASK, num_envs=num_envs, seed=SEED)
    handle, _, _, env_step_fn = pool.xla()
    networks = agent.init_networks(jax.random.key(SEED))

    def cycle(networks, step_state, env_step, handle, running_return, running_length):
        def body(carry, _):
            state, es, h = carry
            out, state = agent.step(networks, state, es)
            out = agent.as_actor_output(out)
            h, (obs, reward, terminated, truncated, info) = env_step_fn(h, out.action)
            return (state, EnvStep(obs, reward, terminated, truncated, info["elapsed_step"] == 0), h), (es, out.action, out.extras)

        (state, last, h), (es, action, extras) = jax.lax.scan(body, (step_state, env_step, handle), length=STEPS_PER_CYCLE)
        env_steps = jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), es, last)
        ep_ret, ep_len, running_return, running_length = episode_stats(env_steps, running_return, running_length)
        traj = Trajectory(env_steps, action, extras, ep_ret, ep_len, 0, 0)
        return traj, state, last, h, running_return, running_length

    run = jax.jit(cycle, donate_argnums=(1, 4, 5))
    try:
        obs, _ = pool.reset()
        zeros = np.zeros(num_envs, np.float32)
        carry = (agent.init_step_state(networks, num_envs, jax.random.key(SEED + 1)),
                 EnvStep(obs, zeros, zeros.astype(bool), zeros.astype(bool), np.ones(num_envs, bool)),
                 handle, jnp.zeros(num_envs, jnp.float32), jnp.zeros(num_envs, jnp.int32))

        def cycles(k: int) -> None:
            nonlocal carry
            for _ in range(k):
                traj, state, last, h, rr, rl = run(networks, *carry)
                carry = (state, last, h, rr, rl)
            jax.block_until_ready((traj, carry))

        cycles(WARMUP_CYCLES)
        start = time.perf_counter()
        cycles(TIMED_CYCLES)
        elapsed = time.perf_counter() - start
    finally:
        pool.close()
    return TIMED_CYCLES * STEPS_PER_CYCLE * num_envs / elapsed


@dataclass
class Variant:
    key: str  # what --only matches, and how rows find their figures
    title: str
    num_envs: int
    run: Callable[[], float]  # one repeat: env steps/s


def variants(num_envs: int, waits: dict[str, list[Wait]]) -> list[Variant]:
    n = num_envs

    def e2e(key: str, async_mode: bool) -> Callable[[], float]:
        return lambda: end_to_end(n, async_mode, waits.setdefault(key, []))

    return [
        Variant(f"actor-donate-{n}", "actor-only, donation on", n, lambda: actor_only(n)),
        Variant(f"actor-host-{n}", "actor-only, reference cycle: bookkeeping on the host", n,
                lambda: host_bookkeeping(n)),
        Variant(f"e2e-async-{n}", "end-to-end, async (2 inferencers), donation on", n, e2e(f"e2e-async-{n}", True)),
        Variant(f"e2e-sync-{n}", "end-to-end, sync, donation on", n, e2e(f"e2e-sync-{n}", False)),
        Variant(f"limit-{n}", "limit: jitted policy + pool step, no bookkeeping", n, lambda: limit(n)),
        Variant(f"anakin-{n}", "Anakin: one jitted scan of Agent.step + compiled env step per cycle", n, lambda: anakin(n)),
    ]


# ---------------------------------------------------------------------------- measuring
def measure(chosen: list[Variant], repeats: int) -> dict[str, list[float]]:
    """Interleaved repeats: every repeat runs each variant once, in an order that rotates."""
    rates: dict[str, list[float]] = {v.key: [] for v in chosen}
    for r in range(repeats):
        shift = r % len(chosen)
        for v in chosen[shift:] + chosen[:shift]:
            rate = v.run()
            rates[v.key].append(rate)
            print(f"  repeat {r + 1}/{repeats} {v.key:<20} {rate:>12,.0f} steps/s", flush=True)
    print()
    for v in chosen:
        rs = rates[v.key]
        print(f"  median {v.key:<20} {statistics.median(rs):>12,.0f} steps/s (min {min(rs):,.0f}, max {max(rs):,.0f})")
    return rates


# ---------------------------------------------------------------------------- report
def fmt(x: float | None, spec: str = ",.0f", suffix: str = "") -> str:
    return "—" if x is None else f"{x:{spec}}{suffix}"


def row(title: str, n: int, rate: float | None, ratio: float | None, ratio_of: str, target: str, met: str) -> str:
    return "| " + " | ".join([title, str(n), fmt(rate), fmt(ratio, ".2f", "x"), ratio_of, target, met]) + " |"


def table_rows(chosen: list[Variant], med: dict[str, float]) -> list[str]:
    """One row per measured variant, in the order of `variants`, with its ratio and target."""
    rows = []
    for v in chosen:
        n, rate = v.num_envs, med[v.key]
        on, off = med.get(f"actor-donate-{n}"), med.get(f"actor-host-{n}")
        if v.key.startswith("actor-donate"):
            ratio = rate / off if off else None
            target = ACTOR_TARGET.get(n)
            rows.append(row(
                v.title, n, rate, ratio, "on / host bookkeeping (design notes: 1.37x)",
                f">= {target:,.0f} steps/s" if target else "—", verdict(rate, target, "{:,.0f}"),
            ))
        elif v.key.startswith("actor-host"):
            rows.append(row(v.title, n, rate, None, "", "—", "—"))
        elif v.key.startswith("e2e"):
            ratio = rate / on if on else None
            rows.append(row(v.title, n, rate, ratio, "/ actor-only (donation on)",
                            f">= {E2E_TARGET:.2f}x", verdict(ratio, E2E_TARGET)))
        elif v.key.startswith("anakin"):
            ratio = rate / on if on else None
            rows.append(row(v.title, n, rate, ratio, "/ actor-only (donation on)", "—", "—"))
        else:  # limit
            ratio = on / rate if on else None
            rows.append(row(v.title, n, rate, ratio, "actor-only (donation on) / limit",
                            f"— (issue: {ISSUE_LIMIT[n]:,})", "—"))
    return rows


def wait_lines(waits: dict[str, list[Wait]]) -> list[str]:
    """Median queue waits of the end-to-end runs, as fractions of their wall time."""
    lines = []
    for key, ws in waits.items():
        if ws and key.startswith("e2e-async"):
            learner, actor = statistics.median(w[0] for w in ws), statistics.median(w[1] for w in ws)
            lines.append(f"{key}: learner waited {learner:.0%} of the time for trajectories, "
                         f"each inferencer {actor:.0%} on a full queue")
    return lines


def versions() -> str:
    return f"python {platform.python_version()}, jax {jax.__version__}, flax {flax.__version__}, numpy {np.__version__}"


def render(chosen: list[Variant], rates: dict[str, list[float]], waits: dict[str, list[Wait]], repeats: int) -> str:
    med = {k: statistics.median(rs) for k, rs in rates.items()}
    command = shlex.join(["python", "benchmarks/bench_loop.py", *sys.argv[1:]])
    devices = ", ".join(sorted({f"{d.platform} x{len(jax.devices(d.platform))}" for d in jax.devices()}))
    lines = [
        "## Inference loop steps/s (`benchmarks/bench_loop.py`)",
        "",
        f"Run {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} with `{command}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, jax devices: {devices}; {versions()}  ",
        f"SimplePolicyGradient, {len(HIDDEN)} hidden layers of {HIDDEN[0]}, {TASK}, "
        f"{STEPS_PER_CYCLE} steps per cycle, {TIMED_CYCLES} timed cycles after warm-up (compilation excluded). "
        f"Median of {repeats} interleaved repeats, a fresh loop each; steps/s counts env steps. "
        "Targets from issue 3; the limit is one thread doing a jitted policy call and a pool step per env step.",
        "",
        "| workload | envs | steps/s | ratio | ratio is | target | met? |",
        "|---|---:|---:|---:|---|---|---|",
        *table_rows(chosen, med),
    ]
    notes = wait_lines(waits)
    if notes:
        lines += ["", "Queue waits as the loop reports them (median): " + "; ".join(notes) + ". The learner "
                  "blocks until each update is done, so its wait is time with nothing to learn from."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats per variant; the median is reported")
    ap.add_argument("--only", default="", help="run only variants whose key contains one of these comma-separated "
                    "strings (e.g. actor, e2e, limit, 16, 256; actor,limit)")
    ap.add_argument("--no-write", action="store_true", help=f"print the table only, leave {BENCH_FILE.name} alone")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    waits: dict[str, list[Wait]] = {}
    every = [v for n in NUM_ENVS for v in variants(n, waits)]
    wanted = [w.strip().lower() for w in args.only.split(",")]
    chosen = [v for v in every if any(w in v.key.lower() for w in wanted)]
    if not chosen:
        sys.exit(f"--only {args.only!r} matches no variant (keys: {[v.key for v in every]})")
    rates = measure(chosen, args.repeats)
    body = render(chosen, rates, waits, args.repeats)
    publish(SECTION, body, not args.no_write)


if __name__ == "__main__":
    main()
