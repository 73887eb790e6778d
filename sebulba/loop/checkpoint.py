"""Checkpoints of a GymnasiumLoop with orbax, in one process or across the processes of a
jax.distributed job.

A checkpoint holds the learner state once (networks, optimizer state, RNG key: identical on every
process, written by one replica), the agent's experience state when asked (an off-policy agent's
replay, which a run saves by default: each process writes its learner devices' shards), each
process's actor state as its own row of per-process arrays (episode statistics; in sync mode also
every inferencer's step state, running sums and env pool snapshot, so a resumed run is
bit-identical to an uninterrupted one), and the counters and layout as JSON. Every process calls
`save` and `restore` at the same learner step.

Writes are atomic: every process writes into a temporary directory, and process 0 renames it
when all have finished (orbax's commit), so a run killed mid-write, in any process, leaves no
checkpoint that can be loaded; the last `keep` are kept.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sebulba import keys
from sebulba.loop.config import LoopConfig, uses_anakin
from sebulba.loop.inferencer import Inferencer
from sebulba.loop.learner import Learner
from sebulba.loop.metrics import MetricsWindow
from sebulba.loop.processes import allgather, own_row, per_process, process_sharding
from sebulba.loop.staging import Staging

log = logging.getLogger("sebulba")


@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    """Where a loop's `Checkpointer` writes, how often (learner steps), how many it keeps."""

    directory: str
    every_learner_steps: int = 1000  # also at the end of a run and at a clean stop
    keep: int = 3
    save_experience: bool = False  # the agent's experience state (a replay; runs: `runner.replay_in_checkpoints`)

    def __post_init__(self) -> None:
        if self.every_learner_steps < 1 or self.keep < 1:
            raise ValueError(f"every_learner_steps and keep must be >= 1, got {self.every_learner_steps}, {self.keep}")


@dataclasses.dataclass(frozen=True)
class LoopState:
    """The parts of a loop a checkpoint saves and restores, and the layout a resume must match."""

    learner: Learner
    inferencers: Sequence[Inferencer]
    staging: Staging
    window: MetricsWindow
    async_mode: bool
    layout: Mapping[str, Any]  # processes, devices, envs: JSON values

    def start_inferencers(self) -> None:
        """Reset every pool and build every step state now (the targets of a restore)."""
        for inf in self.inferencers:
            inf.start(self.learner.version, self.learner.networks)


# What a checkpoint must match to resume: each loop's layout, and the mode it was written in.
def loop_layout(config: LoopConfig) -> dict[str, Any]:
    """What a checkpoint must match to resume a Sebulba loop of this config in this job."""
    c = config
    return {"processes": jax.process_count(), "local_devices": len(jax.local_devices()),
            "actor_devices": list(c.actor_devices), "learner_devices": list(c.learner_devices),
            "inferencers_per_device": c.inferencers_per_device, "num_envs": c.num_envs, "steps_per_cycle": c.steps_per_cycle}


def anakin_layout(config: LoopConfig) -> dict[str, Any]:
    """What a checkpoint must match to resume an Anakin loop of this config in this job."""
    c = config
    return {"loop": "anakin", "processes": jax.process_count(), "learner_devices": list(c.learner_devices),
            "num_envs": c.num_envs, "steps_per_cycle": c.steps_per_cycle, "num_seeds": c.num_seeds}


def resume_layout(config: LoopConfig) -> tuple[bool, dict[str, Any]]:
    """(async mode, layout) that a checkpoint must have been written with to resume a run of
    this config, on whichever loop it runs (the Anakin loop is always synchronous)."""
    return (False, anakin_layout(config)) if uses_anakin(config) else (config.async_mode, loop_layout(config))


def anakin_items(carry: Any, with_experience: bool) -> dict[str, Any]:
    """An Anakin loop's checkpointed state from its carry (sebulba/loop/anakin_program.py's
    `Carry`): networks, optimizer state and key where a Sebulba run's are (so evaluation and
    `load_policy` read either), the rest of the carry under "anakin", and the experience state
    when asked."""
    c = carry
    state = {"networks": c.networks, "opt_state": c.opt_state, "key": c.key,
             "anakin": {"version": c.version, "step_state": c.step_state, "lanes": c.lanes,
                        "env_step": c.env_step, "running": c.running}}
    if with_experience:
        state["experience"] = c.experience
    return state


