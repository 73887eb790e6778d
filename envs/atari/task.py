"""Atari tasks (`<Game>-v5`): EnvPool's Atari options, validated, and the pool's spaces."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import gymnasium as gym
import numpy as np

from envs.atari.games import ATARI_TASKS, check_rom
from envs.config import INT32_MAX, PoolConfig, check_seed_range

INSTALL_HINT = "Atari tasks need ale-py: pip install -e '.[atari]' (or pip install ale-py==0.12.1)"

# EnvPool's Atari options and defaults (reward_clip and episodic_life off, no sticky actions).
ATARI_KWARGS: dict[str, Any] = {
    "img_height": 84,
    "img_width": 84,
    "stack_num": 4,
    "gray_scale": True,
    "frame_skip": 4,
    "noop_max": 30,
    "episodic_life": False,
    "reward_clip": False,
    "repeat_action_probability": 0.0,
    "use_fire_reset": True,
    "full_action_space": False,
    "mode": -1,  # ALE game mode; -1 (EnvPool's default) or None: the ROM's default (the first available mode)
    "difficulty": -1,  # ALE difficulty switch; -1 or None: the ROM's default (0)
}
DEFAULT_MAX_EPISODE_STEPS = 27_000  # agent steps: 108,000 frames at frame_skip 4
# Info beyond env_id and elapsed_step, from either Atari backend: lives, the raw (unclipped) reward,
# and EnvPool's `terminated`: 1 where the game is over (with episodic_life, a life loss ends an
# episode but not the game; CleanRL's EnvPool scripts read it to end their episode returns).
ATARI_INFO = {"lives": np.dtype(np.int32), "reward": np.dtype(np.float32), "terminated": np.dtype(np.int32)}


def game_over(terminated: Any, lives: Any, before: Any, episodic_life: bool) -> Any:
    """EnvPool's info["terminated"] from a step's termination: the game is over unless the step
    ended on a life loss that leaves lives (`0 < lives < before`, the rule by which episodic_life
    ends an episode; numpy or jnp arrays)."""
    if not episodic_life:
        return terminated.astype(np.int32)
    return (terminated & ~((lives > 0) & (lives < before))).astype(np.int32)
def channels_first(obs: np.ndarray) -> np.ndarray:
    """ALE's RGB stacks (N, stack, H, W, 3) as EnvPool's channel-first (N, 3 * stack, H, W)."""
    n, stack, h, w, c = obs.shape
    return np.ascontiguousarray(obs.transpose(0, 1, 4, 2, 3)).reshape(n, stack * c, h, w)


# ALE's vector reset takes one C int seed per env (a larger one is a TypeError from its bindings)
# and reads -1 as "keep the current seed": env seeds are in [0, 2**31 - 1].
ALE_MAX_SEED = INT32_MAX


def require_ale() -> Any:
    try:
        import ale_py
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return ale_py


@dataclasses.dataclass(frozen=True)
class AtariTask:
    config: PoolConfig
    rom: str
    observation_space: gym.spaces.Box
    action_space: gym.spaces.Discrete
    backend: str = "vector"  # "vector": ALE's vector env; "single": one ALEInterface per env (envs/atari/single.py)

    def option(self, name: str) -> Any:
        return self.config.task_kwargs[name]


def check_options(task_id: str, o: dict[str, Any]) -> None:
    for name in ("img_height", "img_width", "stack_num", "frame_skip"):
        v = o[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{task_id}: {name} must be an int >= 1, got {v!r}")
    v = o["noop_max"]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise ValueError(f"{task_id}: noop_max must be an int >= 0, got {v!r}")
    for name in ("gray_scale", "episodic_life", "reward_clip", "use_fire_reset", "full_action_space"):
        if not isinstance(o[name], (bool, np.bool_)):
            raise ValueError(f"{task_id}: {name} must be a bool, got {o[name]!r}")
    p = o["repeat_action_probability"]
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{task_id}: repeat_action_probability must be in [0, 1], got {p!r}")


def check_frame_limit(config: PoolConfig, frame_skip: int) -> None:
    """ALE takes its frame limit, max_episode_steps * frame_skip, as a C int."""
    frames = config.max_episode_steps * frame_skip
    if frames > INT32_MAX:
        raise ValueError(
            f"{config.task_id}: max_episode_steps * frame_skip = {frames} frames exceeds ALE's limit of "
            f"{INT32_MAX} (an int32); max_episode_steps must be at most {INT32_MAX // frame_skip} here"
        )


@functools.cache
def game_variants(rom: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ROM's available (modes, difficulties), read from ALE once per ROM."""
    check_rom(rom, rom)
    ale_py = require_ale()
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    ale = ale_py.ALEInterface()
    ale.loadROM(ale_py.roms.get_rom_path(rom))
    return tuple(ale.getAvailableModes()), tuple(ale.getAvailableDifficulties())


