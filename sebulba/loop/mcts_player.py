"""The pure-MCTS player of board-game evaluations (`opponent="mcts"`): Monte-Carlo tree search on
the game's true model (`sebulba.game_model`) with no learned part, the classic baseline a planning
agent is measured against: a uniform prior over the legal moves, each new node valued by one
random playout (uniformly random legal moves to the game's end, its outcome for the node's
mover), PUCT selection (mctx's `muzero_policy`, no root noise), and the most visited move played.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sebulba.game_model import MASK_KEY, GameModel, legal_or_any
from sebulba.search import SearchConfig, model_output, root_output, search

ILLEGAL = -1e9


def uniform_logits(legal: jax.Array) -> jax.Array:
    return jnp.where(legal, 0.0, ILLEGAL)


def playout(model: GameModel, states: Any, legal: jax.Array, key: jax.Array, max_steps: int) -> jax.Array:
    """float32 [B]: the outcome of one uniformly random game from each state, for its mover
    (0 for a playout still running after max_steps moves)."""
    B = legal.shape[0]

    def go_on(carry):
        *_, alive, steps, _ = carry
        return alive.any() & (steps < max_steps)

    def move(carry):
        state, legal, value, sign, alive, steps, key = carry
        key, k = jax.random.split(key)
        action = jax.random.categorical(k, uniform_logits(legal))
        played = model.play(state, action)
        value = value + jnp.where(alive, sign * played.reward, 0.0)
        sign = sign * played.discount
        return played.state, played.legal, value, sign, alive & (played.discount != 0.0), steps + 1, key

    zeros = jnp.zeros(B, jnp.float32)
    carry = (states, legal, zeros, jnp.ones(B, jnp.float32), jnp.ones(B, bool), jnp.int32(0), key)
    return jax.lax.while_loop(go_on, move, carry)[2]


class PureMCTS:
    """Each game's mover's move by `num_simulations` simulations of pure MCTS (see the module
    docstring); jitted once per batch shape."""

    def __init__(self, model: GameModel, num_simulations: int = 200, max_playout_steps: int = 1_000):
        if not isinstance(num_simulations, int) or num_simulations < 1:
            raise ValueError(f"the pure-MCTS player's num_simulations must be a positive int, got {num_simulations!r}")
        self.model, self.max_playout_steps = model, max_playout_steps
        self.config = SearchConfig(algorithm="puct", num_simulations=num_simulations, dirichlet_fraction=0.0)
        self._act = jax.jit(self._rows)

    def _recurrent(self, params, key, action, states):
        played = self.model.play(states, action)
        value = playout(self.model, played.state, played.legal, key, self.max_playout_steps)
        value = jnp.where(played.discount == 0.0, 0.0, value)
        return model_output(played.reward, played.discount, uniform_logits(played.legal), value), played.state

    def _search(self, states: Any, legal_mask: jax.Array, key: jax.Array) -> jax.Array:
        k_root, k_search, k_tie = jax.random.split(key, 3)
        legal = legal_or_any(legal_mask)
        value = playout(self.model, states, legal, k_root, self.max_playout_steps)
        out = search(self.config, (), k_search, root_output(uniform_logits(legal), value, states), self._recurrent,
                     invalid_actions=~legal)
        visits = jnp.where(legal, out.visit_counts, -1).astype(jnp.float32)
        ties = jax.random.uniform(k_tie, visits.shape)  # among the most visited, one at random
        return jnp.argmax(visits + 0.5 * ties, axis=-1).astype(jnp.int32)

    def _rows(self, states: Any, obs: Any, key: jax.Array) -> jax.Array:
        mover = self.model.mover_rows(obs, self.model.to_play(states))
        return jnp.repeat(self._search(states, mover[MASK_KEY], key), self.model.num_players)

    def __call__(self, states: Any, obs: Any, key: jax.Array) -> jax.Array:
        """int32 [B x P]: every row of each game gets its mover's move (the env plays the
        mover's row), from the envs' `states` [B, ...] and their rows' observations `obs`."""
        return self._act(states, obs, key)
