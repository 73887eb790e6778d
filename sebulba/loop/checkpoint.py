"""Checkpoints of a GymnasiumLoop with orbax: learner state, counters, RNG keys and recent
episode statistics; in sync mode also every inferencer's step states and env pools, so a resumed
run is bit-identical to an uninterrupted one. Replay (the agent's experience state) is saved when
asked, since it can be large.

Writes are atomic (orbax writes a temporary directory and renames it when complete), so a run
killed mid-write leaves no checkpoint that can be loaded; the last `keep` are kept.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

if TYPE_CHECKING:
    from sebulba.loop.loop import GymnasiumLoop
    from sebulba.loop.middleware import LoopContext, MetricsWindow

log = logging.getLogger("sebulba")


@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    directory: str
    every_learner_steps: int = 1000  # also at the end of a run and at a clean stop
    keep: int = 3
    save_experience: bool = False  # the agent's experience state (R2D2: its replay)

    def __post_init__(self) -> None:
        if self.every_learner_steps < 1 or self.keep < 1:
            raise ValueError(f"every_learner_steps and keep must be >= 1, got {self.every_learner_steps}, {self.keep}")


def _is_key(x: Any) -> bool:
    return isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _savable(tree: Any) -> Any:
    """Typed PRNG keys as their raw key data (orbax stores plain arrays)."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def _abstract(tree: Any) -> Any:
    """What to restore into: same shapes, dtypes and shardings as `tree` (numpy stays numpy)."""
    def spec(x):
        if _is_key(x):  # restored on the host: the key goes back uncommitted, as it was made
            return np.asarray(jax.random.key_data(x))
        if isinstance(x, jax.Array):
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
        return np.asarray(x)

    return jax.tree.map(spec, tree)


def _unsaved(restored: Any, like: Any) -> Any:
    """Restored arrays back into `like`'s leaf types (raw key data back into typed keys)."""
    return jax.tree.map(lambda r, x: jax.random.wrap_key_data(r, impl=jax.random.key_impl(x)) if _is_key(x) else r,
                        restored, like)


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

    # ------------------------------------------------------------------ state of a loop
    def _state(self, loop: GymnasiumLoop) -> dict:
        learner = loop.learner
        state = {
            "networks": learner.networks,
            "opt_state": learner.opt_state,
            "key": learner._key,
        }
        if self.config.save_experience:
            state["experience"] = learner.experience
        if not loop.config.async_mode:
            state["lanes"] = [
                {"step_state": lane.step_state, "env_step": jax.tree.map(np.asarray, lane.env_step), "running": lane.running}
                for inf in loop.inferencers for lane in inf.lanes
            ]
        return state

    def _meta(self, loop: GymnasiumLoop, ctx: LoopContext, window: MetricsWindow | None) -> dict:
        meta = {
            "env_steps": ctx.env_steps,
            "learner_steps": ctx.learner_steps,
            "version": loop.learner.version,
            "async_mode": loop.config.async_mode,
            "has_experience": self.config.save_experience,
        }
        if window is not None:
            meta["episodes"] = window.episodes
            meta["returns"] = list(window.returns)
            meta["lengths"] = list(window.lengths)
        return meta

    def _pool_snapshots(self, loop: GymnasiumLoop) -> dict | None:
        """Sync mode: every lane's env pool, when its backend can be captured (native tasks)."""
        if loop.config.async_mode:
            return None
        try:
            return {f"{i}_{k}": np.frombuffer(lane.pool.snapshot(), np.uint8)
                    for i, inf in enumerate(loop.inferencers) for k, lane in enumerate(inf.lanes)}
        except NotImplementedError as e:
            log.warning(f"checkpoint without env state ({e}): a resumed run starts fresh episodes")
            return None

    def save(self, loop: GymnasiumLoop, ctx: LoopContext, window: MetricsWindow | None = None) -> None:
        ocp = self._ocp
        if not loop.config.async_mode and not all(inf.started for inf in loop.inferencers):
            return  # nothing has run yet
        step = ctx.learner_steps
        if step in self._manager.all_steps():
            return
        items = {"state": ocp.args.StandardSave(_savable(self._state(loop))), "meta": ocp.args.JsonSave(self._meta(loop, ctx, window))}
        pools = self._pool_snapshots(loop)
        if pools is not None:
            items["pools"] = ocp.args.StandardSave(pools)
        self._manager.save(step, args=ocp.args.Composite(**items))
        self._manager.wait_until_finished()
        log.info(f"checkpoint at learner step {step} ({ctx.env_steps:,} env steps) in {self.config.directory}")

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def latest_meta(self) -> dict | None:
        """The latest complete checkpoint's metadata (counters), or None when there is none."""
        step = self._manager.latest_step()
        if step is None:
            return None
        return dict(self._manager.restore(step, args=self._ocp.args.Composite(meta=self._ocp.args.JsonRestore()))["meta"])

    def restore(self, loop: GymnasiumLoop, step: int | None = None) -> dict:
        """Load the latest complete checkpoint (or `step`) into loop; returns its metadata
        (counters and recent episode statistics) for the loop's context."""
        ocp = self._ocp
        step = self._manager.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no complete checkpoint in {self.config.directory}")
        meta = self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]
        if meta["async_mode"] != loop.config.async_mode:
            raise ValueError(f"checkpoint {step} was written in {'async' if meta['async_mode'] else 'sync'} mode; "
                             "resume with the same mode")
        if not loop.config.async_mode:
            loop.start_inferencers()  # builds step states and resets pools: the targets of the restore
        like = self._state(loop)
        if not meta["has_experience"]:
            like.pop("experience", None)
        items = {"state": ocp.args.StandardRestore(_abstract(like))}
        has_pools = (Path(self.config.directory) / str(step) / "pools").exists()
        if has_pools and not loop.config.async_mode:
            items["pools"] = ocp.args.StandardRestore()
        restored = self._manager.restore(step, args=ocp.args.Composite(**items))
        state = _unsaved(restored["state"], like)
        learner = loop.learner
        learner.networks, learner.opt_state, learner._key = state["networks"], state["opt_state"], learner.place_key(state["key"])
        if "experience" in state:
            learner.experience = state["experience"]
        learner.version = meta["version"]
        loop.staging.publish(learner.version, learner.networks)
        if "lanes" in state:
            lanes = [lane for inf in loop.inferencers for lane in inf.lanes]
            for lane, saved in zip(lanes, state["lanes"]):
                lane.step_state, lane.env_step, lane.running = saved["step_state"], saved["env_step"], tuple(saved["running"])
        if "pools" in items:
            for i, inf in enumerate(loop.inferencers):
                for k, lane in enumerate(inf.lanes):
                    lane.pool.restore(np.asarray(restored["pools"][f"{i}_{k}"]).tobytes())
        log.info(f"resumed from checkpoint {step} ({meta['env_steps']:,} env steps)")
        return meta

    def close(self) -> None:
        self._manager.close()
