"""MiniGrid's and BabyAI's `mission` as EnvPool serves it: the string's UTF-8 bytes in a fixed
uint8 array, zero-padded (envpool/minigrid: `obs:mission`, `mission_bytes` of them, 96 for the
MiniGrid ids and 512 for BabyAI's; a longer mission is cut to mission_bytes - 1 bytes, so a row
always ends in a zero, here at a character's boundary). `decode_mission` turns rows back into strings, as EnvPool's does.

Applied by the process backend to every Dict observation whose leaf is the minigrid package's
MissionSpace (the pool cannot batch strings); `drop_observation_keys=["mission"]` still leaves
it out instead.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

MISSION_KWARG = "mission_bytes"
MINIGRID_BYTES, BABYAI_BYTES = 96, 512  # EnvPool's defaults (minigrid/impl/utils.h, minigrid/registration.py)


def default_mission_bytes(task_id: str) -> int:
    return BABYAI_BYTES if task_id.startswith("BabyAI-") else MINIGRID_BYTES


def is_mission_space(space: gym.spaces.Space) -> bool:
    """The minigrid package's MissionSpace (BabyAI's subclasses it): a string leaf."""
    return any(c.__name__ == "MissionSpace" and c.__module__.startswith("minigrid.") for c in type(space).__mro__)


def mission_keys(space: gym.spaces.Space) -> tuple[str, ...]:
    """The top-level keys of a Dict observation that are missions."""
    if not isinstance(space, gym.spaces.Dict):
        return ()
    return tuple(k for k, s in space.spaces.items() if is_mission_space(s))


def encode_mission(mission: str, nbytes: int) -> np.ndarray:
    """[nbytes] uint8: the UTF-8 bytes of mission (at most nbytes - 1 of them, cut at a character's
    boundary), then zeros."""
    data = mission.encode("utf-8")[: nbytes - 1].decode("utf-8", errors="ignore").encode("utf-8")
    out = np.zeros(nbytes, np.uint8)
    out[: len(data)] = np.frombuffer(data, np.uint8)
    return out


def decode_mission(mission: Any) -> str | np.ndarray:
    """A row of mission bytes back to its string (up to the first zero); a batch [..., n] to an
    object array of strings (EnvPool's envpool.minigrid.decode_mission)."""
    arr = np.asarray(mission, np.uint8)
    if arr.ndim == 1:
        end = np.flatnonzero(arr == 0)
        return arr[: int(end[0]) if end.size else arr.shape[0]].tobytes().decode("utf-8", errors="replace")
    rows = arr.reshape(-1, arr.shape[-1])
    return np.asarray([decode_mission(row) for row in rows], dtype=object).reshape(arr.shape[:-1])


class MissionAsBytes(gym.ObservationWrapper):
    """Each mission key of a Dict observation as [nbytes] uint8 (encode_mission)."""

    def __init__(self, env: gym.Env, keys: tuple[str, ...], nbytes: int):
        super().__init__(env)
        self.keys, self.nbytes = keys, nbytes
        spaces = dict(env.observation_space.spaces)
        for k in keys:
            spaces[k] = gym.spaces.Box(0, 255, (nbytes,), np.uint8)
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: dict) -> dict:
        return {k: encode_mission(v, self.nbytes) if k in self.keys else v for k, v in observation.items()}


def check_mission_bytes(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
        raise ValueError(f"{MISSION_KWARG} must be an int >= 2 (the mission's bytes and a closing zero), got {value!r}")
    return int(value)
