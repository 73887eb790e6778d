"""How per-env data is split over the learner devices."""

from __future__ import annotations

import dataclasses

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

LEARNER_AXIS = "learner"  # the mesh axis name; pmean over it averages across learner devices


@dataclasses.dataclass(frozen=True)
class LearnerSharding:
    """The learner devices as a 1-D mesh, and the shardings an agent needs for its step state.

    `num_envs` is the number of envs of one inferencer: a leaf with that many rows along the
    env axis is per-env data.
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

    def per_env(self, tree, axis: int = 0):
        """device_put: leaves with num_envs rows along `axis` are split, the rest replicated.

        With several processes (jax.distributed), each process passes its own envs: the global
        array has num_envs x process_count rows, this process's rows on its learner devices; the
        other leaves (policy version, inferencer index) hold each process's own value."""
        if jax.process_count() > 1:
            return jax.tree.map(lambda x: self._assemble(x, axis), tree)

        def put(x):
            x = jax.numpy.asarray(x) if not isinstance(x, jax.Array) else x
            split = x.ndim > axis and x.shape[axis] == self.num_envs
            return jax.device_put(x, self.envs(axis) if split else self.replicated)

        return jax.tree.map(put, tree)

    def _assemble(self, x, axis: int) -> jax.Array:
        x = jax.numpy.asarray(x) if not isinstance(x, jax.Array) else x
        local = self.local_devices
        if x.ndim > axis and x.shape[axis] == self.num_envs:
            pieces = jax.numpy.split(x, len(local), axis=axis)
            shape = (*x.shape[:axis], self.num_envs * jax.process_count(), *x.shape[axis + 1:])
            return jax.make_array_from_single_device_arrays(
                shape, self.envs(axis), [jax.device_put(p, d) for p, d in zip(pieces, local)])
        return jax.make_array_from_single_device_arrays(x.shape, self.replicated, [jax.device_put(x, d) for d in local])


def local_copy(tree, device: jax.Device):
    """tree on one local device; a global (multi-process) replicated array gives its local copy."""
    def put(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            x = x.addressable_data(0)
        return jax.device_put(x, device)

    return jax.tree.map(put, tree)
