"""The multi-player Atari tasks (`Combat-v5`, `Joust-v5`, `MazeCraze-v5`, `Warlords-v5`): the
pool's Atari options, validated, and the worker-process task that runs them
(envs/atari/multiplayer.py in envs/process's workers: multi_agent_ale_py steps one game at a time
in Python, which ALE's C++ vector env cannot host).

max_num_players: the ROM's largest player count (Warlords 4, the others 2); a smaller count with
modes of its own is taken too (Warlords' 2-player modes), never 1. `mode` (default: the first
mode of that count, as PettingZoo) and `difficulty` pick among the ROM's. The Atari options are
single-player Atari's (envs/atari/task.py) but `episodic_life` (no single life to lose); `lives`
and the raw `reward` are per player in info, as single-player Atari's. `add_player_id=True`
appends P planes to each row's frame stack, the row's player's all 255 and the others 0
(SuperSuit's agent_indicator): every player sees the same screen, so players that share networks
(IPPO) need it to tell which side they play. `render_mode="rgb_array"`:
`render` gives each env's raw RGB screen, drawn in its worker."""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.atari.games import ATARI_PLAYER_TASKS
from envs.atari.multiplayer import AtariPlayersFactory, rom_facts, require_multi_agent_ale
from envs.atari.task import (
    ALE_MAX_SEED,
    ATARI_INFO,
    ATARI_KWARGS,
    DEFAULT_MAX_EPISODE_STEPS,
    check_frame_limit,
    check_options,
    rom_default,
)
from envs.config import PoolConfig, check_seed_range
from envs.process.gym_task import GymTask, retry_config

PLAYERS_KWARGS: dict[str, Any] = {**ATARI_KWARGS, "add_player_id": False}  # and the player's indicator planes


def _num_players(task_id: str, given: Any, counts: dict[int, tuple[int, ...]]) -> int:
    """The player count: given (a count of the ROM's with modes, > 1), or the ROM's largest."""
    choices = sorted(p for p in counts if p > 1)
    if given is None:
        return choices[-1]
    if isinstance(given, bool) or not isinstance(given, (int, np.integer)) or given not in choices:
        raise ValueError(f"max_num_players={given!r}: {task_id!r} has modes for {choices} players (one batch row each)")
    return int(given)


def _pick(task_id: str, name: str, value: Any, available: tuple[int, ...], what: str) -> None:
    if not rom_default(value) and (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                                   or value not in available):
        raise ValueError(f"{task_id}: {name} must be -1 (the ROM's default) or one of the ROM's {what} "
                         f"{list(available)}, got {value!r}")


def configure(task_id: str, env_type: str, kwargs: dict[str, Any]) -> GymTask:
    """Validates the kwargs (no env is built) and returns the worker-process task."""
    require_multi_agent_ale()
    kwargs = dict(kwargs)
    retry = retry_config(kwargs)
    rom = ATARI_PLAYER_TASKS[task_id]
    facts = rom_facts(rom)
    players = _num_players(task_id, kwargs.get("max_num_players"), facts.modes)
    kwargs["max_num_players"] = players
    config = PoolConfig.create(task_id, env_type, "process", DEFAULT_MAX_EPISODE_STEPS, kwargs, PLAYERS_KWARGS, players)
    check_seed_range(config, ALE_MAX_SEED, "ALE (an int32 per env)")
    o = dict(config.task_kwargs)
    check_options(task_id, o)
    if not isinstance(o["add_player_id"], (bool, np.bool_)):
        raise ValueError(f"{task_id}: add_player_id must be a bool, got {o['add_player_id']!r}")
    check_frame_limit(config, o["frame_skip"])
    if o["episodic_life"]:
        raise ValueError(f"{task_id}: episodic_life=True is for single-player games (a life loss ends the episode); "
                         "here each player leaves the episode when its lives run out")  # fmt: skip
    modes = facts.modes[players]
    _pick(task_id, "mode", o["mode"], modes, f"modes for {players} players")
    _pick(task_id, "difficulty", o["difficulty"], facts.difficulties, "difficulties")
    (sh, sw), h, w = facts.screen, o["img_height"], o["img_width"]
    if h > sh or w > sw:
        raise ValueError(f"{task_id}: frames are only downscaled: img_height must be <= {sh} and img_width <= {sw} "
                         f"(the screen), got {h} x {w}")  # fmt: skip
    mode = modes[0] if rom_default(o["mode"]) else int(o["mode"])
    factory = AtariPlayersFactory(rom, players, mode, config.max_episode_steps, tuple(sorted(o.items())))
    probe = factory()  # its spaces; building one ALE also proves the ROM and mode load
    probe.close()
    return GymTask(config, factory, probe.observation_space, probe.action_space, ((),), (), retry,
                   num_players=players, reset_options=False, extra_info=ATARI_INFO)
