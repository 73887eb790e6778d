"""Side-by-side env steps/s: our `envs` pool against EnvPool and Gymnasium's vector envs.

Run from the repository root:

    python benchmarks/bench_envs.py                    # all workloads, 5 repeats, ~1 s each
    python benchmarks/bench_envs.py --repeats 9 --seconds 1.5
    python benchmarks/bench_envs.py --only async --no-write
    python benchmarks/bench_envs.py --baseline 665670a   # also ours at that commit: before and after, one run

Each workload is measured for ours and its peers in the same run, interleaved: every repeat
builds each contestant afresh (only one is alive at a time, so idle worker threads or
processes of one never slow another), warms it up, then times a fixed number of calls with
time.perf_counter. The median steps/s over the repeats is reported, because the machine is
noisy. Actions are random valid actions drawn beforehand from a seeded numpy Generator and
cycled, so their generation is not timed. The number of calls per repeat is calibrated once,
during the first warm-up, to take about --seconds.

The results go into BENCHMARKS.md, between the markers `<!-- bench_envs:start -->` and
`<!-- bench_envs:end -->` (the rest of the file is left alone); --no-write only prints them.
EnvPool is optional: without it, its columns read "not installed". A contestant that cannot
be built (e.g. a backend not written yet) is skipped and its row reads "not run: <reason>".
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
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Protocol

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
import envs  # noqa: E402
from _baseline import import_baseline, short_rev  # noqa: E402  (benchmarks/_baseline.py)
from _paths import numpy_path  # noqa: E402  (benchmarks/_paths.py)
from _report import BENCH_FILE, publish, verdict  # noqa: E402  (benchmarks/_report.py)

try:
    import envpool
except ImportError:  # optional peer
    envpool = None

SECTION = "bench_envs"  # its markers in BENCHMARKS.md: <!-- bench_envs:start/end -->
ACTION_BATCHES = 256  # pre-generated action batches, cycled
SEED = 0


# ---------------------------------------------------------------------------- drivers
class Driver(Protocol):
    """A built env batch ready to be stepped: run(calls) returns the env steps it took."""

    def run(self, calls: int) -> int: ...

    def close(self) -> None: ...


def random_actions(space: gym.spaces.Space, batch: int) -> np.ndarray:
    """ACTION_BATCHES batches of `batch` valid actions for one env's action space, seeded."""
    rng = np.random.default_rng(SEED)
    shape = (ACTION_BATCHES, batch)
    if isinstance(space, gym.spaces.Discrete):
        start = int(space.start)
        return rng.integers(start, start + int(space.n), size=shape).astype(space.dtype)
    if isinstance(space, gym.spaces.Box):
        return rng.uniform(space.low, space.high, size=shape + space.shape).astype(space.dtype)
    raise TypeError(f"no random actions for {space}")


class SyncDriver:
    """Steps all envs every call: `env.step(actions)` (our pool, EnvPool, Gymnasium vector envs)."""

    def __init__(self, env: Any, single_action_space: gym.spaces.Space, num_envs: int, reset: Callable[[], Any]):
        self.env = env
        self.num_envs = num_envs
        self.actions = random_actions(single_action_space, num_envs)
        self.k = 0
        reset()

    def run(self, calls: int) -> int:
        step, actions, k = self.env.step, self.actions, self.k
        for _ in range(calls):
            step(actions[k])
            k = (k + 1) % ACTION_BATCHES
        self.k = k
        return calls * self.num_envs

    def close(self) -> None:
        self.env.close()


class AsyncDriver:
    """EnvPool's async loop: recv() a batch, send() its actions back; batch_size env steps a call."""

    def __init__(self, pool: Any, batch_size: int):
        self.pool = pool
        self.batch_size = batch_size
        self.actions = random_actions(pool.action_space, batch_size)
        self.k = 0
        pool.async_reset()

    def run(self, calls: int) -> int:
        recv, send, actions, k = self.pool.recv, self.pool.send, self.actions, self.k
        for _ in range(calls):
            _obs, _rew, _term, _trunc, info = recv()
            send(actions[k], info["env_id"])
            k = (k + 1) % ACTION_BATCHES
        self.k = k
        return calls * self.batch_size

    def close(self) -> None:
        self.pool.close()


