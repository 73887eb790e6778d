"""Which backend serves a task id: built-in native tasks first, then any Gymnasium id."""

from __future__ import annotations

import difflib
from typing import Any

import gymnasium as gym

from envs.atari.games import ATARI_TASKS
from envs.native.base import NativeTask
from envs.native.tasks import NATIVE_TASKS


def gymnasium_ids() -> list[str]:
    return sorted(gym.registry.keys())


def ale_available() -> bool:
    try:
        import ale_py  # noqa: F401
    except ImportError:
        return False
    return True


def list_all_envs() -> list[str]:
    """Every task id `make` accepts: the built-in tasks, the Atari games (with ale-py installed),
    then every registered Gymnasium id."""
    native = sorted(NATIVE_TASKS)
    atari = sorted(ATARI_TASKS) if ale_available() else []
    return native + atari + [t for t in gymnasium_ids() if t not in NATIVE_TASKS]


def _unknown(task_id: str, hint: str = "") -> ValueError:
    close = difflib.get_close_matches(task_id, list_all_envs(), n=5, cutoff=0.6)
    suggestion = f"; did you mean {close}?" if close else ""
    return ValueError(f"unknown task id {task_id!r}{hint}{suggestion} (see envs.list_all_envs())")


def resolve(task_id: Any, backend: str | None) -> tuple[str, type[NativeTask] | None]:
    """Returns (backend name, native task class or None for the process and Atari backends)."""
    if not isinstance(task_id, str):
        raise ValueError(f"task_id must be a str, got {task_id!r}")
    if backend not in (None, "native", "process", "atari"):
        raise ValueError(f"backend must be 'native', 'process', 'atari' or None (automatic), got {backend!r}")
    if task_id in ATARI_TASKS:
        if backend not in (None, "atari"):
            raise ValueError(f"{task_id!r} is an Atari task: it runs on backend='atari' (ALE's vector env) only")
        return "atari", None
    if backend == "atari":
        raise _unknown(task_id, " for backend='atari' (Atari ids look like 'Pong-v5')")
    native = NATIVE_TASKS.get(task_id)
    if backend == "native":
        if native is None:
            raise _unknown(task_id, f" for backend='native' (built-in tasks: {sorted(NATIVE_TASKS)})")
        return "native", native
    if native is not None and backend is None:
        return "native", native
    if native is not None and task_id not in gym.registry:
        raise ValueError(f"task {task_id!r} is built in only (it has no Gymnasium id), so backend='process' cannot run it")
    if task_id in gym.registry:
        return "process", None
    raise _unknown(task_id)
