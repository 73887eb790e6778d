"""LoopConfig: how a loop (GymnasiumLoop or AnakinLoop) is laid out over devices and envs, and which
loop a config runs on (`uses_anakin`, `check_env`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from envs.jax.registry import has_stateless_step, is_jax_id


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    """Devices are indices into `jax.local_devices()` (with jax.distributed, every process uses the
    same layout); actor and learner devices may overlap."""

    env_id: str = "CartPole-v1"
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    num_envs: int = 16  # per inferencer; divisible by the number of learner devices
    steps_per_cycle: int = 20
    actor_devices: tuple[int, ...] = (0,)
    learner_devices: tuple[int, ...] = (0,)
    inferencers_per_device: int = 2  # double buffering: one steps envs while the other infers
    queue_size: int = 2  # bounded trajectory queue: a slow learner makes actors wait
    async_mode: bool = True  # False: one cycle then one update, in order, bit-reproducible
    # Atari: pools send single frames and each inferencer stacks them on its actor device
    # (agents see the same stacked observations; 1/stack_num of the bytes cross to the device).
    stack_on_device: bool = False
    seed: int = 0
    log_every_s: float = 5.0
    # "auto": the Anakin loop (sebulba/loop/anakin.py) for a JAX-native env id (SUITE/ID), else
    # the Sebulba loop; "sebulba" or "anakin" picks one.
    loop: str = "auto"
    num_seeds: int = 1  # the Anakin loop: independent replicas (seeds seed .. seed + num_seeds - 1) in one program

    def __post_init__(self) -> None:
        for name in ("num_envs", "steps_per_cycle", "inferencers_per_device", "queue_size", "num_seeds"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")
        for name in ("actor_devices", "learner_devices"):
            devices = tuple(getattr(self, name))
            object.__setattr__(self, name, devices)
            if not devices or any(not isinstance(d, int) or d < 0 for d in devices) or len(set(devices)) != len(devices):
                raise ValueError(f"{name} must be a non-empty tuple of distinct device indices, got {devices!r}")
        if self.num_envs % len(self.learner_devices):
            raise ValueError(
                f"num_envs={self.num_envs} must be divisible by the {len(self.learner_devices)} learner devices "
                "(each learner device takes an equal share of every trajectory)"
            )
        if not isinstance(self.stack_on_device, bool):
            raise ValueError(f"stack_on_device must be a bool, got {self.stack_on_device!r}")
        if self.loop not in ("auto", "sebulba", "anakin"):
            raise ValueError(f"loop must be 'auto', 'sebulba' or 'anakin', got {self.loop!r}")
        if self.log_every_s <= 0:
            raise ValueError(f"log_every_s must be > 0, got {self.log_every_s}")
        object.__setattr__(self, "env_kwargs", dict(self.env_kwargs))

    @property
    def num_inferencers(self) -> int:
        return len(self.actor_devices) * self.inferencers_per_device


def uses_anakin(config: LoopConfig) -> bool:
    """Whether a run of this config is an Anakin run: `loop="anakin"`, or `"auto"` with a
    JAX-native env id (`SUITE/ID`)."""
    return config.loop == "anakin" or (config.loop == "auto" and is_jax_id(config.env_id))


def check_env(config: LoopConfig) -> None:
    """ValueError when the config's env cannot run in the Anakin loop it asks for: neither a
    JAX-native env (`SUITE/ID`) nor a built-in task with a compiled stateless step. Nothing is
    built: the entry points refuse such a run before anything else."""
    if uses_anakin(config) and not is_jax_id(config.env_id) and not has_stateless_step(config.env_id):
        raise ValueError(f"the Anakin loop runs JAX-native envs (SUITE/ID, e.g. gymnax/CartPole-v1) and the built-in "
                         f"classic-control tasks; {config.env_id!r} has no compiled stateless step yet: train it with "
                         "--loop sebulba")
