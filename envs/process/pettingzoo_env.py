"""One PettingZoo env as a worker's env: every player's observation, reward and flags stacked on a
player axis in `possible_agents` order, so the worker writes an env's P rows as it writes one.

- `step(action (P, ...))` -> (obs (P, ...), reward (P,), terminated, truncated, info): the episode
  flags are the env's (its episode is over when no agent is left), info is {player index: info}
  of the players whose info is not empty; `flags` holds each player's (terminated, truncated,
  alive) of the last step or reset.
- Agents that leave mid-episode (PettingZoo: an agent is dropped from `env.agents` once terminated
  or truncated, the others go on): a gone player's row keeps its last observation, reward 0, its
  terminated/truncated flags stay set until the env resets, and `alive` is False. `alive` is True
  where the player was in `env.agents` when the step began (its action counted), so the step on
  which it terminates is alive and done; later rows are not alive.
- `ParallelPlayers` steps a `ParallelEnv` (PettingZoo's own `parallel_env`, which for AEC envs that
  allow it is `aec_to_parallel`). `TurnPlayers` plays a turn-based AEC env (classic board games,
  which PettingZoo will not convert): one pool step is one move by `env.agent_selection`, whose
  action is the one taken (the others' are ignored); every player's row shows its observation
  after the move and the move's rewards. The player to move is the one whose `action_mask` is
  not all zeros (PettingZoo's classic envs zero the others' masks).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from envs.tree import build, get_leaf, leaf_spaces


class PlayersEnv:
    """What both adapters share: spaces, the stacked observation buffers and the players' flags.
    `flat`: 1-D observations written at the start of their row (zero-padded to the largest);
    `player_ids`: the last P entries of player i's row are the one-hot of i (the spaces given
    are the widened ones). `state_space`: the observation is {"obs": the player's, "state": the
    env's global state (PettingZoo's `state()`), the same in every player's row}."""

    def __init__(
        self, env: Any, observation_space: gym.spaces.Space, action_space: gym.spaces.Space, flat: bool = False,
        player_ids: bool = False, state_space: gym.spaces.Box | None = None,
    ):
        self.env = env
        self._flat = flat or player_ids
        self._player_ids = player_ids
        self.players = list(env.possible_agents)
        self.index = {a: i for i, a in enumerate(self.players)}
        self.action_space = action_space
        p = len(self.players)
        self._leaves = [(path, np.zeros((p, *s.shape), s.dtype)) for path, s in leaf_spaces(observation_space)]
        bufs = {path: buf for path, buf in self._leaves}
        self._obs = build(lambda path, _: bufs[path], observation_space)
        self.observation_space = observation_space
        self._state = None
        if state_space is not None:
            self._state = np.zeros((p, *state_space.shape), state_space.dtype)
            self.observation_space = gym.spaces.Dict({"obs": observation_space, "state": state_space})
            self._obs = {"obs": self._obs, "state": self._state}
        self.terminated, self.truncated, self.alive = np.zeros(p, bool), np.zeros(p, bool), np.zeros(p, bool)
        self._to_action = int if isinstance(action_space, gym.spaces.Discrete) else np.array

    @property
    def flags(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.terminated, self.truncated, self.alive

    def _write(self, observations: dict[str, Any]) -> None:
        if self._state is not None:
            self._state[:] = self.env.state()
        if self._flat:
            (_, buf), = self._leaves
            for agent, o in observations.items():
                buf[self.index[agent], : len(o)] = o
            return
        for agent, o in observations.items():
            i = self.index[agent]
            for path, buf in self._leaves:
                buf[i] = get_leaf(o, path)

    def _start(self, observations: dict[str, Any], infos: dict[str, Any]) -> tuple[Any, dict[int, Any]]:
        for _, buf in self._leaves:
            buf[:] = 0
        if self._player_ids:
            (_, buf), = self._leaves
            p = len(self.players)
            buf[:, -p:] = np.eye(p, dtype=buf.dtype)
        self.terminated[:] = self.truncated[:] = False
        self.alive[:] = [a in self.env.agents for a in self.players]
        self._write(observations)
        return self._obs, self._infos(infos)

    def _end(self, terminations: dict[str, bool], truncations: dict[str, bool]) -> tuple[bool, bool]:
        for agent, t in terminations.items():
            self.terminated[self.index[agent]] |= bool(t)
        for agent, t in truncations.items():
            self.truncated[self.index[agent]] |= bool(t)
        over = not self.env.agents
        terminated = over and bool(self.terminated.any())
        return terminated, over and not terminated

    def _infos(self, infos: dict[str, Any]) -> dict[int, Any]:
        return {self.index[a]: info for a, info in infos.items() if info}

    def render(self) -> Any:
        """The env's frame (PettingZoo's render, made with render_mode="rgb_array"): one for all players."""
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class OnePlayer:
    """A one-player PettingZoo env as a single-player worker env (a pool of max_num_players 1
    has no player axis): the player axis taken off the results and put on the action."""

    def __init__(self, players: PlayersEnv):
        self.players_env = players
        self.players = players.players
        self.observation_space, self.action_space = players.observation_space, players.action_space

    def _one(self, obs: Any) -> Any:
        return {k: self._one(v) for k, v in obs.items()} if isinstance(obs, dict) else obs[0]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, infos = self.players_env.reset(seed=seed, options=options)
        return self._one(obs), infos.get(0, {})

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, infos = self.players_env.step(np.asarray(action)[None])
        return self._one(obs), float(reward[0]), terminated, truncated, infos.get(0, {})

    def render(self) -> Any:
        return self.players_env.render()

    def close(self) -> None:
        self.players_env.close()


class ParallelPlayers(PlayersEnv):
    """A PettingZoo `ParallelEnv`: every player present acts on each step."""

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[int, Any]]:
        return self._start(*self.env.reset(seed=seed, options=options))

    def step(self, action: np.ndarray) -> tuple[Any, np.ndarray, bool, bool, dict[int, Any]]:
        acting = list(self.env.agents)
        self.alive[:] = False
        self.alive[[self.index[a] for a in acting]] = True
        obs, rewards, terminations, truncations, infos = self.env.step(
            {a: self._to_action(action[self.index[a]]) for a in acting}
        )
        reward = np.zeros(len(self.players), np.float32)
        for agent, r in rewards.items():
            reward[self.index[agent]] = r
        self._write(obs)
        return (self._obs, reward, *self._end(terminations, truncations), self._infos(infos))


class TurnPlayers(PlayersEnv):
    """A turn-based PettingZoo AEC env: each pool step is one move of the player to move."""

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[int, Any]]:
        env = self.env
        env.reset(seed=seed, options=options)
        return self._start({a: env.observe(a) for a in env.agents}, env.infos)

    def step(self, action: np.ndarray) -> tuple[Any, np.ndarray, bool, bool, dict[int, Any]]:
        env = self.env
        self.alive[:] = [a in env.agents for a in self.players]
        reward = np.zeros(len(self.players), np.float32)
        mover = env.agent_selection
        env.step(self._to_action(action[self.index[mover]]))
        self._add(reward, env.rewards)
        self._write({a: env.observe(a) for a in env.agents})  # before dead turns remove done agents
        infos = self._infos(env.infos)
        ended = self._end(env.terminations, env.truncations)
        while env.agents and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            env.step(None)  # PettingZoo's rule: a done agent's turn is stepped with None, which removes it
            self._add(reward, env.rewards)
            ended = self._end(env.terminations, env.truncations)
        return (self._obs, reward, *ended, infos)

    def _add(self, reward: np.ndarray, rewards: dict[str, float]) -> None:
        for agent, r in rewards.items():
            reward[self.index[agent]] += r