class AleAsyncDriver:
    """ALE's own vector env, driven as its docs do: send() the last batch's actions, recv()."""

    def __init__(self, env: Any, batch_size: int):
        self.env = env
        self.batch_size = batch_size
        self.actions = random_actions(env.single_action_space, batch_size).astype(np.int32)
        self.k = 0
        env.reset(seed=SEED)

    def run(self, calls: int) -> int:
        send, recv, actions, k = self.env.send, self.env.recv, self.actions, self.k
        for _ in range(calls):
            send(actions[k])
            recv()
            k = (k + 1) % ACTION_BATCHES
        self.k = k
        return calls * self.batch_size

    def close(self) -> None:
        self.env.close()


class PhysicsDriver:
    """The raw-physics limit of a MuJoCo task: MuJoCo's own batched stepping (`mujoco.rollout`,
    a persistent pool of `nthread` threads), frame_skip substeps per call for `batch_size` of the
    envs in turn, each env's state carried to its next call; no observations, rewards or resets."""

    def __init__(self, task: str, num_envs: int, batch_size: int, nthread: int):
        import mujoco
        from mujoco import rollout

        from envs.mujoco.backend import configure

        t = configure(task, "gymnasium", {})
        self.model, self.frame_skip = t.model, int(t.config.task_kwargs["frame_skip"])
        self.datas = [mujoco.MjData(self.model) for _ in range(nthread)]
        self.spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        row = np.empty(mujoco.mj_stateSize(self.model, self.spec))
        mujoco.mj_getState(self.model, self.datas[0], row, self.spec)
        self.state = np.tile(row, (num_envs, 1))
        rng = np.random.default_rng(SEED)
        low, high = self.model.actuator_ctrlrange.T
        self.controls = rng.uniform(low, high, (8, batch_size, self.frame_skip, self.model.nu))
        self.out = np.empty((batch_size, self.frame_skip, len(row)))
        self.rollout = rollout.Rollout(nthread=nthread)
        self.models = [self.model] * batch_size  # skip_checks wants one model per rollout
        self.n, self.b, self.k = num_envs, batch_size, 0

    def run(self, calls: int) -> int:
        for _ in range(calls):
            part = slice(self.k * self.b % self.n, self.k * self.b % self.n + self.b)
            self.rollout.rollout(self.models, self.datas, self.state[part], self.controls[self.k % 8],
                                 nstep=self.frame_skip, state=self.out, skip_checks=True)
            self.state[part] = self.out[:, -1]
            self.k += 1
        return calls * self.b

    def close(self) -> None:
        self.rollout.close()


# ---------------------------------------------------------------------------- info-key envs
class InfoKeysEnv(gym.Env):
    """A near-free env (obs: its step count) whose info holds `num_keys` float keys on reset and
    step (0: an empty info), so the process backend's cost per info key shows."""

    observation_space = gym.spaces.Box(0, np.inf, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, num_keys: int = 0):
        self.keys = [f"key{i}" for i in range(num_keys)]
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.array([self.t], np.float32), 1.0, self.t >= 200, False, self._info()

    def _info(self) -> dict[str, float]:
        return {k: float(self.t) for k in self.keys}


class NoInfo(gym.Wrapper):
    """An env with its info stripped (empty dicts)."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        return self.env.reset(**kwargs)[0], {}

    def step(self, action: Any) -> tuple[Any, ...]:
        return (*self.env.step(action)[:4], {})


class KeepInfo(NoInfo):
    """The same wrapper layer, info kept: the reference NoInfo is compared with."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, ...]:
        return self.env.step(action)


def cliff_walking(keep_info: bool) -> gym.Env:
    from gymnasium.envs.toy_text import CliffWalkingEnv

    return (KeepInfo if keep_info else NoInfo)(CliffWalkingEnv())


def register_info_envs() -> None:
    """BenchInfoKeys-v0 (kwarg num_keys) and BenchCliffWalking-v1 (kwarg keep_info); worker
    processes unpickle the entry points from this module."""
    if "BenchInfoKeys-v0" not in gym.registry:
        gym.register("BenchInfoKeys-v0", entry_point=InfoKeysEnv, max_episode_steps=200)
        gym.register("BenchCliffWalking-v1", entry_point=cliff_walking, max_episode_steps=500)


