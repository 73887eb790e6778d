"""AlphaZero's network: one torso over the board, a policy head (logits over the moves, the
illegal ones masked) and a value head (tanh: the game's outcome for the player to move, in
[-1, 1]); and what the search expands with it on the true model (`root`, `recurrent_fn`)."""

from __future__ import annotations

from typing import Any, Callable

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp

from sebulba.game_model import MASK_KEY, GameModel, legal_or_any
from sebulba.networks import torso_for
from sebulba.search import model_output, root_output

Array = jax.Array
ILLEGAL = -1e9  # an illegal move's logit (finite: mctx's softmaxes stay defined)


class AlphaZeroNet(nn.Module):
    torso: nn.Module
    num_actions: int

    @nn.compact
    def __call__(self, obs: Any) -> tuple[Array, Array]:
        """A batch of Dict observations -> (policy logits [B, A], illegal moves masked; value [B])."""
        h = self.torso(obs["observation"])
        logits = nn.Dense(self.num_actions)(h)
        value = jnp.tanh(nn.Dense(1)(h)[..., 0])
        return jnp.where(legal_or_any(obs[MASK_KEY]), logits, ILLEGAL), value


def make_network(observation_space: gym.spaces.Dict, num_actions: int, hidden_sizes: tuple[int, ...],
                 torso: str = "auto") -> AlphaZeroNet:
    return AlphaZeroNet(torso_for(observation_space["observation"], torso, hidden_sizes=hidden_sizes), num_actions)


def root(net: AlphaZeroNet, params: Any, obs: Any, states: Any) -> Any:
    """The search's root at the movers' observations, its embedding the env states themselves."""
    logits, value = net.apply(params, obs)
    return root_output(logits, value, states)


def recurrent_fn(net: AlphaZeroNet, model: GameModel) -> Callable:
    """mctx's recurrent_fn over the true model: the mover's move, its reward, the negamax discount,
    and the network's prior and value at the next mover's position (0 once the game is over)."""

    def fn(params, key, action, states):
        played = model.play(states, action)
        logits, value = net.apply(params, played.obs)
        value = jnp.where(played.discount == 0.0, 0.0, value)
        return model_output(played.reward, played.discount, logits, value), played.state

    return fn
