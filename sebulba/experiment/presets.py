"""A preset: what an entry point trains a kind of env with before the flags' overrides, its loop
values and its agent's config (`Preset`). Its keys are fields, checked where a preset is made:
a misspelled one is an error naming the right one, and a value out of its range is refused.

    CARTPOLE = Preset(total_env_steps=200_000, num_envs=8, steps_per_cycle=128, async_mode=False,
                      inferencers_per_device=1, log_every_s=0.5, agent=PPOConfig(learning_rate=2.5e-3))
    CONTROL = CARTPOLE.replace(total_env_steps=50_000)   # another preset, checked the same way
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Mapping
from typing import Any


def _naming_the_closest_field(cls: type) -> type:
    """A dataclass whose constructor (dataclasses.replace's too) refuses an unknown keyword with
    a TypeError naming the field closest to it."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = [f.name for f in dataclasses.fields(cls) if f.init]
        for key in kwargs:
            if key not in fields:
                close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}?" if close else f"its fields: {', '.join(fields)}"
                raise TypeError(f"{cls.__name__} has no field {key!r}; {hint}")
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


@_naming_the_closest_field
@dataclasses.dataclass(frozen=True, kw_only=True)
class Preset:
    """An entry point's values for a kind of env, before the flags' overrides (a flag left at its
    default None takes the preset's value).

    total_env_steps: the run's budget. num_envs: envs per inferencer. steps_per_cycle: env steps
    per env in a cycle (None: the agent's config sets it, as R2D2's cycle_length). async_mode,
    inferencers_per_device, log_every_s, stack_on_device, env_threads (None: the env backend's):
    the loop's (sebulba.loop.config.LoopConfig). env_kwargs: for envs.make, under the user's
    --env_kwargs. lr_decay: the learning rate decays linearly to 0 over the run's optimizer steps
    (sebulba.schedules.linear_decay); False: a constant one. agent: the agent's config dataclass."""

    total_env_steps: int
    num_envs: int
    steps_per_cycle: int | None = None
    async_mode: bool
    inferencers_per_device: int
    log_every_s: float
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    stack_on_device: bool = False
    env_threads: int | None = None
    lr_decay: bool = True
    agent: Any

    def __post_init__(self) -> None:
        def fail(name: str, what: str) -> None:
            raise ValueError(f"Preset: {name} must be {what}, got {getattr(self, name)!r}")

        def whole(value: Any, least: int) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and value >= least

        for name in ("total_env_steps", "num_envs", "inferencers_per_device"):
            if not whole(getattr(self, name), 1):
                fail(name, "a positive int")
        if self.steps_per_cycle is not None and not whole(self.steps_per_cycle, 1):
            fail("steps_per_cycle", "a positive int or None")
        if self.env_threads is not None and not whole(self.env_threads, 0):
            fail("env_threads", "an int >= 0 or None")
        for name in ("async_mode", "stack_on_device", "lr_decay"):
            if not isinstance(getattr(self, name), bool):
                fail(name, "a bool")
        every = self.log_every_s
        if not isinstance(every, (int, float)) or isinstance(every, bool) or every <= 0:
            fail("log_every_s", "a number > 0")
        if not isinstance(self.env_kwargs, Mapping):
            fail("env_kwargs", "a mapping of envs.make's keyword arguments")
        if not dataclasses.is_dataclass(self.agent) or isinstance(self.agent, type):
            fail("agent", "an agent's config (a dataclass instance)")
        object.__setattr__(self, "env_kwargs", dict(self.env_kwargs))

    def replace(self, **changes: Any) -> Preset:
        """This preset with `changes` (checked as a new preset's: a misspelled key names the field)."""
        return dataclasses.replace(self, **changes)

    def sets(self, field: str) -> bool:
        """Whether the preset gives the loop value `field` itself, other than Preset's default
        (what --help lists as the presets' values)."""
        f = next((f for f in dataclasses.fields(self) if f.name == field and f.name != "agent"), None)
        if f is None:
            return False
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        return default is dataclasses.MISSING or getattr(self, field) != default
