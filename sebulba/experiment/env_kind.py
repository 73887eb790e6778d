"""What kind of task an env id is, read from its spaces, so an entry point picks the preset
that suits it (and an agent that cannot take the env's spaces says so before anything is built)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

import envs
from envs.jax.registry import is_jax_id


@dataclasses.dataclass(frozen=True)
class EnvKind:
    """`observations`: "atari" (ALE's stacked frames), "minatar" (gymnax's MinAtar games: [C, 10,
    10] planes of 0/1 floats), "image" (another uint8 image), "tabular"
    (a Discrete state: toy-text tasks such as FrozenLake, whose rewards are sparse), "structured"
    (a Dict or Tuple of leaves: MiniGrid, SignalCorridor-v0) or "vector" (a Box of numbers, e.g.
    classic control). `actions`: "discrete", "multi_discrete" (a MultiDiscrete: one categorical
    per dimension in IMPALA and PPO) or "continuous" (a Box, or another space). `num_players`: rows
    per env, P of a multi-player task (PettingZoo's; envs/players.py), else 1. `action_mask`: the
    observation is a Dict with PettingZoo's "action_mask" of the legal moves (its classic games)."""

    env_id: str
    observations: str
    actions: str
    action_space: gym.spaces.Space
    native: bool = False  # a built-in task (classic control) or a JAX-native one, not a Gymnasium env in workers
    num_players: int = 1
    action_mask: bool = False


def env_kind(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> EnvKind:
    """The kind of env_id, from `envs.make_spec` (builds no pool)."""
    jax_native = is_jax_id(env_id)
    spec = envs.make_spec(env_id, **dict(env_kwargs or {}))
    obs, act = spec.observation_space, spec.action_space
    if envs.is_atari(env_id) or envs.is_atari_players(env_id):
        observations = "atari"
    elif jax_native and env_id.endswith("-MinAtar"):
        observations = "minatar"
    elif isinstance(obs, gym.spaces.Discrete):
        observations = "tabular"
    elif isinstance(obs, (gym.spaces.Dict, gym.spaces.Tuple)):
        observations = "structured"
    elif isinstance(obs, gym.spaces.Box) and obs.dtype.name == "uint8" and len(obs.shape) == 3:
        observations = "image"
    else:
        observations = "vector"
    if isinstance(act, gym.spaces.Discrete):
        actions = "discrete"
    elif isinstance(act, gym.spaces.MultiDiscrete):
        actions = "multi_discrete"
    else:
        actions = "continuous"
    # JAX-native envs count as built-in tasks: gymnax's classic control takes the classic-control presets
    native = jax_native or envs.resolve(env_id, (env_kwargs or {}).get("backend"))[0] == "native"
    mask = isinstance(obs, gym.spaces.Dict) and "action_mask" in obs.spaces
    return EnvKind(env_id, observations, actions, act, native, spec.config["max_num_players"], mask)


def require_discrete_actions(agent: str, kind: EnvKind) -> None:
    """A ValueError, in one line, for an agent that takes only Discrete actions."""
    if kind.actions != "discrete":
        raise ValueError(f"{agent} needs a Discrete action space; {kind.env_id} has {kind.action_space}")
