"""The Atari games ALE 0.12 ships, as ROM ids, and the task ids `envs` serves them under
(`<Game>-v5`, EnvPool's names). Static, so an Atari id is recognised without ale-py installed."""

from __future__ import annotations

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


def task_name(rom_id: str) -> str:
    """ALE's own rule: snake_case ROM id to PascalCase game name."""
    return rom_id.title().replace("_", "")


ATARI_TASKS: dict[str, str] = {f"{task_name(rom)}-v5": rom for rom in ROM_IDS}  # task id -> ROM id