def abstract(tree: Any) -> Any:
    """What to restore learner state into: the same shapes, dtypes and shardings."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(keys.raw(x).shape, keys.raw(x).dtype, sharding=x.sharding), tree)


def process_rows(tree: Any) -> Any:
    """This process's actor state as rows of per-process global arrays."""
    return jax.tree.map(lambda x: per_process(np.asarray(keys.raw(x))), tree)


def abstract_rows(tree: Any) -> Any:
    sharding = process_sharding()
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct((jax.process_count(), *np.shape(keys.raw(x))), np.asarray(keys.raw(x)).dtype,
                                                       sharding=sharding), tree)


# Orbax cannot write an array with no elements, and an env's state may hold some (MJX's `act` of a
# model without actuator activations has shape (0,)). A checkpoint leaves them out (`_storable`:
# None, orbax's empty node) and a restore builds them back as zeros from the shapes, dtypes and
# shardings it restores into (`_rebuilt`): whatever the env, its state saves.
def _empty(x: Any) -> bool:
    return 0 in tuple(getattr(x, "shape", ()))


def _storable(tree: Any) -> Any:
    """tree with its zero-size leaves as None."""
    return jax.tree.map(lambda x: None if _empty(x) else x, tree)


def _rebuilt(restored: Any, like: Any) -> Any:
    """`restored` (a `_storable` tree read back) with the zero-size leaves of `like` (arrays or
    ShapeDtypeStructs: what it was restored into) built back as zeros."""
    def back(r: Any, x: Any) -> Any:
        if r is not None or not _empty(x):
            return r
        sharding = getattr(x, "sharding", None)
        return np.zeros(x.shape, x.dtype) if sharding is None else jnp.zeros(x.shape, x.dtype, device=sharding)

    return jax.tree.map(back, restored, like, is_leaf=lambda r: r is None)


# On disk: one directory per checkpoint, named by its learner step, holding the orbax items
# "state" (learner: networks, opt_state, key, optionally experience), "actors" (per-process rows),
# "pools" (sync mode, env snapshots) and "meta" (JSON: counters and layout). These two read it
# without a loop (`sebulba.experiment.trained`: evaluation, `load_policy`).
def complete_steps(directory: str | Path) -> list[int]:
    """The learner steps of the complete checkpoints under directory, oldest first (a checkpoint
    being written is in a temporary directory until orbax commits it)."""
    root = Path(directory)
    if not root.is_dir():
        return []
    return sorted(int(d.name) for d in root.iterdir()
                  if d.name.isdigit() and (d / "_CHECKPOINT_METADATA").exists() and (d / "state").is_dir())


def read_networks(directory: str | Path, step: int, like: Any) -> Any:
    """Only the networks of checkpoint `step`, as host arrays in the structure orbax gives back
    (e.g. NamedTuples as dicts) for networks shaped like `like` (host arrays)."""
    import orbax.checkpoint as ocp

    item = {"networks": _storable(like)}
    with ocp.CheckpointManager(Path(directory).resolve()) as manager:
        restored = manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.PyTreeRestore(item=item, partial_restore=True, restore_args=jax.tree.map(
                lambda _: ocp.RestoreArgs(restore_type=np.ndarray), item))))
    return _rebuilt(restored["state"]["networks"], like)


