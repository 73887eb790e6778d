"""Running statistics for observation normalisation and reward scaling (as CleanRL's and SB3's
`NormalizeObservation` / `NormalizeReward` keep them), as pure functions on a small pytree.

An agent keeps them in its networks (so they are published to the actors with the weights and
saved in checkpoints), updates them in `Agent.begin_update` from the cycle's data with the counts
and sums summed over the learner devices (`axis_name`), so every device holds the same values,
and leaves them out of the optimizer (`frozen_outside`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

Array = jax.Array


class RunningMeanStd(NamedTuple):
    """Mean and variance of everything seen so far, per feature (shape of one sample)."""

    mean: Array
    var: Array
    count: Array  # float32 scalar; starts at a tiny epsilon, as SB3's, so the first update dominates


def _float_boxes(space: Any) -> bool:
    if isinstance(space, gym.spaces.Dict):
        return all(_float_boxes(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return all(_float_boxes(s) for s in space.spaces)
    return isinstance(space, gym.spaces.Box) and space.dtype != "uint8"


def check_observations(space: Any, agent: str) -> None:
    """A ValueError, in one line, unless `space` is a float (non-uint8) Box, or a Dict or Tuple of
    them (dm_control's observations): the observations a running normalisation takes."""
    if not _float_boxes(space):
        raise ValueError(f"{agent}'s normalize_observations takes vector (float Box) observations, or a Dict or "
                         f"Tuple of them, not {space}")


def init(shape: tuple[int, ...]) -> RunningMeanStd:
    return RunningMeanStd(jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32), jnp.float32(1e-4))


def init_observations(space: Any) -> Any:
    """Statistics for observations of `space`: one RunningMeanStd, or one per leaf of a Dict/Tuple
    (each key normalised on its own, as a flattened vector's features are)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: init_observations(s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(init_observations(s) for s in space.spaces)
    return init(space.shape)


def _is_stats(x: Any) -> bool:
    return isinstance(x, RunningMeanStd)


def update(stats: Any, batch: Any, axis_name: str | None = None) -> Any:
    """Stats with `batch` [..., *shape] folded in (Chan et al.'s parallel update); with `axis_name`,
    the batch is the union of every device's along that mapped axis. A tree of stats (a Dict
    observation's) takes the batch's matching tree."""
    if not _is_stats(stats):
        return jax.tree.map(lambda s, b: update(s, b, axis_name), stats, batch, is_leaf=_is_stats)
    x = batch.reshape(-1, *stats.mean.shape).astype(jnp.float32)
    n = jnp.float32(x.shape[0])
    total, sq = jnp.sum(x, 0), None
    if axis_name is not None:
        n, total = jax.lax.psum((n, total), axis_name)
    mean = total / n
    sq = jnp.sum(jnp.square(x - mean), 0)
    if axis_name is not None:
        sq = jax.lax.psum(sq, axis_name)
    delta = mean - stats.mean
    count = stats.count + n
    new_mean = stats.mean + delta * n / count
    m2 = stats.var * stats.count + sq + jnp.square(delta) * stats.count * n / count
    return RunningMeanStd(new_mean, m2 / count, count)


def normalize(stats: Any, x: Any, clip: float = 10.0, eps: float = 1e-8) -> Any:
    """(x - mean) / sqrt(var + eps), clipped to [-clip, clip], as float32 (per leaf of a tree)."""
    if not _is_stats(stats):
        return jax.tree.map(lambda s, v: normalize(s, v, clip, eps), stats, x, is_leaf=_is_stats)
    z = (x.astype(jnp.float32) - stats.mean) / jnp.sqrt(stats.var + eps)
    return jnp.clip(z, -clip, clip)


def scale(stats: RunningMeanStd, x: Array, clip: float = 10.0, eps: float = 1e-8) -> Array:
    """x / sqrt(var + eps), clipped (reward scaling by the spread of the discounted return)."""
    return jnp.clip(x.astype(jnp.float32) / jnp.sqrt(stats.var + eps), -clip, clip)


def frozen_outside(tx: optax.GradientTransformation, trainable: str = "params") -> optax.GradientTransformation:
    """`tx` on networks[trainable] of a dict of networks; every other entry (statistics) gets no
    update."""
    def labels(networks: dict[str, Any]) -> dict[str, Any]:
        return {k: jax.tree.map(lambda _, k=k: "train" if k == trainable else "frozen", v) for k, v in networks.items()}

    return optax.multi_transform({"train": tx, "frozen": optax.set_to_zero()}, labels)