# ---------------------------------------------------------------------------- contestants
def ours_sync(task: str, num_envs: int, backend: str | None = None, lib: ModuleType = envs, **kwargs: Any) -> Driver:
    """Our pool; `lib`: this tree's `envs`, or an older commit's (--baseline)."""
    if backend is not None:
        kwargs["backend"] = backend
    pool = lib.make(task, num_envs=num_envs, seed=SEED, **kwargs)
    return SyncDriver(pool, pool.action_space, num_envs, pool.reset)


def ours_ale_vector_env(build: Callable[[], Driver]) -> Driver:
    """Ours with Atari on ALE's vector env (envs/atari/backend.py), as where the Atari kernel is
    unavailable: the backend before the native one."""
    with numpy_path():  # SEBULBA_NATIVE_KERNEL=0 turns every kernel off, the Atari one with it
        return build()


def ours_numpy_path(build: Callable[[], Driver]) -> Driver:
    """Ours with the built-in tasks on their numpy path, not compiled."""
    with numpy_path():
        return build()


def ours_info_keys(num_keys: int, num_envs: int) -> Driver:
    register_info_envs()
    return ours_sync("BenchInfoKeys-v0", num_envs, num_keys=num_keys)


def ours_cliff(keep_info: bool, num_envs: int) -> Driver:
    register_info_envs()
    return ours_sync("BenchCliffWalking-v1", num_envs, keep_info=keep_info)


def ours_async(task: str, num_envs: int, batch_size: int, lib: ModuleType = envs, **kwargs: Any) -> Driver:
    pool = lib.make(task, num_envs=num_envs, batch_size=batch_size, seed=SEED, **kwargs)
    return AsyncDriver(pool, batch_size)


def envpool_sync(task: str, num_envs: int, **kwargs: Any) -> Driver:
    pool = envpool.make_gymnasium(task, num_envs=num_envs, seed=SEED, **kwargs)
    return SyncDriver(pool, pool.action_space, num_envs, pool.reset)


def envpool_async(task: str, num_envs: int, batch_size: int, **kwargs: Any) -> Driver:
    pool = envpool.make_gymnasium(task, num_envs=num_envs, batch_size=batch_size, seed=SEED, **kwargs)
    return AsyncDriver(pool, batch_size)


def ale_async(game: str, num_envs: int, batch_size: int, num_threads: int) -> Driver:
    from ale_py.vector_env import AtariVectorEnv

    env = AtariVectorEnv(game, num_envs, batch_size=batch_size, num_threads=num_threads, reward_clipping=False)
    return AleAsyncDriver(env, batch_size)


def gym_numpy_vector(task: str, num_envs: int) -> Driver:
    """Gymnasium's own numpy vector env for `task` (importing `envs` makes our face the registered
    vector entry point, so the one Gymnasium had is built directly)."""
    from envs.vector import GYMNASIUM_VECTOR_ENTRY_POINTS

    entry = GYMNASIUM_VECTOR_ENTRY_POINTS[task]
    if isinstance(entry, str):
        entry = gym.envs.registration.load_env_creator(entry)
    env = entry(num_envs=num_envs)
    return SyncDriver(env, env.single_action_space, num_envs, lambda: env.reset(seed=SEED))


def gym_async_vector(task: str, num_envs: int) -> Driver:
    env = gym.vector.AsyncVectorEnv([lambda: gym.make(task) for _ in range(num_envs)])
    return SyncDriver(env, env.single_action_space, num_envs, lambda: env.reset(seed=SEED))


@dataclass
class Contestant:
    name: str
    build: Callable[[], Driver]
    unavailable: str | None = None  # set: never built, this is shown instead of a figure


@dataclass
class Peer:
    contestant: Contestant
    target: float | None = None  # ours / peer must reach this; None: informational


@dataclass
class Workload:
    key: str
    title: str
    ours: Contestant
    peers: list[Peer]


