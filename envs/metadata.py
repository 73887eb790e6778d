"""`metadata` of a pool as `gymnasium.vector.VectorEnv` defines it: the render modes the pool
offers, the render_fps of the Gymnasium env the task reproduces or runs (vector RecordVideo and
HumanRendering read it), and the auto-reset mode, Gymnasium's next-step one."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from envs.ids import renders_in_workers


def _reference_entry_point(task_id: str, backend: str) -> Any:
    """The Gymnasium env class the task reproduces or runs (its metadata has render_fps)."""
    if backend == "native":
        from envs.native.tasks import NATIVE_TASKS

        return NATIVE_TASKS[task_id].reference_entry_point
    if backend == "atari":
        from envs.atari.games import ALE_ENTRY_POINT

        return ALE_ENTRY_POINT
    spec = gym.registry.get(task_id)
    return None if spec is None else spec.entry_point


def vector_metadata(task_id: str, backend: str) -> dict[str, Any]:
    renders = backend in ("native", "atari", "mujoco") or renders_in_workers(task_id)
    metadata: dict[str, Any] = {"render_modes": ["rgb_array", "human"] if renders else []}
    entry_point = _reference_entry_point(task_id, backend)
    try:
        creator = gym.envs.registration.load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
        fps = getattr(creator, "metadata", {}).get("render_fps")
    except Exception:  # noqa: BLE001 - render_fps is informative only
        fps = None
    if fps is not None:
        metadata["render_fps"] = fps
    metadata["autoreset_mode"] = AutoresetMode.NEXT_STEP
    return metadata
