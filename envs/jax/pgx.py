"""pgx's games (`pgx/connect_four`, `pgx/tic_tac_toe`, `pgx/othello`, `pgx/go_9x9`, `pgx/chess`,
..., and its one-player `pgx/2048` and `pgx/minatar-breakout`) as RawJaxEnvs, laid out as the host
pool lays out PettingZoo's classic games (`pettingzoo/classic/connect_four_v3`), so the same
agents, presets and evaluations play either:

- Players: a two-player game has a row per seat, `player_0` the player who moves first, then
  `player_1`. pgx draws which of its player ids moves first at each reset; the rows follow the
  seats, not the ids, so "player_0" always opens (an evaluation's seats, PettingZoo's order).
- Observation: a Dict as PettingZoo's classic games: "observation", pgx's own for the row's
  player (its planes channel-first [C, H, W]; booleans as int8), and "action_mask" (int8 [A]):
  the legal moves for the player to move, all zeros for the other row and once the game is over.
- Reward: each seat's pgx reward (+1 win, -1 loss, 0 draw in the board games); an illegal move
  loses at once (pgx's rule: -1 for the mover, +1 for the other). Episodes end in pgx's
  `terminated`; pgx games need no time limit (MinAtar's: pass max_episode_steps).
- The true model, for agents that plan with it (AlphaZero): the state is `PgxState` (pgx's
  State, the seat that opened, key data for stochastic steps), `to_play(state)` is the seat to
  move, and `step` is pure, so a search steps copies of the state.

- Frames (`render_mode="rgb_array"`, videos): the games whose first two planes are the two
  players' stones (RENDERED: connect four, tic-tac-toe, othello) are drawn from player_0's view,
  its stones red, player_1's yellow, on a blue board.

Refused, with the reason: the ids in UNSUPPORTED. pgx's games take no parameters here.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

# pgx ids that cannot run here: why (shown when one is asked for)
UNSUPPORTED = {
    "sparrow_mahjong": "it has three players whose turn order is not fixed; the suite's seats are for one or two",
}
MASK_KEY = "action_mask"  # PettingZoo's name for the legal moves
RENDERED = ("connect_four", "tic_tac_toe", "othello")  # planes 0 and 1: the two players' stones
CELL = 48  # pixels per board cell in a frame
COLORS = np.array([[225, 225, 225], [220, 40, 40], [240, 200, 40]], np.uint8)  # empty, player_0, player_1
BOARD = np.array([30, 80, 170], np.uint8)


def ids() -> list[str]:
    """pgx's ids (those in UNSUPPORTED are refused, with the reason, at make)."""
    import pgx

    return list(pgx.available_envs())


class PgxState(NamedTuple):
    game: Any  # pgx's State
    opener: jax.Array  # int32: the pgx player id of seat 0 (who moved first)
    key: jax.Array  # uint32 key data for the next stochastic step (dice, 2048's tiles)


class PgxEnv:
    """A RawJaxEnv over a pgx game (see the module docstring)."""

    channel_last = True  # pgx's planes are [H, W, C]: JaxEnv presents them channel-first

    def __init__(self, name: str, **kwargs: Any):
        import pgx

        self.task_id = f"pgx/{name}"
        if name in UNSUPPORTED:
            raise ValueError(f"{self.task_id} is not supported: {UNSUPPORTED[name]}")
        if kwargs:
            raise ValueError(f"{self.task_id} takes no parameters here, got {', '.join(sorted(kwargs))}")
        self.game = pgx.make(name)
        self.num_players = int(self.game.num_players)
        self.player_names = tuple(f"player_{i}" for i in range(self.num_players)) if self.num_players > 1 else ()
        self.max_episode_steps = None
        self.num_actions = int(self.game.num_actions)
        self.action_space = gym.spaces.Discrete(self.num_actions, dtype=np.int64)
        leaf = jax.eval_shape(lambda k: self.game.init(k).observation, jax.random.key(0))
        self._obs_dtype = np.dtype(np.int8) if leaf.dtype == np.bool_ else np.dtype(leaf.dtype)
        low, high = (0, 1) if leaf.dtype == np.bool_ else (-np.inf, np.inf)
        board = gym.spaces.Box(low, high, tuple(leaf.shape), self._obs_dtype)
        mask = gym.spaces.Box(0, 1, (self.num_actions,), np.int8)
        self.observation_space = gym.spaces.Dict({"observation": board, MASK_KEY: mask})
        if name in RENDERED:
            self.render = self._draw

    def _draw(self, state: PgxState) -> np.ndarray:
        """One env's frame (uint8 [H x CELL, W x CELL, 3]) from its state (see the module docstring)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            planes = np.asarray(self.game.observe(state.game, jnp.asarray(state.opener)))
        owner = np.where(planes[..., 0] > 0, 1, np.where(planes[..., 1] > 0, 2, 0))  # [H, W]: 0 empty, 1, 2
        H, W = owner.shape
        yy, xx = np.mgrid[:CELL, :CELL] - (CELL - 1) / 2
        disc = yy**2 + xx**2 <= (0.42 * CELL) ** 2
        frame = np.broadcast_to(BOARD, (H * CELL, W * CELL, 3)).copy()
        for i in range(H):
            for j in range(W):
                frame[i * CELL:(i + 1) * CELL, j * CELL:(j + 1) * CELL][disc] = COLORS[owner[i, j]]
        return frame

    # ---------------------------------------------------------------- the model
    def to_play(self, state: PgxState) -> jax.Array:
        """The seat (row) whose move it is (int32; 0 in a one-player game)."""
        if self.num_players == 1:
            return jnp.int32(0)
        return (state.game.current_player != state.opener).astype(jnp.int32)

    def _seat_ids(self, state: PgxState) -> jax.Array:
        """pgx's player id of each seat [P]."""
        return (state.opener + jnp.arange(self.num_players, dtype=jnp.int32)) % self.num_players

    def _observe(self, state: PgxState) -> Any:
        game = state.game
        legal = (game.legal_action_mask & ~game.terminated).astype(jnp.int8)
        if self.num_players == 1:
            return {"observation": game.observation.astype(self._obs_dtype), MASK_KEY: legal}
        with warnings.catch_warnings():  # pgx deprecates observe's player_id (its only per-player view)
            warnings.simplefilter("ignore", DeprecationWarning)
            boards = jax.vmap(lambda p: self.game.observe(game, p))(self._seat_ids(state))
        to_play = self.to_play(state)
        masks = jnp.where((jnp.arange(self.num_players) == to_play)[:, None], legal[None], jnp.int8(0))
        return {"observation": boards.astype(self._obs_dtype), MASK_KEY: masks}

    def reset(self, key: jax.Array) -> tuple[PgxState, Any]:
        key, now = jax.random.split(key)
        game = self.game.init(now)
        state = PgxState(game, game.current_player.astype(jnp.int32), jax.random.key_data(key))
        return state, self._observe(state)

    def step(self, state: PgxState, action: jax.Array):
        """The move of the seat to play (its row's action; the others' are ignored)."""
        key, now = jax.random.split(jax.random.wrap_key_data(state.key))
        move = action if self.num_players == 1 else action[self.to_play(state)]
        game = self.game.step(state.game, move.astype(jnp.int32), now)
        state = PgxState(game, state.opener, jax.random.key_data(key))
        reward = game.rewards.astype(jnp.float32)
        reward = reward[0] if self.num_players == 1 else reward[self._seat_ids(state)]
        return state, self._observe(state), reward, game.terminated, game.truncated


make = PgxEnv
