"""The actor side alone (no learner), IMPALA Pong: our inferencers vs issue 6's naive actor loop,
in the same run, with where our inferencer threads spend their time.

    python benchmarks/bench_actors.py --out DIR [--seconds 20] [--settings 32x2,64x3]

Ours: a GymnasiumLoop built from `experiments.impala`'s Atari preset; each inferencer runs
`run_cycle` back to back in its own thread with the initial networks (nothing is learned).
Peer: issue 6's naive actor-only loop: per thread ALE's AtariVectorEnv with async batch
num_envs / 2, and per batch one jitted act (the same policy, same device), then send, then recv.
Settings are ENVSxINFERENCERS, optionally tTHREADS: each env pool's threads (`--env_threads`;
ALE's default is min(envs, cores)); the peer runs with the same envs and threads. frames/s is
env steps x frame skip (4) after one warm-up cycle per thread.

Ours runs twice: with the env's stacked frames, and stacking on the device (`--stack_on_device`:
the pools send single frames). Ceilings in the same run say which side bounds the actors: the
same threads stepping only their `envs` pools with random numpy actions (no policy), with 4 and
with 1 frame per observation; only copying observation batches to the device (4 and 1 frames);
and calling only the jitted act on a fixed batch of observations, with the action fetched to the
host each call (no env): as the naive loop's plain act, the same on observations already on the
device (no host-to-device copy), and as our loop's act, which also records the step into the
trajectory buffers.

Every measurement also reports the cores its threads kept busy (/proc) and a GIL probe: a thread
that sleeps 0.5 ms at a time and records how late it wakes. Late by ~0.1 ms: the GIL is free;
late by about the 5 ms switch interval or more: the timed threads queue on the GIL.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _report  # noqa: E402

import envs  # noqa: E402
from experiments import impala  # noqa: E402
from sebulba.agents.impala.agent import Impala  # noqa: E402
from sebulba.loop import inferencer as inferencer_module  # noqa: E402
from sebulba.loop.cycle import host_env_step  # noqa: E402
from sebulba.loop.evaluator import acting  # noqa: E402
from sebulba.loop.loop import GymnasiumLoop  # noqa: E402
from sebulba.types import EnvStep  # noqa: E402

FRAME_SKIP = 4


class ThreadCpu:
    """CPU seconds of this process's threads (Linux /proc), to split a window's CPU use by group."""

    def __init__(self) -> None:
        self.env_tids: set[int] = set()
        self._main_name = _report.thread_cpu()[threading.main_thread().native_id][0]

    @contextlib.contextmanager
    def building_envs(self):
        """Threads started inside this block with the main thread's name are the pools' (ALE's
        workers inherit it; JAX names its own threads)."""
        before = set(_report.thread_cpu())
        yield
        self.env_tids |= {t for t, (name, _) in _report.thread_cpu().items() if t not in before and name == self._main_name}

    def split(self, start: dict[int, tuple[str, float]], end: dict[int, tuple[str, float]], timed_cpu: float,
              wall: float) -> dict[str, object]:
        """Cores busy over a window, by group, and the busiest thread outside the groups. The
        timed threads have ended by `end` (so are not in it): timed_cpu is their CPU seconds."""
        busy = {t: (seconds - start.get(t, ("", 0.0))[1]) / wall for t, (_, seconds) in end.items()}
        rest = {t: b for t, b in busy.items() if t not in self.env_tids}
        top = max(rest, key=rest.get, default=None)
        return {
            "timed threads": timed_cpu / wall,
            "env threads": sum(b for t, b in busy.items() if t in self.env_tids),
            "other threads": sum(rest.values()),
            "busiest other": "—" if top is None else f"{end[top][0]} {rest[top]:.2f}",
        }


CPU = ThreadCpu()


class GilProbe(threading.Thread):
    """Sleeps 0.5 ms at a time until `stop_at` and records how much later than asked each sleep
    returned: the OS's wake-up (~0.1 ms on an idle host) plus the wait to take the GIL back. A wait
    near the 5 ms switch interval means the GIL is the resource the timed threads queue on."""

    SLEEP_S = 0.0005

    def __init__(self, start_at: float, stop_at: float):
        super().__init__(name="gil-probe", daemon=True)
        self.start_at, self.stop_at = start_at, stop_at
        self.late: list[float] = []

    def run(self) -> None:
        time.sleep(max(0.0, self.start_at - time.perf_counter()))
        while (t := time.perf_counter()) < self.stop_at:
            time.sleep(self.SLEEP_S)
            self.late.append(time.perf_counter() - t - self.SLEEP_S)

    def summary(self) -> str:
        """Median and 90th percentile of the lateness, in µs."""
        if not self.late:
            return "—"
        median, p90 = np.percentile(self.late, [50, 90]) * 1e6
        return f"{median:,.0f} / {p90:,.0f}"


class Rate(NamedTuple):
    fps: float  # frames/s
    elapsed: float  # seconds timed
    cpu: dict[str, object]  # ThreadCpu.split over the timed window


class PhaseClock:
    """Per-phase wall time of the inferencer threads, by wrapping Lane.recv / Lane.send and the
    jitted step (its dispatch; the device work shows in send, which waits for the action)."""

    def __init__(self) -> None:
        self.total: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()

    def wrap(self, phase: str, fn):
        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with self.lock:
                    self.total[phase] += time.perf_counter() - t

        return timed


def ours(num_envs: int, inferencers: int, seconds: float, env_threads: int | None,
         stack_on_device: bool = False) -> tuple[Rate, dict[str, float]]:
    exp = impala.make_experiment("Pong-v5", num_envs=num_envs, inferencers_per_device=inferencers,
                                 env_threads=env_threads,
                                 stack_on_device=stack_on_device)
    agent = Impala(envs.make_spec("Pong-v5", **exp.loop.env_kwargs), exp.agent)
    with CPU.building_envs():
        loop = GymnasiumLoop(agent, exp.loop)
    clock = PhaseClock()
    cls = inferencer_module.Inferencer
    orig = cls._recv, cls._send
    cls._recv, cls._send = clock.wrap("recv (env wait + pool)", orig[0]), clock.wrap("send (action to host + pool)", orig[1])
    loop.cycle.step_and_record = clock.wrap("act (jit dispatch)", loop.cycle.step_and_record)
    try:
        version, networks = loop.learner.version, loop.learner.networks
        for inf in loop.inferencers:  # compile and warm up
            inf.run_cycle(version, networks)
        clock.total.clear()
        inferencers = loop.inferencers
        rate = _threads_rate(len(inferencers), seconds, 0.0,
                             lambda i: inferencers[i].run_cycle(version, networks).env_steps)
    finally:
        cls._recv, cls._send = orig
        loop.close()
    per_thread = {k: v / rate.elapsed / len(loop.inferencers) for k, v in clock.total.items()}
    return rate, per_thread


def policy(num_envs: int):
    """The Atari preset's agent, initial networks, compiled cycle functions, plain jitted act
    (`Agent.step` on an EnvStep, no recording) and env options: the same policy our inferencers
    use, for the loops measured beside them."""
    exp = impala.make_experiment("Pong-v5", num_envs=num_envs)
    agent = Impala(envs.make_spec("Pong-v5", **exp.loop.env_kwargs), exp.agent)
    loop = GymnasiumLoop(agent, exp.loop)
    networks, cycle = loop.learner.networks, loop.cycle
    loop.close()
    return agent, networks, cycle, acting(agent, greedy=False), exp.loop.env_kwargs


def naive(num_envs: int, threads_n: int, seconds: float, env_threads: int | None) -> Rate:
    from ale_py.vector_env import AtariVectorEnv

    agent, networks, _, act, _ = policy(num_envs)
    batch = num_envs // 2
    with CPU.building_envs():
        vecs = [AtariVectorEnv("pong", num_envs, batch_size=batch, num_threads=env_threads or 0, reward_clipping=False)
                for _ in range(threads_n)]
    carry = []  # per thread: step state and the last batch received
    for i, vec in enumerate(vecs):
        obs, info = vec.reset(seed=i)  # the first batch
        carry.append([agent.init_step_state(networks, batch, jax.random.key(i)), obs, np.zeros(batch, np.float32),
                      np.zeros(batch, bool), info])

    def body(i: int) -> int:
        state, obs, reward, done, info = carry[i]
        action, state = act(networks, state, EnvStep(obs, reward, done, done, info["episode_frame_number"] == 0))
        vecs[i].send(np.asarray(action, np.int32))
        obs, reward, done, _, info = vecs[i].recv()
        carry[i] = [state, obs, reward.astype(np.float32), done, info]
        return batch

    try:
        return _threads_rate(threads_n, seconds, 10.0, body)  # 10 s to compile and warm up
    finally:
        for v in vecs:
            v.close()


def _threads_rate(threads_n: int, seconds: float, warmup: float, body) -> Rate:
    """Frames/s of `threads_n` threads each running `body(i)` (which returns the env steps it
    did) in a loop: calls that start in the `seconds` after `warmup` are counted, over the time
    from then until the last of them ends; with the process's CPU use over that time."""
    steps = [0] * threads_n
    thread_cpu = [0.0] * threads_n  # the threads' own CPU seconds in the window (they end before it is read)
    start_at = time.perf_counter() + warmup
    stop_at = start_at + seconds

    def work(i: int) -> None:
        cpu_at_start = None
        while (now := time.perf_counter()) < stop_at:
            if cpu_at_start is None and now >= start_at:
                cpu_at_start = time.thread_time()
            n = body(i)
            if now >= start_at:
                steps[i] += n
        if cpu_at_start is not None:
            thread_cpu[i] = time.thread_time() - cpu_at_start

    threads = [threading.Thread(target=work, args=(i,)) for i in range(threads_n)]
    probe = GilProbe(start_at, stop_at)
    for t in [*threads, probe]:
        t.start()
    time.sleep(max(0.0, start_at - time.perf_counter()))
    cpu_start = _report.thread_cpu()
    for t in threads:
        t.join()
    cpu_end = _report.thread_cpu()
    elapsed = time.perf_counter() - start_at
    probe.join()
    cpu = {**CPU.split(cpu_start, cpu_end, sum(thread_cpu), elapsed), "gil": probe.summary()}
    return Rate(sum(steps) * FRAME_SKIP / elapsed, elapsed, cpu)


