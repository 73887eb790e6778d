"""A trained agent out of its run directory: the agent rebuilt from the run's config.json (or
the class or object the caller gives: `agent=`), its networks restored from a checkpoint (only
the networks are read), and `Policy`, the jitted act a user calls outside the framework
(`sebulba.load_policy`)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from sebulba import observations
from sebulba.agent import Agent, name_problem, reload_problem
from sebulba.experiment.run_dir import RunDir
import envs
from sebulba.loop.checkpoint import complete_steps, read_networks
from sebulba.loop.evaluator import acting
from sebulba.types import EnvStep


def open_run(path: str | os.PathLike) -> tuple[RunDir, dict]:
    """The run directory and its config.json; FileNotFoundError naming the path if it is not one."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"run directory {p} does not exist")
    run = RunDir(p)
    if not run.config_path.is_file():
        raise FileNotFoundError(f"{p} is not a run directory: it has no {RunDir.CONFIG}")
    return run, json.loads(run.config_path.read_text())


def checkpoint_steps(run: RunDir) -> list[int]:
    """The learner steps of the run's complete checkpoints, oldest first."""
    return complete_steps(run.checkpoint_dir)


def build_agent(record: dict, env_kwargs: dict[str, Any] | None = None, run: RunDir | None = None,
                agent: Agent | type[Agent] | None = None, agent_config: dict[str, Any] | None = None) -> Agent:
    """The run's agent for its env (with `env_kwargs` over the run's own): by default its class
    imported by the name config.json records, built with the config recorded there (with
    `agent_config`'s fields over it: what acting reads, e.g. MuZero's `num_simulations`). `agent`: a
    class to build instead of importing one (e.g. defined in a script's `__main__`), or an agent
    object, used as it is. With `run`, a ValueError names its directory."""
    try:
        if isinstance(agent, Agent):
            if agent_config:
                raise ValueError("agent_config is for an agent load_policy builds: the agent object given is used as it is")
            return agent
        return _build_agent(record, env_kwargs, agent, agent_config)
    except ValueError as e:
        if run is None:
            raise
        raise ValueError(f"{run.path}: {e}") from None


def _build_agent(record: dict, env_kwargs: dict[str, Any] | None, cls: type[Agent] | None,
                 agent_config: dict[str, Any] | None = None) -> Agent:
    spec = record.get("agent")
    if not isinstance(spec, dict) or "class" not in spec or "loop" not in record:
        raise ValueError("the run's config.json names no agent and loop: it was not written by a sebulba entry point")
    if cls is None:
        cls = _import_agent(spec["class"])
    elif not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise ValueError(f"agent must be an Agent subclass or an Agent object, got {cls!r}")
    problem = reload_problem(cls, by_name=False)
    if problem is not None:
        raise ValueError(f"the run's agent {problem}")
    default = inspect.signature(cls.__init__).parameters["config"].default
    fields = {f.name for f in dataclasses.fields(default)}
    recorded = spec.get("config") or {}
    unknown = sorted(set(recorded) - fields)
    if unknown:
        raise ValueError(f"the run's agent config has {', '.join(unknown)}, which {cls.__qualname__}'s "
                         f"{type(default).__name__} lacks: the class is not the one that ran (pass the agent object to "
                         "sebulba.load_policy(run_dir, agent=...) to restore its networks anyway)")
    misspelled = sorted(set(agent_config or {}) - fields)
    if misspelled:
        raise ValueError(f"agent_config: {type(default).__name__} has no {', '.join(misspelled)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in {**recorded, **(agent_config or {})}.items()}
    loop = record["loop"]
    kwargs = {**loop.get("env_kwargs", {}), **dict(env_kwargs or {})}
    spec = envs.make_spec(loop["env_id"], **kwargs)
    config = dataclasses.replace(default, **values)
    try:
        return cls(spec, config=config)
    except TypeError as e:  # the constructor takes the config, but not in this form
        raise ValueError(f"the run's agent cannot be rebuilt as {cls.__qualname__}(env_spec, config=config): {e} (give "
                         "it the form __init__(self, env_spec, config=Config()), or pass the agent object to "
                         "sebulba.load_policy(run_dir, agent=...))") from None


def _import_agent(name: str) -> type[Agent]:
    """The agent class config.json names, imported."""
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(f"the run's agent {problem}")
    module, _, qualname = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module), qualname)
    except (ImportError, AttributeError, ValueError) as e:
        raise ValueError(f"the run's agent {name} cannot be imported here ({e}); evaluate it where its module is "
                         "importable, or pass the agent to sebulba.load_policy(run_dir, agent=...)") from None


def run_replicas(run: RunDir) -> int:
    """How many replicas the run trained (`--num_seeds` of an Anakin run; else 1)."""
    record = json.loads(run.config_path.read_text()) if run.config_path.is_file() else {}
    return int(record.get("loop", {}).get("num_seeds", 1) or 1)


