"""JaxMARL's MPE (`jaxmarl/MPE_simple_spread_v3`, `jaxmarl/MPE_simple_tag_v3`, ...: JaxMARL's
names of PettingZoo's MPE tasks) as multi-player RawJaxEnvs, laid out as the host PettingZoo
backend lays out `pettingzoo/mpe2/...` (envs/process/pettingzoo_task.py), so the same agents and
presets train either:

- Players: JaxMARL's `agents`, in order (PettingZoo's `possible_agents` order: simple_tag's
  adversary_0..2, then agent_0); one row each (envs/jax/core.py). Every player must share one
  action space and one observation space, or `pad_observations=True` zero-pads 1-D observations
  at the end to the largest (bounds padded with 0); `add_player_id=True` appends the row's
  player one-hot (P entries in [0, 1]); `global_state=True` makes the observation a Dict
  {"obs": the player's, "state": every player's own observation (unpadded, without ids)
  concatenated, PettingZoo MPE's `state()`}. The same kwargs, the same meaning, as the host's.
- Episodes: MPE has no terminal state; the episode is cut after `max_steps` steps (JaxMARL's
  kwarg, 25 as PettingZoo's max_cycles): the JaxEnv's time limit, so the last step is truncated
  (PettingZoo's truncation), and the env auto-resets with every player. JaxMARL's own `done`
  (one step later: `state.step >= max_steps` before the step) is not used.
- Reward: JaxMARL's per player (simple_spread: local_ratio 0.5 of collisions, the rest the shared
  landmark-distance reward, as PettingZoo's); dynamics are MPE's (position moves with the
  velocity before the force updates it, as mpe2's core).
- kwargs: the env class's own (`num_agents`, `local_ratio`, `action_type`, ...), `max_steps`,
  `dt`, and the three above; anything else is a one-line ValueError naming the valid ones.
"""

from __future__ import annotations

import inspect
import io
import sys
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.jax.gymnax import check_kwargs
from envs.player_spaces import ID_KWARG, OWN_KWARGS, PAD_KWARG, STATE_KWARG, common_space, padded_space, with_player_ids

BASE_KWARGS = ("max_steps", "dt")  # SimpleMPE's, which every MPE class passes on


def _jaxmarl() -> Any:
    """jaxmarl, imported without its print about optional submodules. Its MABrax module (brax
    missing) sets sys.stdout and sys.stderr to sys.__stdout__ and sys.__stderr__ while it is
    imported: both are put back as they were."""
    saved = sys.stdout, sys.stderr, sys.__stdout__
    sys.stdout = sys.__stdout__ = io.StringIO()
    try:
        import jaxmarl
    finally:
        sys.stdout, sys.stderr, sys.__stdout__ = saved
    return jaxmarl


def ids() -> list[str]:
    """JaxMARL's names of PettingZoo's MPE tasks (`MPE_<pettingzoo name>`; not its own FACMAC
    variants, which are no PettingZoo task)."""
    registered = _jaxmarl().registration.registered_envs
    return [e for e in registered if e.startswith("MPE_simple") and "facmac" not in e]


def _gym_space(space: Any, task_id: str, what: str) -> gym.spaces.Space:
    """A JaxMARL space (Discrete or Box) as Gymnasium's."""
    kind = type(space).__name__
    if kind == "Discrete":
        return gym.spaces.Discrete(int(space.n), dtype=np.int64)  # as gymnax's and the host pool's
    if kind == "Box":
        dtype = np.dtype(getattr(space, "dtype", np.float32))
        shape = tuple(space.shape)
        low = np.broadcast_to(np.asarray(space.low, dtype), shape)
        high = np.broadcast_to(np.asarray(space.high, dtype), shape)
        return gym.spaces.Box(low, high, shape, dtype)
    raise ValueError(f"{task_id}: its {what} space {kind} is not supported (Discrete and Box are)")