def env_alone(num_envs: int, threads_n: int, seconds: float, env_threads: int | None, stack_num: int = 4) -> Rate:
    """The threads step only their sync `envs` pools, with random actions: the env ceiling."""
    exp = impala.make_experiment("Pong-v5", num_envs=num_envs, env_threads=env_threads)
    kwargs = {**exp.loop.env_kwargs, "stack_num": stack_num}
    with CPU.building_envs():
        pools = [envs.make("Pong-v5", num_envs=num_envs, seed=i * num_envs, **kwargs) for i in range(threads_n)]
    rngs = [np.random.default_rng(i) for i in range(threads_n)]
    n_actions = pools[0].action_space.n
    try:
        for pool in pools:
            pool.reset()

        def body(i: int) -> int:
            pools[i].step(rngs[i].integers(0, n_actions, num_envs))
            return num_envs

        return _threads_rate(threads_n, seconds, 2.0, body)
    finally:
        for pool in pools:
            pool.close()


def transfer_alone(num_envs: int, threads_n: int, seconds: float, stack_num: int) -> Rate:
    """The threads only copy a batch of observations (num_envs x stack_num x 84 x 84 uint8, a fresh
    host array each call) to the device and wait for it: the host-to-device ceiling, in frames/s."""
    device = jax.devices()[0]
    batches = [[np.full((num_envs, stack_num, 84, 84), k, np.uint8) for k in range(2)] for _ in range(threads_n)]
    calls = [0] * threads_n

    def body(i: int) -> int:
        calls[i] += 1
        jax.device_put(batches[i][calls[i] % 2], device).block_until_ready()
        return num_envs

    return _threads_rate(threads_n, seconds, 2.0, body)


