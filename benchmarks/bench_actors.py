"""The actor side alone (no learner), IMPALA Pong: our inferencers vs issue 6's naive actor loop,
in the same run, with where our inferencer threads spend their time.

    python benchmarks/bench_actors.py --out DIR [--seconds 20] [--settings 32x1x2,64x2x2]

Ours: a GymnasiumLoop built from `experiments.impala`'s Atari preset; each inferencer runs
`run_cycle` back to back in its own thread with the initial networks (nothing is learned).
Peer: issue 6's naive actor-only loop: per thread ALE's AtariVectorEnv with async batch
num_envs / 2, and per batch one jitted act (the same policy, same device), then send, then recv.
Settings are ENVSxLANESxINFERENCERS; the peer runs with the same envs and threads. frames/s is
env steps x frame skip (4) after one warm-up cycle per thread.

Ours runs twice: with the env's stacked frames, and stacking on the device (`--stack_on_device`:
the pools send single frames). Ceilings in the same run say which side bounds the actors: the
same threads stepping only their `envs` pools with random numpy actions (no policy), with 4 and
with 1 frame per observation; only copying observation batches to the device (4 and 1 frames);
and calling only the jitted act on a fixed batch of observations, with the action fetched to the
host each call (no env): as the naive loop's plain act, the same on observations already on the
device (no host-to-device copy), and as our loop's act, which also records the step into the
trajectory buffers.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import time
from pathlib import Path

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
from sebulba.loop.loop import GymnasiumLoop  # noqa: E402

FRAME_SKIP = 4


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


def ours(num_envs: int, lanes: int, inferencers: int, seconds: float,
         stack_on_device: bool = False) -> tuple[float, dict[str, float]]:
    exp = impala.make_experiment("Pong-v5", num_envs=num_envs, env_lanes=lanes, inferencers_per_device=inferencers,
                                 stack_on_device=stack_on_device)
    agent = Impala(envs.make_spec("Pong-v5", **exp.loop.env_kwargs), exp.agent)
    loop = GymnasiumLoop(agent, exp.loop)
    clock = PhaseClock()
    lane_cls = inferencer_module.Lane
    orig = lane_cls.recv, lane_cls.send
    lane_cls.recv, lane_cls.send = clock.wrap("recv (env wait + pool)", orig[0]), clock.wrap("send (action to host + pool)", orig[1])
    loop.cycle.step_and_record = clock.wrap("act (jit dispatch)", loop.cycle.step_and_record)
    try:
        version, networks = loop.learner.version, loop.learner.networks
        for inf in loop.inferencers:  # compile and warm up
            inf.run_cycle(version, networks)
        clock.total.clear()
        inferencers = loop.inferencers
        rate, elapsed = _threads_rate(len(inferencers), seconds, 0.0,
                                      lambda i: inferencers[i].run_cycle(version, networks).env_steps)
    finally:
        lane_cls.recv, lane_cls.send = orig
        loop.close()
    per_thread = {k: v / elapsed / len(loop.inferencers) for k, v in clock.total.items()}
    return rate, per_thread


def policy(num_envs: int):
    """The Atari preset's agent, initial networks, compiled cycle functions and env options: the
    same policy and jitted act our inferencers use, for the loops measured beside them."""
    exp = impala.make_experiment("Pong-v5", num_envs=num_envs)
    agent = Impala(envs.make_spec("Pong-v5", **exp.loop.env_kwargs), exp.agent)
    loop = GymnasiumLoop(agent, exp.loop)
    networks, cycle = loop.learner.networks, loop.cycle
    loop.close()
    return agent, networks, cycle, exp.loop.env_kwargs


def naive(num_envs: int, threads_n: int, seconds: float) -> float:
    from ale_py.vector_env import AtariVectorEnv

    agent, networks, cycle, _ = policy(num_envs)
    batch = num_envs // 2
    vecs = [AtariVectorEnv("pong", num_envs, batch_size=batch, reward_clipping=False) for _ in range(threads_n)]
    carry = []  # per thread: step state and the last batch received
    for i, vec in enumerate(vecs):
        obs, info = vec.reset(seed=i)  # the first batch
        carry.append([agent.init_step_state(networks, batch, jax.random.key(i)), obs, np.zeros(batch, np.float32),
                      np.zeros(batch, bool), info])

    def body(i: int) -> int:
        state, obs, reward, done, info = carry[i]
        out, state, _ = cycle.step(networks, state, (), host_env_step(obs, reward, done, done, info["episode_frame_number"]))
        vecs[i].send(np.asarray(out.action, np.int32))
        obs, reward, done, _, info = vecs[i].recv()
        carry[i] = [state, obs, reward.astype(np.float32), done, info]
        return batch

    try:
        return _threads_rate(threads_n, seconds, 10.0, body)[0]  # 10 s to compile and warm up
    finally:
        for v in vecs:
            v.close()


def _threads_rate(threads_n: int, seconds: float, warmup: float, body) -> tuple[float, float]:
    """(frames/s, seconds timed) of `threads_n` threads each running `body(i)` (which returns the
    env steps it did) in a loop: calls that start in the `seconds` after `warmup` are counted,
    over the time from then until the last of them ends."""
    steps = [0] * threads_n
    start_at = time.perf_counter() + warmup
    stop_at = start_at + seconds

    def work(i: int) -> None:
        while (now := time.perf_counter()) < stop_at:
            n = body(i)
            if now >= start_at:
                steps[i] += n

    threads = [threading.Thread(target=work, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start_at
    return sum(steps) * FRAME_SKIP / elapsed, elapsed


def env_alone(num_envs: int, threads_n: int, seconds: float, stack_num: int = 4) -> float:
    """The threads step only their sync `envs` pools, with random actions: the env ceiling."""
    exp = impala.make_experiment("Pong-v5", num_envs=num_envs)
    kwargs = {**exp.loop.env_kwargs, "stack_num": stack_num}
    pools = [envs.make("Pong-v5", num_envs=num_envs, seed=i * num_envs, **kwargs) for i in range(threads_n)]
    rngs = [np.random.default_rng(i) for i in range(threads_n)]
    n_actions = pools[0].action_space.n
    try:
        for pool in pools:
            pool.reset()

        def body(i: int) -> int:
            pools[i].step(rngs[i].integers(0, n_actions, num_envs))
            return num_envs

        return _threads_rate(threads_n, seconds, 2.0, body)[0]
    finally:
        for pool in pools:
            pool.close()


def transfer_alone(num_envs: int, threads_n: int, seconds: float, stack_num: int) -> float:
    """The threads only copy a batch of observations (num_envs x stack_num x 84 x 84 uint8, a fresh
    host array each call) to the device and wait for it: the host-to-device ceiling, in frames/s."""
    device = jax.devices()[0]
    batches = [[np.full((num_envs, stack_num, 84, 84), k, np.uint8) for k in range(2)] for _ in range(threads_n)]
    calls = [0] * threads_n

    def body(i: int) -> int:
        calls[i] += 1
        jax.device_put(batches[i][calls[i] % 2], device).block_until_ready()
        return num_envs

    return _threads_rate(threads_n, seconds, 2.0, body)[0]


def act_alone(num_envs: int, threads_n: int, seconds: float) -> tuple[float, float, float]:
    """The threads call only the jitted act on a fixed host batch of observations and fetch each
    action to the host: the inference ceiling (host-to-device copy, policy, device-to-host).
    Measured three times: the naive loop's plain act, the same with the observations already on
    the device (no host-to-device copy), and the loop's own act, which also writes the step into
    the cycle's trajectory buffers (donated)."""
    agent, networks, cycle, env_kwargs = policy(num_envs)
    pool = envs.make("Pong-v5", num_envs=num_envs, **env_kwargs)
    obs, info = pool.reset()
    pool.close()
    zeros = np.zeros(num_envs, np.float32)
    env_step = host_env_step(obs, zeros, zeros.astype(bool), zeros.astype(bool), info["elapsed_step"])
    states = [cycle.copy(agent.init_step_state(networks, num_envs, jax.random.key(i))) for i in range(threads_n)]
    buffers = [cycle.new_buffers(networks, s, (), env_step) for s in states]
    calls = [0] * threads_n

    on_device = jax.device_put(env_step)

    def plain(i: int, env_step=env_step) -> int:
        out, states[i], _ = cycle.step(networks, states[i], (), env_step)
        np.asarray(out.action)
        return num_envs

    def recording(i: int) -> int:
        action, states[i], _, buffers[i] = cycle.step_and_record(networks, states[i], (), env_step, buffers[i], calls[i] % cycle.steps)
        calls[i] += 1
        np.asarray(action)
        return num_envs

    return (_threads_rate(threads_n, seconds, 5.0, plain)[0],
            _threads_rate(threads_n, seconds, 5.0, lambda i: plain(i, on_device))[0],
            _threads_rate(threads_n, seconds, 5.0, recording)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--settings", default="32x1x2", help="comma-separated ENVSxLANESxINFERENCERS")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for s in args.settings.split(","):
        n, lanes, k = (int(x) for x in s.split("x"))
        peer = naive(n, k, args.seconds)
        fps, phases = ours(n, lanes, k, args.seconds)
        fps_1, phases_1 = ours(n, lanes, k, args.seconds, stack_on_device=True)
        phase_text = "; ".join(", ".join(f"{name} {frac:.0%}" for name, frac in p.items()) for p in (phases, phases_1))
        env_fps, env_fps_1 = env_alone(n, k, args.seconds), env_alone(n, k, args.seconds, stack_num=1)
        h2d, h2d_1 = transfer_alone(n, k, args.seconds, 4), transfer_alone(n, k, args.seconds, 1)
        act_fps, act_device_fps, record_fps = act_alone(n, k, args.seconds)
        rows.append(f"| {k} x {n} envs, {lanes} lane(s) | {fps:,.0f} | {fps_1:,.0f} ({fps_1 / fps:.2f}x) | {peer:,.0f} "
                    f"| {fps / peer:.2f}x, {fps_1 / peer:.2f}x | {env_fps:,.0f} / {env_fps_1:,.0f} | {h2d:,.0f} / {h2d_1:,.0f} "
                    f"| {act_fps:,.0f} / {act_device_fps:,.0f} | {record_fps:,.0f} | {phase_text} |")
        print(rows[-1], flush=True)
    header = ("| threads x envs | ours (frames/s) | ours, stacking on the device (frames/s) "
              "| naive loop, async batch envs/2 (frames/s) | ours / naive (env stacks, device stacks) "
              "| env alone, random actions: 4 frames / 1 frame per step (frames/s) "
              "| observations to the device alone: 4 frames / 1 frame per step (frames/s) "
              "| act alone, no env: observations from the host / already on the device (frames/s) "
              "| act and record alone (frames/s) "
              "| inferencer thread time (env stacks; device stacks) |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    _report.device_section(args.out, "bench_actors.py", "Actors alone, IMPALA Pong", "", header, rows)


if __name__ == "__main__":
    main()
