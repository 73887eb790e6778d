"""A trained agent out of its run directory: the agent rebuilt from the run's config.json, its
networks restored from a checkpoint (only the networks are read), and `Policy`, the jitted act a
user calls outside the framework (`sebulba.load_policy`)."""

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

import envs
from sebulba import observations
from sebulba.agent import Agent, reload_problem
from sebulba.experiment.run_dir import RunDir
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


def build_agent(record: dict, env_kwargs: dict[str, Any] | None = None, run: RunDir | None = None) -> Agent:
    """The run's agent (its class and config from config.json) for its env (with `env_kwargs`
    over the run's own). With `run`, a ValueError names its directory."""
    try:
        return _build_agent(record, env_kwargs)
    except ValueError as e:
        if run is None:
            raise
        raise ValueError(f"{run.path}: {e}") from None


def _build_agent(record: dict, env_kwargs: dict[str, Any] | None) -> Agent:
    spec = record.get("agent")
    if not isinstance(spec, dict) or "class" not in spec or "loop" not in record:
        raise ValueError("the run's config.json names no agent and loop: it was not written by a sebulba entry point")
    module, _, name = spec["class"].rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"the run's agent {spec['class']} cannot be imported here ({e}); evaluate it where its "
                         "module is importable") from None
    problem = reload_problem(cls)
    if problem is not None:
        raise ValueError(f"the run's agent {problem}")
    default = inspect.signature(cls.__init__).parameters["config"].default
    fields = {f.name for f in dataclasses.fields(default)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["config"].items() if k in fields}
    loop = record["loop"]
    kwargs = {**loop.get("env_kwargs", {}), **dict(env_kwargs or {})}
    return cls(envs.make_spec(loop["env_id"], **kwargs), dataclasses.replace(default, **values))


def restore_networks(run: RunDir, agent: Agent, step: int | None = None) -> tuple[int, Any]:
    """(step, networks as host arrays) of checkpoint `step` (default: the latest complete one)."""
    steps = checkpoint_steps(run)
    if not steps:
        raise FileNotFoundError(f"{run.path} has no complete checkpoint in {run.checkpoint_dir}")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise FileNotFoundError(f"{run.path} has no checkpoint at learner step {step}; it has {steps}")
    shapes = jax.eval_shape(agent.init_networks, jax.random.key(0))
    like = jax.tree.map(lambda x: np.zeros(x.shape, x.dtype), shapes)
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
    return step, jax.tree.map(np.asarray, networks)


class Policy:
    """A trained agent's policy: `act(obs, state=None) -> (action, state)`, jitted, on a batch of
    observations in the pool's layout (e.g. Atari: uint8 [B, 4, 84, 84]). `state` carries the
    agent's step state (R2D2's recurrent state, RNG keys) between calls: pass None at the start of
    episodes (the first call, or after a reset). Greedy (`Agent.evaluation_step`) by default."""

    def __init__(self, agent: Agent, networks: Any, greedy: bool = True, seed: int = 0):
        self.agent, self.networks, self.greedy = agent, networks, greedy
        self._key = jax.random.key(seed)
        self._act = acting(agent, greedy)

    def act(self, obs: Any, state: Any = None, reward: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """Actions for a batch of observations. `reward`: the rewards that came with them (R2D2's
        network takes the previous reward; default 0)."""
        obs = observations.check_observation_batch(obs, self.agent.env_spec.observation_space)
        batch = observations.leading_dim(obs)
        first = state is None
        if first:
            self._key, key = jax.random.split(self._key)
            state = self.agent.init_step_state(self.networks, batch, key)
        reward = np.zeros(batch, np.float32) if reward is None else np.asarray(reward, np.float32)
        flags = np.zeros(batch, bool)
        env_step = EnvStep(obs, reward, flags, flags, np.full(batch, first))
        action, state = self._act(self.networks, state, env_step)
        return np.asarray(action), state


def load_policy(run_dir: str | os.PathLike, step: int | None = None, greedy: bool = True, seed: int = 0) -> Policy:
    """The policy of a run directory's latest checkpoint (or learner step `step`)."""
    run, record = open_run(run_dir)
    agent = build_agent(record, run=run)
    _, networks = restore_networks(run, agent, step)
    return Policy(agent, networks, greedy, seed)