class JaxMarlEnv:
    """A RawJaxEnv over a JaxMARL MPE env: state = (its State, key data for its next step)."""

    def __init__(self, name: str, **kwargs: Any):
        jaxmarl = _jaxmarl()
        from jaxmarl.environments.mpe.simple import SimpleMPE

        task_id = self.task_id = f"jaxmarl/{name}"
        options = {k: kwargs.pop(k, False) for k in OWN_KWARGS}
        for k, v in options.items():
            if not isinstance(v, bool):
                raise ValueError(f"{k} must be True or False, got {v!r}")
        probe = jaxmarl.make(name)
        ctor = [p for p in inspect.signature(type(probe).__init__).parameters if p not in ("self", "kwargs")]
        check_kwargs(task_id, kwargs, ctor, BASE_KWARGS, OWN_KWARGS)
        if not isinstance(probe, SimpleMPE):
            raise ValueError(f"{task_id} is not an MPE env")
        env = self.env = jaxmarl.make(name, **kwargs) if kwargs else probe
        self.agents = list(env.agents)
        self.player_names = tuple(self.agents)
        P = self.num_players = len(self.agents)
        self._pad, self._ids, self._state = options[PAD_KWARG], options[ID_KWARG], options[STATE_KWARG]
        self.max_episode_steps = int(env.max_steps)
        if self.max_episode_steps < 1:
            raise ValueError(f"{task_id}: max_steps must be a positive int, got {env.max_steps!r}")
        self.action_space = common_space(task_id, "action", {a: _gym_space(env.action_space(a), task_id, "action")
                                                        for a in self.agents})
        # the spaces of what the env returns (JaxMARL's Box says float32; its obs are float32)
        leaves = jax.eval_shape(lambda k: env.reset(k)[0], jax.random.key(0))
        raw = {a: gym.spaces.Box(-np.inf, np.inf, tuple(leaves[a].shape), np.dtype(leaves[a].dtype)) for a in self.agents}
        obs = padded_space(task_id, raw) if self._pad else common_space(task_id, "observation", raw)
        self._size = obs.shape[0] if len(obs.shape) == 1 else None
        if self._ids:
            obs = with_player_ids(task_id, obs, P)
        if self._state:
            state = gym.spaces.Box(-np.inf, np.inf, (sum(int(np.prod(s.shape)) for s in raw.values()),), np.float32)
            obs = gym.spaces.Dict({"obs": obs, "state": state})
        self.observation_space = obs
        self._obs_dtype = obs["obs"].dtype if self._state else obs.dtype

    def _obs(self, per_agent: dict[str, jax.Array]) -> Any:
        """JaxMARL's per-agent dict as the rows' [P, ...] (padded, ids, global state as asked)."""
        leaves = [per_agent[a] for a in self.agents]
        if self._pad:
            leaves = [jnp.pad(x, (0, self._size - x.shape[0])) for x in leaves]
        obs = jnp.stack(leaves).astype(self._obs_dtype)
        if self._ids:
            obs = jnp.concatenate([obs, jnp.eye(self.num_players, dtype=obs.dtype)], axis=1)
        if self.num_players == 1:
            obs = obs[0]
        if not self._state:
            return obs
        state = jnp.concatenate([per_agent[a].reshape(-1).astype(jnp.float32) for a in self.agents])
        if self.num_players > 1:
            state = jnp.broadcast_to(state, (self.num_players, *state.shape))
        return {"obs": obs, "state": state}

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        key, now = jax.random.split(key)
        obs, state = self.env.reset(now)
        return (state, jax.random.key_data(key)), self._obs(obs)

    def step(self, state: Any, action: jax.Array):
        state, key_data = state
        key, now = jax.random.split(jax.random.wrap_key_data(key_data))
        if self.num_players == 1:
            action = action[None]
        actions = {a: action[i] for i, a in enumerate(self.agents)}
        obs, state, reward, _, _ = self.env.step_env(now, state, actions)
        reward = jnp.stack([jnp.asarray(reward[a], jnp.float32) for a in self.agents])
        if self.num_players == 1:
            reward = reward[0]
        false = jnp.bool_(False)  # MPE has no terminal state: the time limit (max_steps) ends an episode
        return (state, jax.random.key_data(key)), self._obs(obs), reward, false, false


make = JaxMarlEnv