def restore_networks(run: RunDir, agent: Agent, step: int | None = None, replica: int = 0) -> tuple[int, Any]:
    """(step, networks as host arrays) of checkpoint `step` (default: the latest complete one).
    `replica`: which of a `--num_seeds` run's replicas (replica r trained with seed --seed + r)."""
    replicas = run_replicas(run)
    if not isinstance(replica, int) or isinstance(replica, bool) or not 0 <= replica < replicas:
        what = f"replicas 0..{replicas - 1} (--num_seeds {replicas})" if replicas > 1 else "one replica (replica 0)"
        raise ValueError(f"{run.path} has {what}; replica {replica!r} is not one of them")
    steps = checkpoint_steps(run)
    if not steps:
        raise FileNotFoundError(f"{run.path} has no complete checkpoint in {run.checkpoint_dir}")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise FileNotFoundError(f"{run.path} has no checkpoint at learner step {step}; it has {steps}")
    shapes = jax.eval_shape(agent.init_networks, jax.random.key(0))
    lead = (replicas,) if replicas > 1 else ()  # a --num_seeds run's networks: every replica's
    like = jax.tree.map(lambda x: np.zeros((*lead, *x.shape), x.dtype), shapes)
    try:
        networks = read_networks(run.checkpoint_dir, step, like)
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"checkpoint {step} of {run.path} does not match the run's agent "
                         f"({type(agent).__name__} as config.json describes it): {e}") from None
    if jax.tree.structure(networks) != jax.tree.structure(like):  # e.g. NamedTuples restored as dicts
        networks = jax.tree.unflatten(jax.tree.structure(like), jax.tree.leaves(networks))
    for got, want in zip(jax.tree.leaves(networks), jax.tree.leaves(like)):
        if np.shape(got) != want.shape:
            raise ValueError(f"checkpoint {step} of {run.path} does not match the run's agent: a leaf of shape "
                             f"{np.shape(got)} where the agent has {want.shape}")
    return step, jax.tree.map(lambda x: np.asarray(x)[replica] if lead else np.asarray(x), networks)


class Policy:
    """A trained agent's policy: `act(obs, state=None) -> (action, state)`, jitted, on a batch of
    observations in the pool's layout (e.g. Atari: uint8 [B, 4, 84, 84]). `state` carries the
    agent's step state (R2D2's recurrent state, RNG keys) between calls: pass None at the start of
    episodes (the first call, or after a reset). Greedy (`Agent.evaluation_step`) by default."""

    def __init__(self, agent: Agent, networks: Any, greedy: bool = True, seed: int = 0):
        self.agent, self.networks, self.greedy = agent, networks, greedy
        self._key = jax.random.key(seed)
        self._act = acting(agent, greedy)

    def act(self, obs: Any, state: Any = None, reward: np.ndarray | None = None,
            env_state: Any = None) -> tuple[np.ndarray, Any]:
        """Actions for a batch of observations. `reward`: the rewards that came with them (R2D2's
        network takes the previous reward; default 0). `env_state`: for an agent that plans with
        the env's true model (`plans_with_env`: AlphaZero), the envs' own states (a JAX env's raw
        states, one per env: `sebulba.loop.state_pool.StatePool.state`, a JaxEnv's `lanes.state`)."""
        if self.agent.plans_with_env and env_state is None:
            raise ValueError(f"{type(self.agent).__name__} plans with the env's true model: act(obs, env_state=...) needs "
                             "the envs' own states (a StatePool's .state, a JaxEnv's lanes.state)")
        obs = observations.check_observation_batch(obs, self.agent.env_spec.observation_space)
        batch = observations.leading_dim(obs)
        first = state is None
        if first:
            self._key, key = jax.random.split(self._key)
            state = self.agent.init_step_state(self.networks, batch, key)
        reward = np.zeros(batch, np.float32) if reward is None else np.asarray(reward, np.float32)
        flags = np.zeros(batch, bool)
        env_step = EnvStep(obs, reward, flags, flags, np.full(batch, first), () if env_state is None else env_state)
        action, state = self._act(self.networks, state, env_step)
        return np.asarray(action), state


def load_policy(run_dir: str | os.PathLike, step: int | None = None, greedy: bool = True, seed: int = 0,
                agent: Agent | type[Agent] | None = None, replica: int = 0,
                agent_config: dict[str, Any] | None = None) -> Policy:
    """The policy of a run directory's latest checkpoint (or learner step `step`); of a
    `--num_seeds` run, replica `replica`'s (the one trained with seed --seed + replica). `agent`: the
    agent's class (built with the run's recorded config) or an agent object (used as it is)
    when the class cannot be imported by the name config.json records, e.g. one defined in the
    script that trained it; its networks must have the checkpoint's structure. `agent_config`:
    fields of the agent's config to act with instead of the recorded ones (e.g. a planning agent's
    search: `agent_config={"num_simulations": 50}`); a name the config lacks is a ValueError."""
    run, record = open_run(run_dir)
    built = build_agent(record, run=run, agent=agent, agent_config=agent_config)
    _, networks = restore_networks(run, built, step, replica)
    return Policy(built, networks, greedy, seed)
