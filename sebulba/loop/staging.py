"""The staging area for networks: per actor device, a deque with maxlen 1 (latest wins)."""

from __future__ import annotations

import collections
from typing import Any

import jax


class Staging:
    def __init__(self, devices: list[jax.Device]):
        self._slots = {d: collections.deque(maxlen=1) for d in devices}

    def publish(self, version: int, networks: Any) -> None:
        """Offer new networks to every actor device; older unread ones are dropped."""
        for slot in self._slots.values():
            slot.append((version, networks))

    def latest(self, device: jax.Device) -> tuple[int, Any]:
        """The newest (version, networks); inferencers copy them to their device themselves."""
        return self._slots[device][-1]
