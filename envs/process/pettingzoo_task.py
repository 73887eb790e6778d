"""PettingZoo envs in worker processes, named `pettingzoo/<module>/<env>`: `<module>.<env>` of
PettingZoo's own families (`pettingzoo/classic/tictactoe_v3` is `pettingzoo.classic.tictactoe_v3`)
or of a package of its own (`pettingzoo/mpe2/simple_spread_v3` is `mpe2.simple_spread_v3`).

A module with a `parallel_env` (a ParallelEnv, or PettingZoo's own `aec_to_parallel` of an AEC env
that allows it) runs as `ParallelPlayers`; one with only an AEC `env` (turn-based games) runs as
`TurnPlayers` (envs/process/pettingzoo_env.py). The players are `possible_agents`, in order; their
count is the pool's max_num_players. Every player must share one observation space and one action
space (one batch of rows, as EnvPool's per-player fields have one shape); envs whose players differ
(MPE's simple_tag: adversaries see 16 numbers, the good agent 14) are refused by name, unless
`pad_observations=True` (SuperSuit's pad_observations): 1-D Box observations of one dtype are
padded with zeros at the end to the largest (bounds padded with 0); a row's player id tells
which kind it is. Action spaces must be equal. `add_player_id=True` appends the one-hot of the
row's player (P entries, bounds 0 and 1) to 1-D Box observations (after any padding): players that
share networks (IPPO's parameter sharing) can then act differently. `global_state=True` makes the
observation a Dict {"obs": the player's, "state": the env's `state()`} (a centralised critic's
input, MAPPO's). Other kwargs go to the env's constructor."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import warnings
from typing import Any

import gymnasium as gym

from envs.config import STANDARD_KWARGS, PoolConfig
from envs.player_spaces import OWN_KWARGS, STATE_KWARG, common_space, padded_space, with_player_ids
from envs.process.gym_task import GymTask, retry_config, task_of_probe
from envs.process.pettingzoo_env import OnePlayer, ParallelPlayers, PlayersEnv, TurnPlayers
from envs.ids import PETTINGZOO_PREFIX

INSTALL_HINT = 'PettingZoo envs need the extra `multiagent` (pip install -e ".[multiagent]": pettingzoo, mpe2)'


def _state_space(task_id: str, env: Any) -> gym.spaces.Box:
    """The env's global state space (PettingZoo's `state_space`, which `state()` fills)."""
    space = getattr(env, "state_space", None)
    if not isinstance(space, gym.spaces.Box):
        raise ValueError(f"{STATE_KWARG}=True: {task_id!r} has no global state (PettingZoo's state_space and state()), "
                         f"got state_space={space!r}")
    return space


def _unchecked(env: Any) -> Any:
    """env less PettingZoo's outer wrappers that only check its use: OrderEnforcing (no step before
    reset: the pool always resets first) and, for discrete actions, AssertOutOfBounds (the pool checks
    every action's range before it sends a batch). They return what the env returns and cost about
    half of an MPE step in attribute forwarding; wrappers that change behaviour (ClipOutOfBounds,
    TerminateIllegal) stay, and so does everything beneath the first of them."""
    from pettingzoo.utils.conversions import aec_to_parallel_wrapper
    from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper

    if isinstance(env, aec_to_parallel_wrapper):
        env.aec_env = _unchecked(env.aec_env)
        return env
    while isinstance(env, OrderEnforcingWrapper) or (
        isinstance(env, AssertOutOfBoundsWrapper)
        and all(isinstance(env.action_space(a), (gym.spaces.Discrete, gym.spaces.MultiDiscrete)) for a in env.possible_agents)
    ):
        env = env.env
    return env


@dataclasses.dataclass(frozen=True)
class PettingZooFactory:
    """Builds one env of a PettingZoo module as a `PlayersEnv` (picklable: it travels to the workers)."""

    task_id: str
    module: str
    kwargs: dict[str, Any]
    pad_observations: bool = False
    add_player_id: bool = False
    global_state: bool = False
    render_mode: str | None = None  # "rgb_array": the env draws frames (the pool's render)

    def __call__(self) -> PlayersEnv | OnePlayer:
        kwargs = self.kwargs if self.render_mode is None else {**self.kwargs, "render_mode": self.render_mode}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # PettingZoo 1.27 on its `<family>.<env>` modules
            mod = importlib.import_module(self.module)
            parallel = hasattr(mod, "parallel_env")
            try:
                env = mod.parallel_env(**kwargs) if parallel else mod.env(**kwargs)
            except TypeError as e:
                if self.render_mode is None or "render_mode" not in str(e):
                    raise
                raise ValueError(f"render_mode={self.render_mode!r}: {self.task_id!r} does not draw frames ({e})") from None
        modes = list(getattr(env, "metadata", {}).get("render_modes", []))
        if self.render_mode is not None and self.render_mode not in modes:
            env.close()
            raise ValueError(f"render_mode={self.render_mode!r}: {self.task_id!r} does not draw frames (its render_modes: {modes})")
        env = _unchecked(env)
        agents = env.possible_agents
        obs_spaces = {a: env.observation_space(a) for a in agents}
        act = common_space(self.task_id, "action", {a: env.action_space(a) for a in agents})
        kind = ParallelPlayers if parallel else TurnPlayers
        obs = (padded_space if self.pad_observations else
               lambda task_id, spaces: common_space(task_id, "observation", spaces))(self.task_id, obs_spaces)
        if self.add_player_id:
            obs = with_player_ids(self.task_id, obs, len(agents))
        state = _state_space(self.task_id, env) if self.global_state else None
        players = kind(env, obs, act, flat=self.pad_observations, player_ids=self.add_player_id, state_space=state)
        return players if len(agents) > 1 else OnePlayer(players)  # one player: a single-player pool


def _module(task_id: str) -> str:
    """The module of `pettingzoo/<module>/<env>`: PettingZoo's own family first, then a package."""
    parts = task_id[len(PETTINGZOO_PREFIX) :].split("/")
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"task id {task_id!r}: PettingZoo ids look like 'pettingzoo/<module>/<env>', e.g. 'pettingzoo/mpe2/simple_spread_v3'")
    family, name = parts
    if importlib.util.find_spec("pettingzoo") is None:
        raise ImportError(f"{task_id!r}: {INSTALL_HINT}")
    for candidate in (f"pettingzoo.{family}", family):
        try:
            found = importlib.util.find_spec(candidate) is not None and importlib.util.find_spec(f"{candidate}.{name}") is not None
        except ModuleNotFoundError:
            found = False
        if found:
            return f"{candidate}.{name}"
    raise ValueError(f"unknown PettingZoo env {task_id!r}: neither pettingzoo.{family}.{name} nor {family}.{name} can be imported ({INSTALL_HINT})")