class Checkpointer:
    """Saves and restores a loop's state under `config.directory` (one orbax step per save,
    numbered by learner steps)."""

    def __init__(self, config: CheckpointConfig):
        import orbax.checkpoint as ocp

        self._ocp = ocp
        self.config = config
        Path(config.directory).mkdir(parents=True, exist_ok=True)
        self._manager = ocp.CheckpointManager(
            Path(config.directory).resolve(),
            options=ocp.CheckpointManagerOptions(max_to_keep=config.keep, enable_async_checkpointing=False),
        )

    # ------------------------------------------------------------------ orbax items
    def _write(self, step: int, trees: dict[str, Any], meta: dict) -> None:
        """Checkpoint `step`: each tree an orbax item (zero-size leaves left out), `meta` as JSON."""
        ocp = self._ocp
        items = {name: ocp.args.StandardSave(_storable(tree)) for name, tree in trees.items()}
        self._manager.save(step, args=ocp.args.Composite(**items, meta=ocp.args.JsonSave(meta)))
        self._manager.wait_until_finished()

    def _read(self, step: int, abstract: dict[str, Any]) -> dict[str, Any]:
        """The items of checkpoint `step` restored into the abstract trees given (`abstract`,
        `abstract_rows`), their zero-size leaves built back."""
        ocp = self._ocp
        restored = self._manager.restore(step, args=ocp.args.Composite(
            **{name: ocp.args.StandardRestore(_storable(tree)) for name, tree in abstract.items()}))
        return {name: _rebuilt(restored[name], tree) for name, tree in abstract.items()}

    # ------------------------------------------------------------------ state of a loop
    def _learner_state(self, loop: LoopState, with_experience: bool | None = None) -> dict:
        """What "state" holds; the experience state with `with_experience` (default: the config's)."""
        learner = loop.learner
        state = {"networks": learner.networks, "opt_state": learner.opt_state, "key": learner._key}
        if self.config.save_experience if with_experience is None else with_experience:
            state["experience"] = learner.experience
        return state

    @staticmethod
    def _actor_state(loop: LoopState) -> dict:
        state: dict[str, Any] = {"episodes": loop.window.state()}
        if not loop.async_mode:
            state["lanes"] = [  # one per inferencer (the name checkpoints have always had)
                {"step_state": inf.step_state, "env_step": jax.tree.map(np.asarray, inf.env_step),
                 "running": inf.running, "stacks": inf.stacks}
                for inf in loop.inferencers
            ]
        return state

    @staticmethod
    def _pool_snapshots(loop: LoopState) -> list[bytes] | None:
        """Sync mode: every inferencer's env pool, when its backend can be captured (native tasks)."""
        if loop.async_mode:
            return None
        try:
            return [inf.pool.snapshot() for inf in loop.inferencers]
        except NotImplementedError as e:
            log.info(f"checkpoint without env state ({e}): a resumed run starts fresh episodes (the actors' step "
                        "states and keys go on)")
            return None

    def save(self, loop: LoopState, env_steps: int, learner_steps: int) -> None:
        """A checkpoint at learner_steps (skipped when there is one already, or in sync mode
        before every inferencer ran a cycle: the first round). Every process calls it at the same
        learner step."""
        idle = [inf.index for inf in loop.inferencers if not inf.started]
        if not loop.async_mode and idle:  # their step states and envs do not exist yet
            log.info(f"no checkpoint at learner step {learner_steps}: inferencer(s) {idle} have not run a cycle yet")
            return
        step = learner_steps
        if step in self._manager.all_steps():
            return
        meta = {"env_steps": env_steps, "learner_steps": learner_steps, "version": loop.learner.version,
                "async_mode": loop.async_mode, "has_experience": self.config.save_experience,
                "layout": dict(loop.layout)}
        trees = {"state": keys.raw(self._learner_state(loop)), "actors": process_rows(self._actor_state(loop))}
        pools = self._pool_snapshots(loop)
        if pools is not None:  # each process's snapshots as one row of bytes, padded to the longest
            sizes = np.array([len(p) for p in pools], np.int64)
            width = int(allgather(np.array(sizes.max(), np.int64)).max())
            data = np.zeros((len(pools), width), np.uint8)
            for k, p in enumerate(pools):
                data[k, :len(p)] = np.frombuffer(p, np.uint8)
            trees["pools"] = process_rows({"sizes": sizes, "data": data})
            meta["pool_bytes"] = width
        self._write(step, trees, meta)
        log.info(f"checkpoint at learner step {step} ({env_steps:,} env steps) in {self.config.directory}")

    def save_items(self, step: int, state: dict, actors: dict, meta: dict) -> None:
        """A checkpoint at `step` of another loop's state in this format (the Anakin loop's):
        `state` (networks, opt_state, key and the loop's own device state), `actors` (per-process
        rows, `process_rows`) and `meta` (JSON). Skipped when there is one at `step` already."""
        if step in self._manager.all_steps():
            return
        self._write(step, {"state": state, "actors": actors}, meta)
        log.info(f"checkpoint at learner step {step} ({meta['env_steps']:,} env steps) in {self.config.directory}")

    def read_meta(self, step: int | None = None) -> dict:
        """Checkpoint `step`'s metadata (default: the latest complete checkpoint's)."""
        step = self._manager.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no complete checkpoint in {self.config.directory}")
        return dict(self._manager.restore(step, args=self._ocp.args.Composite(meta=self._ocp.args.JsonRestore()))["meta"])

    def restore_items(self, step: int, state_like: Any, actors_like: Any) -> tuple[dict, dict]:
        """`save_items`'s state and actor rows of checkpoint `step`, restored into the abstract
        trees given (`abstract`, `abstract_rows`)."""
        restored = self._read(step, {"state": state_like, "actors": actors_like})
        return dict(restored["state"]), dict(restored["actors"])

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def latest_meta(self) -> dict | None:
        """The latest complete checkpoint's metadata (counters, layout), or None when there is none."""
        step = self._manager.latest_step()
        if step is None:
            return None
        return dict(self._manager.restore(step, args=self._ocp.args.Composite(meta=self._ocp.args.JsonRestore()))["meta"])

    def check_layout(self, meta: dict, async_mode: bool, layout: Mapping[str, Any], step: int | None = None) -> None:
        """Raise ValueError naming what differs when a loop in `async_mode` with `layout`
        (`loop_layout`) cannot resume from the checkpoint with this metadata."""
        step = meta.get("learner_steps") if step is None else step
        if meta["async_mode"] != async_mode:
            raise ValueError(f"checkpoint {step} was written in {'async' if meta['async_mode'] else 'sync'} mode; "
                             "resume with the same mode")
        saved = meta.get("layout")
        if saved is None:
            raise ValueError(f"checkpoint {step} in {self.config.directory} was written by an older version of sebulba "
                             "(it has no layout); start a new run")
        for key, now in layout.items():
            if saved.get(key) != now:
                hint = " (relaunch with as many processes as the run had)" if key == "processes" else ""
                raise ValueError(f"checkpoint {step} was written with {key}={saved.get(key)!r}, this run has "
                                 f"{key}={now!r}: resume with the run's own layout{hint}")

    def restore(self, loop: LoopState, step: int | None = None) -> dict:
        """Load the latest complete checkpoint (or `step`) into loop; returns its metadata (the
        counters) for the loop's context. Every process calls it."""
        ocp = self._ocp
        step = self._manager.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no complete checkpoint in {self.config.directory}")
        meta = self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]
        self.check_layout(meta, loop.async_mode, loop.layout, step)
        if not loop.async_mode:
            loop.start_inferencers()  # builds step states and resets pools: the targets of the restore
        like = self._learner_state(loop, meta["has_experience"])  # the replay when it is there, saved or not now
        actors = self._actor_state(loop)
        items = {"state": abstract(like), "actors": abstract_rows(actors)}
        if "pool_bytes" in meta and not loop.async_mode:
            pools_like = {"sizes": np.zeros(len(loop.inferencers), np.int64), "data": np.zeros((len(loop.inferencers), meta["pool_bytes"]), np.uint8)}
            items["pools"] = abstract_rows(pools_like)
        restored = self._read(step, items)
        state = keys.typed_like(dict(restored["state"]), like)
        learner = loop.learner
        learner.networks, learner.opt_state, learner._key = state["networks"], state["opt_state"], state["key"]
        if "experience" in state:
            learner.experience = state["experience"]
        learner.version = meta["version"]
        loop.staging.publish(learner.version, learner.networks)
        mine = keys.typed_like(jax.tree.map(own_row, dict(restored["actors"])), actors)
        loop.window.load(mine["episodes"])
        envs_restored = "pools" in items
        for inf, saved in zip(loop.inferencers, mine.get("lanes", [])):
            inf.step_state = saved["step_state"]  # the actors' keys and carries go on
            if envs_restored:  # the envs' own stream: only where the envs go on too
                inf.env_step, inf.stacks, inf.running = saved["env_step"], saved["stacks"], tuple(saved["running"])
        if envs_restored:
            pools = jax.tree.map(own_row, dict(restored["pools"]))
            for inf, size, data in zip(loop.inferencers, pools["sizes"], pools["data"]):
                inf.pool.restore(data[:int(size)].tobytes())
        if not envs_restored and not meta["async_mode"]:  # sync mode on a backend that cannot snapshot its envs
            log.warning(f"checkpoint {step} holds no env state (this backend's envs cannot be saved): the resumed run "
                        "starts fresh episodes; the actors' step states and keys go on")
        log.info(f"resumed from checkpoint {step} ({meta['env_steps']:,} env steps)")
        return meta

    def close(self) -> None:
        self._manager.close()
