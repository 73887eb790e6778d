"""Frames of the built-in tasks, drawn by Gymnasium's own classic-control renderer (pygame).

One reference env per pool (the Gymnasium env the task reproduces, `render_mode="rgb_array"`)
is given each env's state in turn and asked for its frame, so a frame is exactly what Gymnasium
draws for that state: no second drawing code to keep in step with Gymnasium's.
"""

from __future__ import annotations

import os

import numpy as np
from gymnasium.envs.registration import load_env_creator

from envs.native.base import NativeTask

INSTALL_HINT = "render_mode='rgb_array' for the built-in tasks draws with pygame: pip install -e '.[render]' (or pip install pygame)"


def require_pygame() -> None:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        # Off-screen drawing needs no display; without this SDL complains on stderr.
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    # Frames need no sound: Gymnasium's renderer calls pygame.init(), whose audio start prints ALSA's
    # errors on a host without a sound card.
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    try:
        import pygame  # noqa: F401
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e


class NativeRenderer:
    """Draws envs of one NativeTask through its Gymnasium reference env."""

    def __init__(self, task_cls: type[NativeTask], num_envs: int):
        require_pygame()
        self._ref = load_env_creator(task_cls.reference_entry_point)(render_mode="rgb_array")
        self._ref.reset(seed=0)  # gives it every attribute its render reads (Pendulum's last_u)
        # Pendulum draws the last applied torque; Gymnasium clears it on reset (None: no arrow).
        self._last_action = np.full(num_envs, np.nan) if hasattr(self._ref, "last_u") else None

    def record(self, idx: slice | np.ndarray, action: np.ndarray | None, reset_ids: np.ndarray | None) -> None:
        """Remember the actions a step applied (the envs that reset instead have none)."""
        if self._last_action is None:
            return
        if action is not None:
            torque = np.asarray(action, np.float32).reshape(len(self._last_action[idx]), -1)[:, 0]
            self._last_action[idx] = np.clip(torque, -self._ref.max_torque, self._ref.max_torque)
        if reset_ids is not None:
            self._last_action[reset_ids] = np.nan

    def frames(self, task: NativeTask, ids: np.ndarray) -> np.ndarray:
        """(len(ids), H, W, 3) uint8 frames of the envs ids, in their current state."""
        out = []
        for i in ids.tolist():
            self._ref.state = task.get_state(i)
            if self._last_action is not None:
                u = self._last_action[i]
                self._ref.last_u = None if np.isnan(u) else np.float32(u)
            out.append(self._ref.render())
        return np.stack(out)

    def close(self) -> None:
        self._ref.close()