def rom_default(value: Any) -> bool:
    """Whether a mode or difficulty option asks for the ROM's default: -1 (EnvPool's) or None."""
    return value is None or (not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value == -1)


def _uses_variant(task_id: str, rom: str, o: dict[str, Any]) -> bool:
    """Validates mode and difficulty; True when either is not the ROM's default, which ALE's
    vector env cannot play (ALE's default mode is the first available one, difficulty 0)."""
    if rom_default(o["mode"]) and rom_default(o["difficulty"]):
        return False
    modes, difficulties = game_variants(rom)
    for name, plural, available in (("mode", "modes", modes), ("difficulty", "difficulties", difficulties)):
        v = o[name]
        if not rom_default(v) and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v not in available):
            raise ValueError(
                f"{task_id}: {name} must be -1 (the ROM's default) or one of the ROM's available {plural} "
                f"{list(available)}, got {v!r}"
            )
    return not (rom_default(o["mode"]) or o["mode"] == modes[0]) or not (rom_default(o["difficulty"])
                                                                        or o["difficulty"] == 0)


@functools.cache
def num_actions(rom: str, full_action_space: bool) -> int:
    """The game's action count, read from ALE without starting a vector env."""
    check_rom(rom, rom)  # ALE exits the process on a multi-player ROM
    ale_py = require_ale()
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    ale = ale_py.ALEInterface()
    ale.loadROM(ale_py.roms.get_rom_path(rom))
    return len(ale.getLegalActionSet() if full_action_space else ale.getMinimalActionSet())


def configure(task_id: str, env_type: str, kwargs: dict[str, Any]) -> AtariTask:
    require_ale()
    config = PoolConfig.create(task_id, env_type, "atari", DEFAULT_MAX_EPISODE_STEPS, kwargs, ATARI_KWARGS)
    check_seed_range(config, ALE_MAX_SEED, "ALE's vector env (an int32 per env)")
    o = dict(config.task_kwargs)
    check_options(task_id, o)
    check_frame_limit(config, o["frame_skip"])
    rom = ATARI_TASKS[task_id]
    # ALE's vector env has no mode, difficulty or raw screen: those pools run one ALE per env.
    backend = "single" if _uses_variant(task_id, rom, o) or config.render_mode is not None else "vector"
    if backend == "single" and (o["img_height"] > 210 or o["img_width"] > 160):
        raise ValueError(f"{task_id}: with mode, difficulty or render_mode the frames are only downscaled: "
                         f"img_height must be <= 210 and img_width <= 160, got {o['img_height']} x {o['img_width']}")
    channels = o["stack_num"] * (1 if o["gray_scale"] else 3)
    obs_space = gym.spaces.Box(0, 255, (channels, o["img_height"], o["img_width"]), np.uint8)
    action_space = gym.spaces.Discrete(num_actions(rom, bool(o["full_action_space"])))
    return AtariTask(config, rom, obs_space, action_space, backend)