def act_alone(num_envs: int, threads_n: int, seconds: float) -> tuple[Rate, Rate, Rate]:
    """The threads call only the jitted act on a fixed host batch of observations and fetch each
    action to the host: the inference ceiling (host-to-device copy, policy, device-to-host).
    Measured three times: the naive loop's plain act, the same with the observations already on
    the device (no host-to-device copy), and the loop's own act, which also writes the step into
    the cycle's trajectory buffers (donated)."""
    agent, networks, cycle, act, env_kwargs = policy(num_envs)
    pool = envs.make("Pong-v5", num_envs=num_envs, **env_kwargs)
    obs, info = pool.reset()
    pool.close()
    zeros = np.zeros(num_envs, np.float32)
    first = info["elapsed_step"] == 0
    plain_step = EnvStep(obs, zeros, zeros.astype(bool), zeros.astype(bool), first)
    env_step = host_env_step(obs, zeros, zeros.astype(bool), zeros.astype(bool), info["elapsed_step"])
    plain_states = [agent.init_step_state(networks, num_envs, jax.random.key(i)) for i in range(threads_n)]
    states = [cycle.carry(agent.init_step_state(networks, num_envs, jax.random.key(i))) for i in range(threads_n)]
    act_networks = cycle.act_networks(networks, states[0], (), env_step)
    buffers = [cycle.new_buffers(act_networks, s, (), env_step) for s in states]
    calls = [0] * threads_n

    on_device = jax.device_put(plain_step)

    def plain(i: int, env_step=plain_step) -> int:
        action, plain_states[i] = act(networks, plain_states[i], env_step)
        np.asarray(action)
        return num_envs

    def recording(i: int) -> int:
        action, states[i], _, buffers[i] = cycle.step_and_record(act_networks, states[i], (), env_step, buffers[i],
                                                                 calls[i] % cycle.steps)
        calls[i] += 1
        np.asarray(action)
        return num_envs

    return (_threads_rate(threads_n, seconds, 5.0, plain),
            _threads_rate(threads_n, seconds, 5.0, lambda i: plain(i, on_device)),
            _threads_rate(threads_n, seconds, 5.0, recording))


