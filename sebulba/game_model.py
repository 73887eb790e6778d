"""A turn-based JAX env as the model a search steps: the true model AlphaZero plans with, and the
pure-MCTS evaluation player's (`sebulba.loop.mcts_player`).

The env is a JaxEnv (envs/jax/core.py) whose raw env says whose turn it is: `to_play(state)`, the
row (seat) to move, with a Dict observation carrying "action_mask" (the mover's legal moves) over
a Discrete action space: pgx's games (envs/jax/pgx.py). Its multi-player rows are seats; a
position is seen by the player to move, and a search's values are the mover's:

- `mover_rows(obs, to_play)`: from a batch's rows [B x P, ...], each env's mover's row [B, ...];
- `play(states, action)`: the mover's move in each state: the next states, the mover's reward,
  the discount the search backs values up with (-1 where the turn passes to the other player
  (negamax), +1 where the mover moves again, 0 once the game is over), and the next mover's
  observation and legal moves.

Everything is pure and batched over a leading state axis [B].
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp

MASK_KEY = "action_mask"


class Played(NamedTuple):
    state: Any  # [B, ...] the states after the moves
    reward: jax.Array  # float32 [B]: the mover's reward for its move
    discount: jax.Array  # float32 [B]: -1 (the other player moves next), 1 (the mover again), 0 (game over)
    obs: Any  # [B, ...] the next mover's observation
    legal: jax.Array  # bool [B, A] its legal moves (all True once the game is over: a search needs one)


def legal_or_any(mask: jax.Array) -> jax.Array:
    """bool [B, A] legal moves, all of them where none is (a finished game: a search needs one)."""
    legal = mask > 0
    return jnp.where(legal.any(-1, keepdims=True), legal, True)


class GameModel:
    """The model of `env`, a JaxEnv over a turn-based RawJaxEnv (see the module docstring); its
    observations are the env's as the pool presents them (`JaxEnv.present`), those the network
    learns on."""

    def __init__(self, env: Any):
        raw = env.raw
        task_id = env.task_id
        if not callable(getattr(raw, "to_play", None)):
            raise ValueError(f"{task_id} is not a turn-based JAX env (its raw env says no to_play(state)): a search "
                             "with the true model plays turn-based games, e.g. pgx/connect_four")
        space = env.observation_space
        if not (isinstance(space, gym.spaces.Dict) and MASK_KEY in space.spaces
                and isinstance(env.action_space, gym.spaces.Discrete)):
            raise ValueError(f"{task_id}: a game model needs a Dict observation with {MASK_KEY!r} over Discrete actions")
        self.env, self.raw, self.task_id = env, raw, task_id
        self.num_players = env.num_players
        if self.num_players > 2:
            raise ValueError(f"{task_id} has {self.num_players} players; the search's values are for one or two")
        self.num_actions = int(env.action_space.n)

    @classmethod
    def of(cls, task_id: str) -> GameModel:
        """The model of a JAX env id (`pgx/connect_four`); a ValueError for any other id."""
        from envs.jax.registry import has_stateless_step, is_jax_id, make_jax_env

        if not (is_jax_id(task_id) or has_stateless_step(task_id)):
            raise ValueError(f"{task_id} is not a turn-based JAX env: a search with the true model plays turn-based "
                             "JAX games, e.g. pgx/connect_four")

        return cls(make_jax_env(task_id))

    def to_play(self, states: Any) -> jax.Array:
        """int32 [B]: each state's seat to move."""
        return jax.vmap(self.raw.to_play)(states).astype(jnp.int32)

    def mover_rows(self, rows: Any, to_play: jax.Array) -> Any:
        """The rows [B x P, ...] of a batch (an env's players consecutive) -> each env's mover's [B, ...]."""
        P = self.num_players
        if P == 1:
            return rows
        pick = lambda x: x.reshape(x.shape[0] // P, P, *x.shape[1:])[jnp.arange(to_play.shape[0]), to_play]  # noqa: E731
        return jax.tree.map(pick, rows)

    def play(self, states: Any, action: jax.Array) -> Played:
        """The movers' moves `action` [B] in `states` [B, ...] (see the module docstring)."""
        P = self.num_players
        mover = self.to_play(states)
        moves = action.astype(jnp.int32) if P == 1 else jnp.repeat(action.astype(jnp.int32)[:, None], P, axis=1)
        state, obs, reward, terminated, truncated = jax.vmap(self.raw.step)(states, moves)
        obs = self.env.present(obs)  # as the pool presents it (images channel-first): what the network learns on
        after = self.to_play(state)
        over = terminated | truncated
        if P > 1:
            reward = jnp.take_along_axis(reward, mover[:, None], axis=1)[:, 0]
            obs = jax.tree.map(lambda x: x[jnp.arange(after.shape[0]), after], obs)
        discount = jnp.where(over, 0.0, jnp.where(after == mover, 1.0, -1.0)).astype(jnp.float32)
        return Played(state, reward.astype(jnp.float32), discount, obs, legal_or_any(obs[MASK_KEY]))
