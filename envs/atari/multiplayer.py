"""One multi-player Atari game (Combat, Joust, MazeCraze, Warlords) on `multi_agent_ale_py`'s
ALEInterface, as a worker process's players env (the interface of envs/process/pettingzoo_env.py:
`reset`, `step(action (P,))`, `flags`, results with a player axis).

ale-py's single-player ALE exits the process on these ROMs, and its vector env cannot host them;
multi_agent_ale_py, PettingZoo's Atari engine, plays them: `setMode` picks a mode of P players,
`act` takes one action per player and returns one reward per player, `allLives` gives each
player's lives (-1: out of the game). The ROMs are ale-py's bundled ones.

The frames go through the single-player Atari pipeline (envs/atari/single.py: ALE's
PreprocessedEnv with frame skip, max-pooling, area resize, stacking, FIRE and noop starts, the
frame limit), one env at a time. Every player sees the same screen, as in PettingZoo's Atari envs.
Players leave as PettingZoo's `ParallelAtariEnv` has them leave: all at game over, one whose lives
fall below 0 before; a player out of the game presses NOOP (its action is ignored), gets reward 0
and `alive` False. The episode ends (terminated) when no player is left, or is truncated at the
frame limit (max_episode_steps * frame_skip frames, as single-player Atari's).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import gymnasium as gym
import numpy as np

from envs.atari.single import AreaResizer, CppNoopSampler, push_frames, skip_frames, start_game
from envs.atari.task import rom_default

INSTALL_HINT = (
    "the multi-player Atari games (Combat-v5, Joust-v5, MazeCraze-v5, Warlords-v5) need the extra "
    "`atari-multiplayer`: pip install -e '.[atari-multiplayer]' (multi-agent-ale-py, ale-py for the ROMs)"
)
FIRE = 1  # ALE's action ids: NOOP 0, FIRE 1


def require_multi_agent_ale() -> Any:
    try:
        import multi_agent_ale_py
        import ale_py.roms  # noqa: F401 - the ROMs
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    multi_agent_ale_py.ALEInterface.setLoggerMode("error")  # also keeps ALE's banner off stdout
    return multi_agent_ale_py


def rom_path(rom: str) -> str:
    """ale-py's bundled ROM file (multi_agent_ale_py exits the process on a missing file)."""
    import ale_py.roms

    path = str(ale_py.roms.get_rom_path(rom))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ale-py has no ROM file for {rom!r} (looked for {path})")
    return path


@dataclasses.dataclass(frozen=True)
class RomFacts:
    modes: dict[int, tuple[int, ...]]  # player count -> its modes (counts with none left out)
    difficulties: tuple[int, ...]
    minimal_actions: tuple[int, ...]
    screen: tuple[int, int]  # (height, width)


@functools.cache
def rom_facts(rom: str) -> RomFacts:
    """What ALE says of a ROM, read once per process."""
    ale = require_multi_agent_ale().ALEInterface()
    ale.loadROM(rom_path(rom))
    modes = {p: tuple(int(m) for m in ale.getAvailableModes(p)) for p in (1, 2, 3, 4)}
    width, height = ale.getScreenDims()  # multi_agent_ale_py's order: (width, height)
    return RomFacts(
        {p: m for p, m in modes.items() if m}, tuple(int(d) for d in ale.getAvailableDifficulties()),
        tuple(int(a) for a in ale.getMinimalActionSet()), (int(height), int(width)),
    )  # fmt: skip


class FastAle:
    """The calls the frame loop makes on a multi_agent_ale_py ALEInterface, to the same C functions
    without its wrapper's per-call ctypes conversions and allocations (measured: ~35 µs a frame,
    a quarter of Combat's emulation time). `act` returns a buffer reused by the next call."""

    def __init__(self, ale: Any, num_players: int, rgb: bool):
        from multi_agent_ale_py.ale_python_interface import ale_lib

        obj = ale.obj
        self._ale = ale  # owns obj: deleted with it
        self._lib, self._obj = ale_lib, obj
        self._reward = np.zeros(num_players, np.intc)
        self._lives = np.zeros(num_players, np.intc)
        self._screen = ale_lib.getScreenRGB if rgb else ale_lib.getScreenGrayscale
        self.reset_game = functools.partial(ale_lib.reset_game, obj)
        self.game_over = functools.partial(ale_lib.game_over, obj)

    def act(self, action: np.ndarray) -> np.ndarray:
        """action: one ALE action per player, a contiguous intc array."""
        self._lib.actMulti(self._obj, action.ctypes.data, self._reward.ctypes.data)
        return self._reward

    def grab(self, frame: np.ndarray) -> None:
        """The screen into frame, a contiguous (H, W) uint8 array ((H, W, 3) for RGB)."""
        self._screen(self._obj, frame.ctypes.data)

    def grab_rgb(self, frame: np.ndarray) -> None:
        """The RGB screen into frame, a contiguous (H, W, 3) uint8 array."""
        self._lib.getScreenRGB(self._obj, frame.ctypes.data)

    def all_lives(self) -> np.ndarray:
        self._lib.lives(self._obj, self._lives.ctypes.data)
        return self._lives.copy()


@dataclasses.dataclass(frozen=True)
class AtariPlayersFactory:
    """Builds one `AtariPlayersEnv` (picklable: it travels to the workers). `options`: the pool's
    Atari options (envs.atari.task.ATARI_KWARGS), mode resolved to a mode of num_players."""

    rom: str
    num_players: int
    mode: int
    max_episode_steps: int
    options: tuple[tuple[str, Any], ...]

    def __call__(self) -> AtariPlayersEnv:
        return AtariPlayersEnv(self)


