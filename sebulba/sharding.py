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

    def per_env(self, tree, axis: int = 0):
        """device_put: leaves with num_envs rows along `axis` are split, the rest replicated."""
        def put(x):
            x = jax.numpy.asarray(x) if not isinstance(x, jax.Array) else x
            split = x.ndim > axis and x.shape[axis] == self.num_envs
            return jax.device_put(x, self.envs(axis) if split else self.replicated)

        return jax.tree.map(put, tree)