def envpool_contestant(build: Callable[[], Driver]) -> Contestant:
    return Contestant("envpool", build, None if envpool is not None else "not installed")


def mujoco_workloads() -> list[Workload]:
    """HalfCheetah-v5 and Ant-v5 natively (2 threads), beside EnvPool (2 threads), our worker
    processes (Gymnasium's envs) and the raw-physics limit (MuJoCo's rollout on 2 threads)."""
    out = []
    for task in ("HalfCheetah-v5", "Ant-v5"):
        for n, b in ((16, 16), (64, 64), (32, 16)):
            mode = "sync" if n == b else f"async batch {b}"

            def ours(task: str = task, n: int = n, b: int = b, **kw: Any) -> Driver:
                return ours_sync(task, n, **kw) if n == b else ours_async(task, n, b, **kw)

            def peer(task: str = task, n: int = n, b: int = b) -> Driver:
                return envpool_sync(task, n, num_threads=2) if n == b else envpool_async(task, n, b, num_threads=2)

            out.append(Workload(
                f"mujoco-{task.split('-')[0].lower()}-{n}" + ("" if n == b else f"x{b}"),
                f"{task}, {n} envs, {mode}, 2 threads",
                Contestant("ours", lambda ours=ours: ours(num_threads=2)),
                [
                    Peer(envpool_contestant(peer), target=1.1),
                    Peer(Contestant("raw physics (mujoco.rollout)", lambda task=task, n=n, b=b: PhysicsDriver(task, n, b, 2)),
                         target=0.9),
                    Peer(Contestant("ours (process)", lambda ours=ours: ours(backend="process"))),
                ],
            ))
    return out


def workloads(baseline: tuple[str, ModuleType] | None = None) -> list[Workload]:
    """The workloads; with `baseline` (rev, its `envs`), ours at that commit is a peer of ours in
    every workload it can run, so a change is measured before and after in one run."""
    cp = "CartPole-v1"

    def before(build: Callable[[ModuleType], Driver]) -> list[Peer]:
        if baseline is None:
            return []
        rev, lib = baseline
        return [Peer(Contestant(f"ours at {rev}", lambda: build(lib)))]

    return [
        Workload(
            "sync-256",
            f"{cp}, 256 envs, sync",
            Contestant("ours", lambda: ours_sync(cp, 256)),
            [
                Peer(envpool_contestant(lambda: envpool_sync(cp, 256)), target=10.0),
                Peer(Contestant("gymnasium numpy vector env", lambda: gym_numpy_vector(cp, 256))),
                Peer(Contestant("ours, numpy path", lambda: ours_numpy_path(lambda: ours_sync(cp, 256)))),
                *before(lambda lib: ours_sync(cp, 256, lib=lib)),
            ],
        ),
        Workload(
            "async-32x16",
            f"{cp}, 32 envs, async batch 16",
            Contestant("ours", lambda: ours_async(cp, 32, 16)),
            [
                Peer(envpool_contestant(lambda: envpool_async(cp, 32, 16)), target=1.5),
                Peer(Contestant("ours, numpy path", lambda: ours_numpy_path(lambda: ours_async(cp, 32, 16)))),
                *before(lambda lib: ours_async(cp, 32, 16, lib=lib)),
            ],
        ),
        Workload(
            "process-16",
            f"{cp}, 16 envs, worker processes, sync",
            Contestant("ours (process)", lambda: ours_sync(cp, 16, backend="process")),
            [
                Peer(Contestant("gymnasium AsyncVectorEnv", lambda: gym_async_vector(cp, 16)), target=3.0),
                *before(lambda lib: ours_sync(cp, 16, backend="process", lib=lib)),
            ],
        ),
        Workload(
            "atari-pong-16x8",
            "Pong-v5, 16 envs, async batch 8, 2 threads",
            Contestant("ours", lambda: ours_async("Pong-v5", 16, 8, num_threads=2)),
            [
                Peer(envpool_contestant(lambda: envpool_async("Pong-v5", 16, 8, num_threads=2)), target=1.2),
                Peer(Contestant("ALE AtariVectorEnv (raw)", lambda: ale_async("pong", 16, 8, 2))),
                Peer(Contestant("ours on ALE's vector env", lambda: ours_ale_vector_env(lambda: ours_async("Pong-v5", 16, 8, num_threads=2)))),
                *before(lambda lib: ours_async("Pong-v5", 16, 8, num_threads=2, lib=lib)),
            ],
        ),
        Workload(
            "atari-pong-16",
            "Pong-v5, 16 envs, sync, 2 threads",
            Contestant("ours", lambda: ours_sync("Pong-v5", 16, num_threads=2)),
            [
                Peer(envpool_contestant(lambda: envpool_sync("Pong-v5", 16, num_threads=2)), target=1.0),
                Peer(Contestant("ours on ALE's vector env", lambda: ours_ale_vector_env(lambda: ours_sync("Pong-v5", 16, num_threads=2)))),
                *before(lambda lib: ours_sync("Pong-v5", 16, num_threads=2, lib=lib)),
            ],
        ),
        Workload(
            "process-info-keys-16",
            "toy env with 8 float info keys, 16 envs, worker processes, sync (peers: 1 key, empty info)",
            Contestant("ours (process, 8 keys)", lambda: ours_info_keys(8, 16)),
            [
                Peer(Contestant("ours (process, 1 key)", lambda: ours_info_keys(1, 16))),
                Peer(Contestant("ours (process, empty info)", lambda: ours_info_keys(0, 16))),
            ],
        ),
        Workload(
            "process-info-cliff-16",
            "CliffWalking-v1 with its info (prob), 16 envs, worker processes, sync",
            Contestant("ours (process, prob)", lambda: ours_cliff(True, 16)),
            [Peer(Contestant("ours (process, info stripped)", lambda: ours_cliff(False, 16)))],
        ),
        Workload(
            "sync-16",
            f"{cp}, 16 envs, sync",
            Contestant("ours", lambda: ours_sync(cp, 16)),
            [
                Peer(envpool_contestant(lambda: envpool_sync(cp, 16))),
                Peer(Contestant("ours, numpy path", lambda: ours_numpy_path(lambda: ours_sync(cp, 16)))),
                *before(lambda lib: ours_sync(cp, 16, lib=lib)),
            ],
        ),
        *mujoco_workloads(),
    ]