class AtariPlayersEnv:
    """One game of P players; `reset(seed)` starts it on a fresh ALE of that seed, with ALE's noop
    counts for that seed (None: the streams go on), as single-player Atari's envs are seeded."""

    def __init__(self, spec: AtariPlayersFactory):
        self._maale = require_multi_agent_ale()
        self._spec = spec
        o = dict(spec.options)
        self._o = o
        facts = rom_facts(spec.rom)
        p = self._p = spec.num_players
        self.players = list(range(p))
        actions = tuple(range(18)) if o["full_action_space"] else facts.minimal_actions
        self._actions = np.array(actions, np.intc)
        self._fire = np.full(p, FIRE, np.intc) if o["use_fire_reset"] and FIRE in actions else None
        self._noop = np.zeros(p, np.intc)
        self._frame_skip = int(o["frame_skip"])
        self._limit = spec.max_episode_steps * self._frame_skip
        self._reward_clip = bool(o["reward_clip"])
        self._rgb = not o["gray_scale"]
        (sh, sw), h, w = facts.screen, int(o["img_height"]), int(o["img_width"])
        self._resize = AreaResizer(sh, sw, h, w)
        self._screen = (sh, sw, 3)
        color = (3,) if self._rgb else ()
        self._raw = np.zeros((1, 2, sh, sw, *color), np.uint8)  # the two frame buffers (push_frames' layout)
        self._stack = np.zeros((1, int(o["stack_num"]), *color, h, w), np.uint8)
        channels = int(o["stack_num"]) * (3 if self._rgb else 1)
        self._ids = bool(o.get("add_player_id", False))
        self._out = np.zeros((p, channels + p * self._ids, h, w), np.uint8)
        if self._ids:  # the player's indicator planes (SuperSuit's agent_indicator), written once
            self._out[np.arange(p), channels + np.arange(p)] = 255
        self.observation_space = gym.spaces.Box(0, 255, self._out.shape[1:], np.uint8)
        self.action_space = gym.spaces.Discrete(len(actions))
        self.terminated, self.truncated, self.alive = np.zeros(p, bool), np.zeros(p, bool), np.zeros(p, bool)
        self._playing = np.zeros(p, bool)  # players still in the game
        self._frames = 0
        self._new_ale(0)  # the workers' first reset reseeds it

    def _new_ale(self, seed: int) -> None:
        """A fresh ALE of this seed, set up as PettingZoo's (mode after loadROM)."""
        ale = self._maale.ALEInterface()
        ale.setFloat("repeat_action_probability", float(self._o["repeat_action_probability"]))
        ale.setInt("random_seed", int(seed))
        ale.loadROM(rom_path(self._spec.rom))
        ale.setMode(self._spec.mode)
        if not rom_default(self._o["difficulty"]):
            ale.setDifficulty(int(self._o["difficulty"]))
        if ale.numPlayersActive() != self._p:
            raise RuntimeError(f"{self._spec.rom}: mode {self._spec.mode} has {ale.numPlayersActive()} players, not {self._p}")
        self._ale = FastAle(ale, self._p, self._rgb)
        self._grab = self._ale.grab
        self._noops = CppNoopSampler(seed, int(self._o["noop_max"]))

    @property
    def flags(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.terminated, self.truncated, self.alive

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[int, Any]]:
        # options: never given (the task says its envs take none, so the pool refuses them)
        if seed is not None:
            self._new_ale(seed)
        start_game(self._ale, self._fire, self._noop, self._noops.draw(), self._grab, self._raw[0])
        self._stack[:] = 0
        self._frames = 0
        self.terminated[:] = self.truncated[:] = False
        self.alive[:] = self._playing[:] = True
        lives = self._ale.all_lives()
        return self._obs(), {i: {"lives": lives[i], "reward": np.float32(0), "terminated": np.int32(0)} for i in range(self._p)}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool, bool, dict[int, Any]]:
        ale, playing = self._ale, self._playing
        self.alive[:] = playing  # the step's players: alive as the step began
        index = np.where(playing, action, 0)  # a player out of the game presses NOOP, as in PettingZoo
        reward, over, self._frames = skip_frames(ale, self._actions[index], self._frame_skip, self._grab, self._raw[0],
                                                 self._frames, self._limit)  # fmt: skip
        lives = ale.all_lives()
        raw = np.where(playing, reward, 0).astype(np.float32)
        leaving = playing & (over | (lives < 0))
        self.terminated |= leaving
        playing &= ~leaving
        terminated = not playing.any()
        truncated = self._frames >= self._limit and not terminated
        info = {i: {"lives": lives[i], "reward": raw[i], "terminated": np.int32(over)} for i in range(self._p)}  # game over
        return self._obs(), np.sign(raw) if self._reward_clip else raw, terminated, truncated, info

    def _obs(self) -> np.ndarray:
        frame = push_frames(self._raw, self._stack, slice(None), self._resize, self._rgb)[0]
        if not self._ids:
            return np.broadcast_to(frame, (self._p, *frame.shape))  # every player sees the screen
        self._out[:, : frame.shape[0]] = frame
        return self._out

    def render(self) -> np.ndarray:
        """The raw RGB screen (H, W, 3), every player's view, as single-player Atari's render."""
        frame = np.empty(self._screen, np.uint8)
        self._ale.grab_rgb(frame)
        return frame

    def close(self) -> None:
        self._ale = self._grab = None
