"""The Atari games ALE 0.12 ships, as ROM ids, and the task ids `envs` serves them under
(`<Game>-v5`, EnvPool's names). Static, so an Atari id is recognised without ale-py installed."""

from __future__ import annotations

import re
from typing import Any

ROM_IDS = (
    "adventure", "air_raid", "alien", "amidar", "assault", "asterix", "asteroids", "atlantis2", "atlantis",
    "backgammon", "bank_heist", "basic_math", "battle_zone", "beam_rider", "berzerk", "blackjack", "bowling",
    "boxing", "breakout", "carnival", "casino", "centipede", "chopper_command", "combat", "crazy_climber",
    "crossbow", "darkchambers", "defender", "demon_attack", "donkey_kong", "double_dunk", "earthworld",
    "elevator_action", "enduro", "entombed", "et", "fishing_derby", "flag_capture", "freeway", "frogger",
    "frostbite", "galaxian", "gopher", "gravitar", "hangman", "haunted_house", "hero", "human_cannonball",
    "ice_hockey", "jamesbond", "journey_escape", "joust", "kaboom", "kangaroo", "keystone_kapers",
    "king_kong", "klax", "koolaid", "krull", "kung_fu_master", "laser_gates", "lost_luggage", "mario_bros",
    "maze_craze", "miniature_golf", "montezuma_revenge", "mr_do", "ms_pacman", "name_this_game", "othello",
    "pacman", "phoenix", "pitfall2", "pitfall", "pong", "pooyan", "private_eye", "qbert", "riverraid",
    "road_runner", "robotank", "seaquest", "sir_lancelot", "skiing", "solaris", "space_invaders", "space_war",
    "star_gunner", "superman", "surround", "tennis", "tetris", "tic_tac_toe_3d", "time_pilot", "trondead",
    "turmoil", "tutankham", "up_n_down", "venture", "video_checkers", "video_chess", "video_cube",
    "video_pinball", "warlords", "wizard_of_wor", "word_zapper", "yars_revenge", "zaxxon",
)

# The multi-player ROMs: ALE's single-player interface exits on them; `<Game>-v5` plays them through
# multi_agent_ale_py (envs/atari/multiplayer.py), one batch row per player.
PLAYER_ROMS = ("combat", "joust", "maze_craze", "warlords")
MULTI_PLAYER = (
    "a multi-player ROM that ALE's single-agent interface cannot run: loading it makes ALE print "
    "'Attempt to wrap ROM ... failed' and exit the process (ale-py 0.12.1 does not register it as "
    "a Gymnasium id either); {task} plays it, one batch row per player (the `atari-multiplayer` extra)"
)
# ROMs that end the process (exit code 1, no exception) when ALE loads them: ALEInterface.loadROM,
# AtariVectorEnv and ale_py.env.AtariEnv alike. Found by loading every ROM of ROM_IDS in a
# subprocess; tests/test_atari_roms.py repeats that sweep, so this set cannot go stale silently.
UNSUPPORTED_ROMS: dict[str, str] = {rom: MULTI_PLAYER for rom in PLAYER_ROMS}

ALE_ENTRY_POINT = "ale_py.env:AtariEnv"  # the entry point of ALE's Gymnasium ids (ALE/Pong-v5, Pong-v4, ...)
# Gymnasium's ALE id forms: ALE/Pong-v5, Pong-v0, PongNoFrameskip-v4, (old gym) Pong-ram-v4, PongDeterministic-v4.
_ALE_ID = re.compile(r"(?:ALE/)?(?P<name>[A-Za-z0-9]+?)(?:-ram)?(?:NoFrameskip|Deterministic)?-v\d+")


def task_name(rom_id: str) -> str:
    """ALE's own rule: snake_case ROM id to PascalCase game name."""
    return rom_id.title().replace("_", "")


ATARI_TASKS: dict[str, str] = {  # task id -> ROM id, for every ROM ALE can run
    f"{task_name(rom)}-v5": rom for rom in ROM_IDS if rom not in UNSUPPORTED_ROMS
}
ATARI_PLAYER_TASKS: dict[str, str] = {f"{task_name(rom)}-v5": rom for rom in PLAYER_ROMS}  # task id -> ROM id
_UNSUPPORTED_NAMES = {task_name(rom): rom for rom in UNSUPPORTED_ROMS}


def unsupported_rom_error(rom: str, task_id: str) -> ValueError:
    message = UNSUPPORTED_ROMS[rom].format(task=f"{task_name(rom)}-v5")
    return ValueError(f"{task_id!r} cannot run: ROM {rom!r} is {message}")


def check_rom(rom: Any, task_id: str) -> None:
    """Raises a ValueError for a ROM ALE would exit the process on, before ALE sees it."""
    if isinstance(rom, str) and rom in UNSUPPORTED_ROMS:
        raise unsupported_rom_error(rom, task_id)


def unsupported_rom_of_id(task_id: str) -> str | None:
    """The unsupported ROM an id names in Gymnasium's ALE forms (`ALE/Combat-v5`, `CombatNoFrameskip-v4`,
    ...), else None. For ids no registry holds: ALE registers none of these. (`Combat-v5` is ours.)"""
    m = _ALE_ID.fullmatch(task_id)
    return _UNSUPPORTED_NAMES.get(m.group("name")) if m else None


def is_ale_entry_point(entry_point: Any) -> bool:
    """Whether a Gymnasium entry point is ALE's AtariEnv (as its string or as the class)."""
    if isinstance(entry_point, str):
        return entry_point == ALE_ENTRY_POINT
    module, name = getattr(entry_point, "__module__", None), getattr(entry_point, "__name__", None)
    return (module, name) == ("ale_py.env", "AtariEnv")