# ---------------------------------------------------------------------------- measuring
class NotRun(Exception):
    """A contestant could not be built or run; the message is what its table cell says."""


def short(exc: BaseException, limit: int = 90) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0].replace("|", "/")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def calibrate(driver: Driver, seconds: float) -> int:
    """Warm up for ~seconds/4 and return the number of calls that takes ~seconds. The first call
    is not counted: an async driver's first recv waits for the reset its pool started at build
    (Atari: a seeded reset reloads each env's ROM), which would shrink every timed window."""
    driver.run(1)
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds / 4 or calls < 5:
        driver.run(max(1, calls))  # doubling batches of calls
        calls += max(1, calls)
    return max(1, round(calls * seconds / elapsed))


def measure_once(c: Contestant, calls: int | None, seconds: float) -> tuple[float, int]:
    """Build, warm up, time `calls` calls (calibrated here when None); returns (steps/s, calls)."""
    try:
        driver = c.build()
    except Exception as exc:
        raise NotRun(f"not run: {short(exc)}") from exc
    try:
        if calls is None:
            calls = calibrate(driver, seconds)
        else:
            driver.run(max(1, calls // 5))  # warm-up
        start = time.perf_counter()
        steps = driver.run(calls)
        elapsed = time.perf_counter() - start
    except Exception as exc:
        raise NotRun(f"failed: {short(exc)}") from exc
    finally:
        driver.close()
    return steps / elapsed, calls


@dataclass
class Result:
    rates: list[float] = field(default_factory=list)
    calls: int | None = None
    problem: str | None = None  # "not installed", "not run: ...", "failed: ..."

    @property
    def median(self) -> float | None:
        return statistics.median(self.rates) if self.rates and self.problem is None else None


def measure_workload(w: Workload, repeats: int, seconds: float) -> dict[str, Result]:
    """Interleaved repeats of ours and every peer; the order rotates each repeat."""
    contestants = [w.ours] + [p.contestant for p in w.peers]
    results = {c.name: Result(problem=c.unavailable) for c in contestants}
    print(f"\n== {w.key}: {w.title}", flush=True)
    for r in range(repeats):
        shift = r % len(contestants)
        for c in contestants[shift:] + contestants[:shift]:
            res = results[c.name]
            if res.problem is not None:
                continue
            try:
                rate, res.calls = measure_once(c, res.calls, seconds)
            except NotRun as exc:
                res.problem = str(exc)
                print(f"  {c.name:<28} {exc}", flush=True)
                continue
            res.rates.append(rate)
            print(f"  repeat {r + 1}/{repeats} {c.name:<28} {rate:>14,.0f} steps/s", flush=True)
    for c in contestants:
        res = results[c.name]
        if res.problem is None:
            spread = f"min {min(res.rates):,.0f}, max {max(res.rates):,.0f}"
            print(f"  median {c.name:<28} {res.median:>14,.0f} steps/s ({spread}, {res.calls} calls/repeat)")
        elif c.unavailable is not None:
            print(f"  {c.name:<28} {res.problem}")
    return results


# ---------------------------------------------------------------------------- report
def fmt_rate(res: Result) -> str:
    return res.problem if res.problem is not None else f"{res.median:,.0f}"


def table_rows(w: Workload, results: dict[str, Result]) -> list[str]:
    ours = results[w.ours.name]
    rows = []
    for p in w.peers:
        peer = results[p.contestant.name]
        ratio = ours.median / peer.median if ours.median and peer.median else None
        target = f">= {p.target:.2f}x" if p.target is not None else "—"
        met = verdict(ratio, p.target)
        cells = [
            w.title,
            fmt_rate(ours),
            p.contestant.name,
            fmt_rate(peer),
            f"{ratio:.2f}x" if ratio is not None else "—",
            target,
            met,
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def versions() -> str:
    ep = envpool.__version__ if envpool is not None else "not installed"
    return (
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"gymnasium {gym.__version__}, envpool {ep}"
    )


def render(sections: list[tuple[Workload, dict[str, Result]]], args: argparse.Namespace, title: str = "Env steps/s",
           script: str = "benchmarks/bench_envs.py") -> str:
    command = shlex.join(["python", script, *sys.argv[1:]])
    lines = [
        f"## {title} (`{script}`)",
        "",
        f"Run {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} with `{command}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} cores; {versions()}  ",
        f"Median of {args.repeats} interleaved repeats of ~{args.seconds:g} s each; "
        "steps/s counts env steps (async: batch_size per recv). Peers use their default settings.",
        "",
        "| workload | ours (steps/s) | peer | peer (steps/s) | ratio | target | met? |",
        "|---|---:|---|---:|---:|---|---|",
    ]
    for w, results in sections:
        lines += table_rows(w, results)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None = None, description: str = __doc__.splitlines()[0]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--repeats", type=int, default=5, help="interleaved repeats per contestant; the median is reported")
    ap.add_argument("--seconds", type=float, default=1.0, help="target length of one timed repeat")
    ap.add_argument("--only", default="", help="run only workloads whose key or title contains this (case-insensitive); "
                    "the written section then holds only those")
    ap.add_argument("--baseline", default="", help="an older commit of ours (e.g. 665670a): its `envs` runs beside "
                    "this tree's in every workload it can, before and after in one run")
    ap.add_argument("--no-write", action="store_true", help=f"print the table only, leave {BENCH_FILE.name} alone")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.seconds <= 0:
        ap.error("--repeats must be >= 1 and --seconds > 0")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    only = args.only.lower()
    baseline = (short_rev(args.baseline), import_baseline(args.baseline)) if args.baseline else None
    chosen = [w for w in workloads(baseline) if only in w.key.lower() or only in w.title.lower()]
    if not chosen:
        sys.exit(f"--only {args.only!r} matches no workload (keys: {[w.key for w in workloads()]})")
    sections = [(w, measure_workload(w, args.repeats, args.seconds)) for w in chosen]
    body = render(sections, args)
    publish(SECTION, body, not args.no_write)


if __name__ == "__main__":
    main()
