"""How per-env data is split over the learner devices: each leaf along its declared env axis
(`LearnerSharding.put`; a trajectory's are `TRAJECTORY_ENV_AXES`, a step state's are those that
follow num_envs in `Agent.init_step_state`, `env_axes_of`), the rest replicated."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from sebulba.types import Trajectory

LEARNER_AXIS = "learner"  # the mesh axis name; pmean over it averages across learner devices


@dataclasses.dataclass(frozen=True)
class LearnerSharding:
    """The learner devices as a 1-D mesh, and the shardings an agent needs for its step state.

    `num_envs` is the number of envs of one inferencer: what a per-env leaf has along its env axis.
    """

    mesh: Mesh
    num_envs: int

    @staticmethod
    def create(devices: list[jax.Device], num_envs: int) -> LearnerSharding:
        if num_envs % len(devices):
            raise ValueError(
                f"num_envs={num_envs} per inferencer must be divisible by the {len(devices)} learner devices"
            )
        return LearnerSharding(Mesh(devices, (LEARNER_AXIS,)), num_envs)

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    def envs(self, axis: int = 0) -> NamedSharding:
        """Split along `axis` (the env axis) over the learner devices."""
        return NamedSharding(self.mesh, PartitionSpec(*([None] * axis), LEARNER_AXIS))

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec())

    @property
    def local_devices(self) -> list[jax.Device]:
        """This process's learner devices, in mesh order."""
        return [d for d in self.mesh.devices.flat if d.process_index == jax.process_index()]

    def put(self, tree: Any, env_axes: Any) -> Any:
        """device_put: each leaf split over the learner devices along its env axis, or replicated
        where the axis is -1. `env_axes` is a tree of ints with tree's structure, or a prefix of
        it (an int for a whole subtree): what is per-env data is declared, never guessed.

        With several processes (jax.distributed), each process passes its own envs: a split
        global array has num_envs x process_count rows along its env axis, this process's rows on
        its learner devices; a replicated leaf (policy version, inferencer index) holds each
        process's own value."""
        axes = jax.tree.map(lambda axis, subtree: jax.tree.map(lambda _: axis, subtree), env_axes, tree)
        if jax.process_count() > 1:
            return jax.tree.map(self._put_leaf, tree, axes)
        # One process: every leaf in one batched device_put (one dispatch a call, not one a leaf:
        # the sync loop puts a trajectory and two step states every cycle).
        leaves, treedef = jax.tree.flatten(tree)
        leaf_axes = treedef.flatten_up_to(axes)
        placed = [self._checked(x, axis) for x, axis in zip(leaves, leaf_axes)]
        shardings = {axis: self.envs(axis) if axis >= 0 else self.replicated for axis in set(leaf_axes)}
        return treedef.unflatten(jax.device_put(placed, [shardings[axis] for axis in leaf_axes]))

    def _checked(self, x: Any, axis: int) -> Any:
        """x as an array (host arrays stay on the host until put), refused when a per-env leaf
        does not have the inferencer's envs along its axis."""
        if not isinstance(x, (jax.Array, np.ndarray)):
            x = jax.numpy.asarray(x)
        if axis >= 0 and x.shape[axis] != self.num_envs:
            raise ValueError(f"a per-env leaf of shape {x.shape} has {x.shape[axis]} envs along axis {axis}, "
                             f"not the inferencer's {self.num_envs}")
        return x

    def trajectory(self, traj: Trajectory) -> Trajectory:
        """A trajectory placed as the learner takes it: per-env leaves split along axis 1."""
        return self.put(traj, TRAJECTORY_ENV_AXES)

    def _put_leaf(self, x: Any, axis: int) -> jax.Array:
        """One leaf of a multi-process job: this process's rows on its learner devices."""
        x = self._checked(jax.numpy.asarray(x) if not isinstance(x, jax.Array) else x, axis)
        local = self.local_devices
        if axis >= 0:
            pieces = jax.numpy.split(x, len(local), axis=axis)
            shape = (*x.shape[:axis], self.num_envs * jax.process_count(), *x.shape[axis + 1:])
            return jax.make_array_from_single_device_arrays(
                shape, self.envs(axis), [jax.device_put(p, d) for p, d in zip(pieces, local)])
        return jax.make_array_from_single_device_arrays(x.shape, self.replicated, [jax.device_put(x, d) for d in local])


# The env axis of each field of a Trajectory (-1: not per env).
TRAJECTORY_ENV_AXES = Trajectory(env_step=1, action=1, extras=1, episode_return=1, episode_length=1, policy_version=-1,
                                 actor=-1, obs_history=1)


def env_axes_of(make: Callable[..., Any], num_envs: int, *args: Any) -> Any:
    """Per leaf of `make(num_envs, *args)`, its env axis: the first dim whose size follows the
    number of envs (it differs with num_envs + 1), or -1 for a leaf whose shape does not depend
    on it. `make` is only traced (`jax.eval_shape`; args may be abstract), never run."""
    a, b = (jax.eval_shape(lambda *xs, n=n: make(n, *xs), *args) for n in (num_envs, num_envs + 1))

    def axis(x: jax.ShapeDtypeStruct, y: jax.ShapeDtypeStruct) -> int:
        if len(x.shape) != len(y.shape):
            raise ValueError(f"a leaf has rank {len(x.shape)} for {num_envs} envs and {len(y.shape)} for "
                             f"{num_envs + 1}: its env axis cannot be told")
        return next((i for i, (m, n) in enumerate(zip(x.shape, y.shape)) if m != n), -1)

    return jax.tree.map(axis, a, b)


def local_copy(tree, device: jax.Device):
    """tree on one local device; a global (multi-process) replicated array gives its local copy."""
    leaves, treedef = jax.tree.flatten(tree)
    local = [x.addressable_data(0) if isinstance(x, jax.Array) and not x.is_fully_addressable else x for x in leaves]
    return treedef.unflatten(jax.device_put(local, device))  # one batched put, not one a leaf
