"""The task class of each DMC id (envs/mujoco/dmc/classic.py, dog.py, locomotion.py,
manipulation.py, quadruped.py, swimming.py), found by their `domain` and `task`."""

from __future__ import annotations

import functools

from envs.mujoco.dmc.ids import dmc_id


@functools.cache
def served() -> dict[str, type]:
    """The DMC ids served here and their task classes."""
    from envs.mujoco.dmc import classic, dog, locomotion, manipulation, quadruped, swimming

    classes = [getattr(m, name) for m in (classic, dog, locomotion, manipulation, quadruped, swimming) for name in dir(m)]
    tasks = [c for c in classes if isinstance(c, type) and "task" in c.__dict__]
    return {dmc_id(c.domain, c.task): c for c in tasks}
