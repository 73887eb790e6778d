"""Resident memory of a long async run with a slow learner (issue 9): the trajectory queue and
the staging deque are bounded, so actors wait instead of piling up data, and RSS stays flat.

    python benchmarks/bench_memory.py [--minutes 5] [--no-write]

The loop: SimplePolicyGradient on CartPole-v1, async mode, 2 inferencers x 16 envs, 20-step
cycles, and a learner slowed by a middleware that sleeps 50 ms per update (so actors spend most
of their time blocked on the full queue). RSS (from /proc/self/statm) is sampled every 5 s; the
report gives it after the first minute (warm: compiled, buffers allocated) and at the end, their
difference, and the actors' queue wait.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import envs  # noqa: E402
import sebulba  # noqa: E402
from benchmarks._report import BENCH_FILE, write_section  # noqa: E402
from sebulba.agents import SimplePolicyGradient  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    cfg = sebulba.LoopConfig(num_envs=16, steps_per_cycle=20, inferencers_per_device=2, async_mode=True, log_every_s=5.0)
    samples: list[tuple[float, float]] = []
    start = time.monotonic()
    deadline = start + args.minutes * 60

    def slow_and_sample(ctx) -> None:
        time.sleep(0.05)
        now = time.monotonic()
        if not samples or now - samples[-1][0] - start >= 5.0:
            samples.append((now - start, rss_mib()))
        if now >= deadline:
            loop.task.finish()

    with sebulba.GymnasiumLoop(SimplePolicyGradient(envs.make_spec("CartPole-v1")), cfg) as loop:
        ctx = loop.run(max_env_steps=10**12, middleware=[slow_and_sample])
        waits = [r["actor_wait_frac"] for r in loop.reports[1:]]
    warm_t = min(60.0, samples[-1][0] / 5)
    warm = next(m for t, m in samples if t >= warm_t)
    end = samples[-1][1]
    peak = max(m for _, m in samples)
    body = (
        "## Memory over a long run (`benchmarks/bench_memory.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python benchmarks/bench_memory.py {' '.join(sys.argv[1:])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only. SPG on CartPole-v1, async, 2 inferencers x "
        f"16 envs, queue size {cfg.queue_size}, learner slowed by 50 ms per update; {ctx.env_steps:,} env steps, "
        f"{ctx.learner_steps:,} updates in {samples[-1][0]:.0f} s.\n\n"
        f"RSS after {warm_t:.0f} s {warm:.0f} MiB, at the end {end:.0f} MiB (change {end - warm:+.1f} MiB), peak {peak:.0f} MiB; "
        f"the last report has the actors blocked on the full queue {100 * waits[-1]:.0f}% of the time. "
        "Samples (s: MiB): " + ", ".join(f"{t:.0f}: {m:.0f}" for t, m in samples[:: max(1, len(samples) // 12)]) + ".\n"
    )
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_memory", body)


if __name__ == "__main__":
    main()
