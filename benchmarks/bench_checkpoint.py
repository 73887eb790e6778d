"""Checkpoint cost of the IMPALA Atari preset's state: save and restore time and size on disk,
in async mode and in sync mode, beside a plain orbax save of the weights in the same run.

    python benchmarks/bench_checkpoint.py [--envs 8] [--saves 5] [--restores 3] [--no-write]

Per mode: `experiments.impala.make_experiment("Pong-v5", num_envs=ENVS, actor_devices=(0,),
learner_devices=(0,))` (sync: also `async_mode=False`), every other value the preset's; a
GymnasiumLoop, a learner update per inferencer (`loop.run(max_cycles=2)`: in sync mode a save
needs every inferencer to have run), then one warm-up and SAVES timed
`Checkpointer.save`s (each at a new learner step) and RESTORES timed `Checkpointer.restore`s of
the last one, each after zeroing the learner's networks and optimizer state, which it must bring
back bit-exact. The peer: `orbax.checkpoint.StandardCheckpointer` saves (and restores) of only
{networks, opt_state}, each into a fresh directory. Checkpoints go to a temporary directory
(tempfile's, on the local disk). The section goes into BENCHMARKS.md between `<!-- bench_checkpoint:start -->` and
`<!-- bench_checkpoint:end -->`.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import envs  # noqa: E402
from benchmarks._report import BENCH_FILE, write_section  # noqa: E402
from experiments.impala import make_experiment  # noqa: E402
from sebulba.agents.impala import Impala  # noqa: E402
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer  # noqa: E402
from sebulba.loop.loop import GymnasiumLoop  # noqa: E402

ITEMS = ("state", "actors", "pools", "meta")


def key_data(tree: Any) -> Any:
    """Typed PRNG keys as their raw key data (orbax stores plain arrays)."""
    is_key = lambda x: isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)  # noqa: E731
    return jax.tree.map(lambda x: jax.random.key_data(x) if is_key(x) else x, tree)


def raw(tree: Any) -> Any:
    """A pytree's arrays as host numpy arrays, keys as key data."""
    return jax.tree.map(np.asarray, key_data(tree))


def count(tree: Any) -> tuple[int, int]:
    """(elements, bytes) of a pytree's arrays."""
    leaves = jax.tree.leaves(raw(tree))
    return sum(x.size for x in leaves), sum(x.nbytes for x in leaves)


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def timed(fn: Callable[[], Any], before: Callable[[], Any] = lambda: None) -> float:
    before()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def stats(xs: list[float]) -> dict[str, float]:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def measure(async_mode: bool, num_envs: int, saves: int, restores: int, tmp: Path) -> dict[str, Any]:
    exp = make_experiment("Pong-v5", num_envs=num_envs, async_mode=async_mode, actor_devices=(0,), learner_devices=(0,))
    agent = Impala(envs.make_spec(exp.loop.env_id, **exp.loop.env_kwargs), exp.agent)
    root = tmp / ("async" if async_mode else "sync")
    with GymnasiumLoop(agent, exp.loop) as loop:
        ctx = loop.run(max_cycles=exp.loop.num_inferencers)  # sync: every inferencer must have run before a save
        learner = loop.learner
        ckpt = Checkpointer(CheckpointConfig(str(root / "ours"), every_learner_steps=10**9, keep=saves + 1))
        steps = [1000 + i for i in range(saves + 1)]
        save_s = [timed(lambda s=s: ckpt.save(loop.state, ctx.env_steps, s)) for s in steps][1:]  # the first: warm-up
        step_dir = root / "ours" / str(steps[-1])
        assert all((root / "ours" / str(s)).is_dir() for s in steps), "Checkpointer.save skipped a save"
        sizes = {item: disk_bytes(step_dir / item) for item in ITEMS}
        sizes["total"] = disk_bytes(step_dir)
        saved = raw({"networks": learner.networks, "opt_state": learner.opt_state, "key": learner._key})
        # what save writes, before orbax compresses it
        in_memory = {"state": count(saved)[1], "actors": count(Checkpointer._actor_state(loop.state))[1]}

        def zero() -> None:
            learner.networks = jax.tree.map(lambda x: x * 0, learner.networks)
            learner.opt_state = jax.tree.map(lambda x: x * 0 if isinstance(x, jax.Array) else x, learner.opt_state)

        restore_s = [timed(lambda: ckpt.restore(loop.state, steps[-1]), zero) for _ in range(restores)]
        now = raw({"networks": learner.networks, "opt_state": learner.opt_state, "key": learner._key})
        exact = all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(now)))
        ckpt.close()

        plain_tree = key_data({"networks": learner.networks, "opt_state": learner.opt_state})
        abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), plain_tree)
        plain = ocp.StandardCheckpointer()

        def plain_save(i: int) -> None:
            plain.save((root / "plain" / str(i)).resolve(), plain_tree)
            plain.wait_until_finished()

        plain_save_s = [timed(lambda i=i: plain_save(i)) for i in range(saves + 1)][1:]
        plain_restore_s = [timed(lambda: plain.restore((root / "plain" / str(saves)).resolve(), abstract))
                           for _ in range(restores)]
        plain.close()
        return {"save": stats(save_s), "restore": stats(restore_s), "sizes": sizes, "in_memory": in_memory, "exact": exact,
                "plain_save": stats(plain_save_s), "plain_restore": stats(plain_restore_s),
                "plain_bytes": disk_bytes(root / "plain" / str(saves)), "networks": count(learner.networks),
                "opt_state": count(learner.opt_state), "inferencers": len(loop.state.inferencers), "envs": num_envs * exp.loop.num_inferencers}


def mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**16 else f"{n / 2**10:.1f} KiB" if n else "—"


def section(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    r, sync = results["async"], results["sync"]
    (n_params, net_bytes), (n_opt, opt_bytes) = r["networks"], r["opt_state"]
    head = (
        "## Checkpoint save and restore, IMPALA Atari preset (`benchmarks/bench_checkpoint.py`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`{' '.join(['python benchmarks/bench_checkpoint.py', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only (jax {jax.__version__}, orbax-checkpoint "
        f"{ocp.__version__}); the cores may have been shared with other work. Pong-v5 with the Atari preset (IMPALA "
        f"ResNet, RMSProp, 2 inferencers) but {args.envs} envs per inferencer ({r['envs']} in all, {r['inferencers']} inferencers), "
        f"one learner update per inferencer, then {args.saves} timed saves after a warm-up and {args.restores} timed "
        f"restores of the last (seconds: median, min-max), written under {tempfile.gettempdir()} (local disk).\n\n"
        f"Networks: {n_params:,} parameters, {mib(net_bytes)}; optimizer state: {n_opt:,} values, {mib(opt_bytes)}.\n\n"
    )
    rows = ["| | async (preset) | sync (`async_mode=False`) |", "|---|---:|---:|"]
    cell = lambda f: " | ".join(f(results[m]) for m in ("async", "sync"))  # noqa: E731
    span = lambda s: f"{s['median']:.3f} ({s['min']:.3f}-{s['max']:.3f})"  # noqa: E731
    for item, what in (("state", "learner: networks, optimizer, key"), ("actors", "episode stats; sync: inferencers' step state"),
                       ("pools", "env snapshots"), ("meta", "counters, layout"), ("total", "the step's directory")):
        rows.append(f"| on disk: `{item}` ({what}) | {cell(lambda x: mib(x['sizes'][item]))} |")
    rows += [
        f"| in memory: `state`, `actors` (what save writes) | {cell(lambda x: ', '.join(map(mib, x['in_memory'].values())))} |",
        f"| save (s) | {cell(lambda x: span(x['save']))} |",
        f"| restore (s) | {cell(lambda x: span(x['restore']))} |",
        f"| restore brings the learner state back bit-exact | {cell(lambda x: 'yes' if x['exact'] else '**no**')} |",
        f"| plain orbax `StandardCheckpointer` (networks + opt_state): on disk | {cell(lambda x: mib(x['plain_bytes']))} |",
        f"| plain orbax: save (s) | {cell(lambda x: span(x['plain_save']))} |",
        f"| plain orbax: restore (s) | {cell(lambda x: span(x['plain_restore']))} |",
        "| ours / plain: size, save, restore | " + cell(lambda x: ", ".join(f"{a:.2f}x" for a in (
            x['sizes']['total'] / x['plain_bytes'], x['save']['median'] / x['plain_save']['median'],
            x['restore']['median'] / x['plain_restore']['median']))) + " |",
    ]
    extra = lambda x, k: 1000 * (x[k]["median"] - x[f"plain_{k}"]["median"])  # noqa: E731
    reading = (
        "\n\n**Reading these figures.** The learner state dominates both size and time: the networks and RMSProp's "
        "accumulator (one value per parameter) in float32, which orbax's zstd-compressed format stores in "
        f"{mib(r['sizes']['state'])} of the {mib(r['in_memory']['state'])} in memory. The actors' item is episode "
        f"statistics in async mode; in sync mode it also holds every inferencer's step state and last observations "
        f"({mib(sync['in_memory']['actors'])} in memory, {mib(sync['sizes']['actors'])} on disk: Pong's frames compress "
        "well). Sync mode writes no `pools` item for Pong: ALE's env state cannot be captured (`EnvPool.snapshot` "
        "supports the native backend only), so `save` logs a warning and a resumed sync run starts fresh episodes. "
        f"Over a plain orbax save of the same weights, ours spends {extra(r, 'save'):+.0f} ms (async) and "
        f"{extra(sync, 'save'):+.0f} ms (sync) per save, {extra(r, 'restore'):+.0f} and {extra(sync, 'restore'):+.0f} ms "
        "per restore (the actors' and metadata items, the composite layout and `CheckpointManager`'s bookkeeping), "
        "the same order as the run-to-run spread here. The restores went into a loop already running; a resume in a "
        "fresh process also resets every env pool first (sync mode). On a GPU host the learner state is the same "
        "size (the same networks and optimizer), and a save then also includes its device-to-host copy (a restore: "
        "host-to-device).\n"
    )
    return head + "\n".join(rows) + reading


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=8, help="envs per inferencer")
    ap.add_argument("--saves", type=int, default=5)
    ap.add_argument("--restores", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_checkpoint_") as tmp:
        results = {mode: measure(mode == "async", args.envs, args.saves, args.restores, Path(tmp))
                   for mode in ("async", "sync")}
    body = section(results, args)
    print(body)
    if not args.no_write:
        write_section(BENCH_FILE, "bench_checkpoint", body)


if __name__ == "__main__":
    main()
