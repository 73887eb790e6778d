"""The pytrees that cross module boundaries: what an agent sees, what it emits, what it learns from."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

PyTree = Any
Metrics = dict[str, jax.Array]


class EnvStep(NamedTuple):
    """What the envs returned, batched over the inferencer's envs (leading axis B).

    `first` marks an observation that starts an episode (the env was just reset: its reward is
    0 and the action taken before it was discarded). `terminated`/`truncated` mark the last
    observation of an episode.

    `state` is for an agent that plans with the env's true model (`Agent.plans_with_env`:
    AlphaZero): the envs' own states (a JAX env's raw states, one per env, not per row), filled
    where the env is a JAX env stepped beside the agent (the Anakin loop, evaluation); () for
    every other agent, and never recorded in a Trajectory.
    """

    obs: jax.Array
    reward: jax.Array  # float32 [B]
    terminated: jax.Array  # bool [B]
    truncated: jax.Array  # bool [B]
    first: jax.Array  # bool [B]
    state: PyTree = ()


class ActorOutput(NamedTuple):
    """Agent.step may return this instead of a bare action: `extras` (e.g. the behaviour
    policy's logits) is recorded in the trajectory and never sent to the envs."""

    action: jax.Array
    extras: PyTree = ()


class Trajectory(NamedTuple):
    """One inference cycle of T steps, time-major.

    env_step has T + 1 entries: env_step[t] is what action[t] was chosen from, and
    env_step[t + 1] carries the reward and end-of-episode flags that action[t] led to. The last
    entry is also the first of the next cycle's trajectory.
    """

    env_step: EnvStep  # [T + 1, B, ...]
    action: jax.Array  # [T, B, ...]
    extras: PyTree  # [T, B, ...]
    episode_return: jax.Array  # float32 [T, B]: return of the episode that ended at env_step[t + 1], else NaN
    episode_length: jax.Array  # int32 [T, B]: its length, else 0
    policy_version: jax.Array  # int32 []: the learner version of the networks that acted
    actor: jax.Array  # int32 []: the inferencer that produced it (its envs' cycles come in order)
    # With frame stacking on the actor device (LoopConfig.stack_on_device): the S - 1 frames
    # before env_step[0], [S - 1, B, ...]; the learner rebuilds the stacks before agents see them.
    obs_history: PyTree = ()


class Rollout(NamedTuple):
    """An on-policy agent's experience with a recurrent core (PPO's, IMPALA's): the cycle's
    trajectory and the core's state its first step was taken from ([B, ...] per leaf; () without
    a core), which the learner re-unrolls the core from (sebulba/cores.py)."""

    trajectory: Trajectory
    core: PyTree


class ExperienceLayout(NamedTuple):
    """What one learner device's experience state must hold room for."""

    num_actors: int  # inferencers; each sends its cycles in order, interleaved with the others'
    # Rows of one inferencer's batch on this learner device (its share of the env axis): envs x
    # num_players (a multi-player pool has a row per (env, player), an env's players consecutive).
    num_envs: int
    steps_per_cycle: int  # T
    # Frames per stacked observation when trajectories arrive as single frames (stacking on the
    # device, for an agent with `accepts_frames`); 1 when they arrive stacked.
    frame_stack: int = 1
    # Learner devices of the job (all processes): a learner call takes in num_envs x num_devices x
    # steps_per_cycle rows' steps (what a replay ratio is counted in).
    num_devices: int = 1
    num_players: int = 1  # rows per env: P of a multi-player pool (envs/players.py), else 1
