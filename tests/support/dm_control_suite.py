"""The real `dm_control.suite`, loaded on the MuJoCo installed here.

dm_control 1.0.50 (the newest) names a few flex fields of mjModel/mjData that MuJoCo 4.0 dropped
(flex_vertedge, flexvert_J, ...) in its table of array sizes, and its named indexers fail on
them when a Physics is built. `load` removes the names this MuJoCo lacks from that table first;
nothing else of dm_control is touched (its physics stepping, tasks and rewards run as shipped).
"""

from __future__ import annotations

import functools
import os
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")  # dm_control picks a GL backend on import; nothing here renders


@functools.cache
def patch_dm_control() -> None:
    """Removes the names this MuJoCo lacks from dm_control's table of array sizes (once)."""
    import mujoco
    from dm_control.mujoco.wrapper.mjbindings import sizes

    model = mujoco.MjModel.from_xml_string("<mujoco/>")
    for struct, obj in (("mjmodel", model), ("mjdata", mujoco.MjData(model))):
        for name in [n for n in sizes.array_sizes[struct] if not hasattr(obj, n)]:
            del sizes.array_sizes[struct][name]


def load(domain: str, task: str, seed: int) -> Any:
    """dm_control.suite.load(domain, task) with its task's RandomState seeded `seed`."""
    patch_dm_control()
    from dm_control import suite

    return suite.load(domain, task, task_kwargs={"random": seed})
