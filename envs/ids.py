"""What a task id names, before any backend is imported: a Gymnasium id's spec (`find_spec`, with
the `module:EnvId` form and the packages that register ids on import), a PettingZoo id, and
whether a worker-process task renders in its workers. The registry (`envs/registry.py`) and the
backends both read these; none of them is imported here."""

from __future__ import annotations

import importlib
import importlib.util
import warnings

import gymnasium as gym

from envs.atari.games import ATARI_PLAYER_TASKS
from envs.toy_text import SERVED_AS

# PettingZoo envs in worker processes: pettingzoo/<module>/<env> (envs/process/pettingzoo_task.py).
PETTINGZOO_PREFIX = "pettingzoo/"


def is_pettingzoo_id(task_id: str) -> bool:
    return task_id.startswith(PETTINGZOO_PREFIX)


def renders_in_workers(task_id: str) -> bool:
    """Whether a worker-process task's pool renders (its envs draw frames in their workers):
    PettingZoo's envs and the multi-player Atari games do; Gymnasium's ids do not (a video of one
    makes the env in the evaluating process, sebulba/experiment/video.py)."""
    return is_pettingzoo_id(task_id) or task_id in ATARI_PLAYER_TASKS


# Packages that register their Gymnasium ids when imported: tried, when installed, for an id that
# is not registered yet (ale_py: ALE/Pong-v5, ...; minigrid: MiniGrid-Empty-5x5-v0, ...; popgym:
# popgym-RepeatPreviousEasy-v0, ..., POPGym's partially observed tasks).
REGISTERING_PACKAGES = ("ale_py", "minigrid", "gymnasium_robotics", "miniworld", "highway_env", "popgym")
_imported: set[str] = set()


def import_registering_packages() -> None:
    """Imports each installed package of REGISTERING_PACKAGES once (a broken one is skipped)."""
    for name in REGISTERING_PACKAGES:
        if name in _imported:
            continue
        _imported.add(name)
        if importlib.util.find_spec(name) is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a broken optional package must not break other ids
                continue


def _import_id_module(task_id: str) -> str:
    """Gymnasium's `module:EnvId` form: imports module (which registers EnvId), returns EnvId."""
    module, _, name = task_id.partition(":")
    if not module or not name or ":" in name:
        raise ValueError(f"task id {task_id!r}: the module form is 'module:EnvId' (as gymnasium.make takes it)")
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"task id {task_id!r}: module {module!r} cannot be imported ({e})") from e
    return name


def find_spec(task_id: str) -> gym.envs.registration.EnvSpec | None:
    """The Gymnasium spec of task_id (`EnvId` or `module:EnvId`), importing the packages that
    register ids on import if needed; None when no such id is registered. An id the pool serves
    as EnvPool does (envs.toy_text.SERVED_AS: Blackjack-v1) gets that spec."""
    if task_id in SERVED_AS:
        return SERVED_AS[task_id]
    if ":" in task_id:
        name = _import_id_module(task_id)
        if name not in gym.registry:
            raise ValueError(f"task id {task_id!r}: importing {task_id.partition(':')[0]!r} registered no id {name!r}")
        return gym.registry[name]
    if task_id not in gym.registry:
        import_registering_packages()
    return gym.registry.get(task_id)
