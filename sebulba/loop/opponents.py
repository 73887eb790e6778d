"""Matches in a multi-player env's evaluation: its teams, who plays the trained policy, what a
random opponent does, and who won.

Teams: players named `<team>_<n>` (simple_tag's adversary_0..2 and agent_0) form teams as the
run's metrics group them (`sebulba.loop.metrics.teams`); otherwise every player is a team of its
own (a board game's player_1 and player_2). A team's return in an episode is the mean of its
players' returns, and the team **wins** the episode when its return is strictly higher than every
other team's: in a zero-sum game (the classic board games' +1 against -1) the winner of the game;
equal top returns (a draw) are nobody's win. In a general-sum game it only says which team scored
more.

Opponents: "self", every player acting with the trained policy (self-play); "random", the players
of one team acting with it and the others uniformly at random over their legal actions (the
observation's PettingZoo `action_mask` where it has one, else the whole action space); "mcts",
the others played by a pure Monte-Carlo tree search on the game's true model (a turn-based JAX
game: `sebulba.loop.mcts_player`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from sebulba.loop.metrics import team_name, teams

OPPONENTS = ("self", "random", "mcts")
MASK_KEY = "action_mask"  # PettingZoo's name for the legal actions in a Dict observation


def check_opponent(opponent: str, num_players: int, env_id: str, cooperative: bool = False) -> str:
    """`opponent` as given, or a ValueError in one line: an unknown one, or "random" in a
    single-player env or a cooperative one (no one to play against)."""
    if opponent not in OPPONENTS:
        raise ValueError(f"opponent must be one of {', '.join(map(repr, OPPONENTS))}, got {opponent!r}")
    others = {"random": "random players", "mcts": "a pure-MCTS player"}.get(opponent)
    if opponent != "self" and num_players < 2:
        raise ValueError(f"opponent={opponent!r} needs a multi-player env (the trained team against {others}); "
                         f"{env_id!r} has one player")
    if opponent != "self" and cooperative:
        raise ValueError(f"opponent={opponent!r} plays the trained team against {others}; {env_id!r} is cooperative "
                         "(its players share one goal, nobody wins): evaluate it with every player trained, "
                         "opponent='self'")
    return opponent


def team_partition(player_names: Sequence[str]) -> tuple[list[int], list[str]]:
    """(each player's team index, each team's name): the metrics' teams where the names form
    them, else a team per player named by the player (`player {i}` for unnamed players)."""
    names = [n if n else f"player {i}" for i, n in enumerate(player_names)]
    team_of = teams(names)
    if not team_of:
        return list(range(len(names))), names
    first = [team_of.index(t) for t in range(max(team_of) + 1)]
    return team_of, [team_name(names[i]) if team_of.count(team_of[i]) > 1 else names[i] for i in first]


def team_returns(episode_returns: np.ndarray, team_of: Sequence[int]) -> np.ndarray:
    """[K, P] players' returns -> [K, T] teams' (the mean of each team's players')."""
    team_of = np.asarray(team_of)
    return np.stack([episode_returns[:, team_of == t].mean(axis=1) for t in range(team_of.max() + 1)], axis=1)


def wins(team_return: np.ndarray) -> np.ndarray:
    """[K, T] teams' returns -> [K, T] bool: the team whose return is strictly above every other's."""
    if team_return.shape[1] < 2:
        return np.zeros(team_return.shape, bool)
    top = np.sort(team_return, axis=1)
    best, second = top[:, -1:], top[:, -2:-1]
    return (team_return == best) & (best > second)


class RandomOpponent:
    """Uniformly random actions for chosen rows of a batch: over each row's legal actions where
    the observation is a Dict with an `action_mask` (a row with none legal, a player not to move,
    gets the space's first action, which the env ignores), else over the action space."""

    def __init__(self, action_space: gym.spaces.Space, observation_space: gym.spaces.Space, seed: int):
        self.space = action_space
        self.masked = isinstance(observation_space, gym.spaces.Dict) and MASK_KEY in observation_space.spaces
        if self.masked and not isinstance(action_space, gym.spaces.Discrete):
            raise ValueError(f"a random opponent follows an {MASK_KEY!r} over Discrete actions, got {action_space}")
        self.rng = np.random.default_rng(seed)
        self._sampler = None
        if not isinstance(action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.Box)):
            self._sampler = action_space
            self._sampler.seed(int(self.rng.integers(2**31)))

    def __call__(self, obs: Any, rows: np.ndarray) -> np.ndarray:
        """Actions [len(rows), ...] for these rows of a batch's observation `obs`."""
        space, rng, k = self.space, self.rng, len(rows)
        if isinstance(space, gym.spaces.Discrete):
            if self.masked:
                mask = np.asarray(obs[MASK_KEY])[rows].astype(bool)
                scores = np.where(mask, rng.random(mask.shape), -1.0)  # the largest legal score: uniform
                return (scores.argmax(axis=1) + space.start).astype(space.dtype)
            return (rng.integers(space.n, size=k) + space.start).astype(space.dtype)
        if isinstance(space, gym.spaces.MultiDiscrete):
            return (rng.integers(space.nvec, size=(k, *space.shape)) + space.start).astype(space.dtype)
        if isinstance(space, gym.spaces.Box) and np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)):
            return rng.uniform(space.low, space.high, size=(k, *space.shape)).astype(space.dtype)
        sampler = self._sampler or space
        return np.stack([np.asarray(sampler.sample()) for _ in range(k)])