MEASUREMENTS = ("ours", "ours_s", "naive", "env", "transfer", "act")


def measure(n: int, k: int, threads: int | None, seconds: float, only: set[str]) -> dict[str, tuple[Rate, str]]:
    """The chosen measurements of one setting: name -> (rate, what the threads' time went to)."""
    out: dict[str, tuple[Rate, str]] = {}
    if "naive" in only:
        out["naive loop"] = naive(n, k, seconds, threads), ""
    for name, on_device in (("ours", False), ("ours_s", True)):
        if name in only:
            rate, phases = ours(n, k, seconds, threads, stack_on_device=on_device)
            title = "ours, stacking on the device" if on_device else "ours"
            out[title] = rate, ", ".join(f"{phase} {frac:.0%}" for phase, frac in phases.items())
    if "env" in only:
        out["env alone, 4 frames"] = env_alone(n, k, seconds, threads), ""
        out["env alone, 1 frame"] = env_alone(n, k, seconds, threads, stack_num=1), ""
    if "transfer" in only:
        out["observations to the device alone, 4 frames"] = transfer_alone(n, k, seconds, 4), ""
        out["observations to the device alone, 1 frame"] = transfer_alone(n, k, seconds, 1), ""
    if "act" in only:
        plain, on_device, recording = act_alone(n, k, seconds)
        out["act alone, observations from the host"] = plain, ""
        out["act alone, observations on the device"] = on_device, ""
        out["act and record alone"] = recording, ""
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--settings", default="32x2",
                    help="comma-separated ENVSxINFERENCERS[tTHREADS] (THREADS: each env pool's threads, "
                         "--env_threads; default ALE's, min(envs, cores))")
    ap.add_argument("--only", default=",".join(MEASUREMENTS), help=f"comma-separated, of {', '.join(MEASUREMENTS)}")
    args = ap.parse_args()
    only = set(args.only.split(","))
    if not only <= set(MEASUREMENTS):
        ap.error(f"--only: unknown {sorted(only - set(MEASUREMENTS))}; choose from {', '.join(MEASUREMENTS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for s in args.settings.split(","):
        layout, _, threads = s.partition("t")
        n, k = (int(x) for x in layout.split("x"))
        threads = int(threads) if threads else None
        results = measure(n, k, threads, args.seconds, only)
        peer = results.get("naive loop")
        for title, (rate, phases) in results.items():
            c = rate.cpu
            vs_peer = "—" if peer is None else f"{rate.fps / peer[0].fps:.2f}x"
            rows.append(f"| {k} x {n} envs{f', {threads} env threads' if threads else ''} | {title} | {rate.fps:,.0f} | {vs_peer} "
                        f"| {c['timed threads']:.2f} | {c['env threads']:.2f} | {c['other threads']:.2f} "
                        f"| {c['busiest other']} | {c['gil']} | {phases or '—'} |")
            print(rows[-1], flush=True)
    header = ("| threads x envs | measurement | frames/s | / naive loop "
              "| cores busy: the timed threads | env threads | other threads | busiest other thread (cores) "
              "| GIL probe: late wake-up, median / p90 (µs) | timed threads' time (ours) |\n"
              "|---|---|---:|---:|---:|---:|---:|---|---:|---|")
    _report.device_section(args.out, "bench_actors.py", "Actors alone, IMPALA Pong", _report.gpu_schedule_note(), header, rows)


if __name__ == "__main__":
    main()