def configure(task_id: str, env_type: str, kwargs: dict[str, Any]) -> GymTask:
    """Validates kwargs by building one probe env in this process, and reads its players and spaces."""
    kwargs = dict(kwargs)
    retry = retry_config(kwargs)
    env_kwargs = {k: v for k, v in kwargs.items() if k not in STANDARD_KWARGS and k not in OWN_KWARGS}
    options = {k: kwargs.get(k, False) for k in OWN_KWARGS}
    for k, v in options.items():
        if not isinstance(v, bool):
            raise ValueError(f"{k} must be True or False, got {v!r}")
    # the env draws rgb_array frames for either mode ("human": the pool shows them); other values: refused below
    render_mode = "rgb_array" if kwargs.get("render_mode") in ("rgb_array", "human") else None
    factory = PettingZooFactory(task_id, _module(task_id), env_kwargs, *options.values(), render_mode=render_mode)
    try:
        probe = factory()
    except TypeError as e:
        raise ValueError(f"bad kwarg for task {task_id!r}: {e}") from e
    except ImportError as e:  # e.g. chess_v6 without the `chess` package
        raise ImportError(f"task {task_id!r} cannot be built on this install: {e}") from e
    try:
        config = PoolConfig.create(task_id, env_type, "process", None, kwargs, None, len(probe.players))
    except BaseException:
        probe.close()
        raise
    return task_of_probe(task_id, config, factory, probe, retry)
