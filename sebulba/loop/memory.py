"""What a run needs in memory, known before anything is built: the env pools' observations, the
trajectories in flight and the agent's experience state (its replay), each from shapes only
(`jax.eval_shape`), against the memory free on the host and the devices. A run that cannot fit
is refused with the estimate; a run that fits is never refused (the figures are lower bounds)."""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import jax
import numpy as np

from envs.tree import leaf_spaces
from sebulba.agent import Agent
from sebulba.loop.config import LoopConfig
from sebulba.loop.framestack import StackPlan
from sebulba.types import ExperienceLayout

GIB = 2.0**30


def byte_size(n: int) -> str:
    """1288490189 -> '1.2 GiB'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def free_bytes(device: jax.Device) -> int | None:
    """Free memory of an accelerator; for CPU devices, the host's available memory (Linux)."""
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and "bytes_limit" in stats:
        return stats["bytes_limit"] - stats.get("bytes_in_use", 0)
    try:
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
        return kib * 1024
    except (OSError, StopIteration, ValueError):
        return None


def tree_bytes(shapes: Any) -> int:
    """Bytes of a pytree of arrays or ShapeDtypeStructs (typed PRNG keys not counted)."""
    return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes)
               if not jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended))


def space_bytes(space: gym.spaces.Space) -> int:
    """Bytes of one element of a (Dict/Tuple of) Box/Discrete space, as the pool batches it."""
    return sum(int(np.prod(s.shape, dtype=np.int64)) * np.dtype(s.dtype).itemsize
               for _, s in leaf_spaces(space) if s.shape is not None and s.dtype is not None)


def _device_groups(devices: list[jax.Device]) -> list[tuple[jax.Device, int]]:
    """(a device, how many of `devices` share its memory): CPU devices share the host's."""
    cpus = [d for d in devices if d.platform == "cpu"]
    return ([(cpus[0], len(cpus))] if cpus else []) + [(d, 1) for d in devices if d.platform != "cpu"]


def check_fits_in_memory(experience_shapes, devices: list[jax.Device]) -> None:
    """ValueError if one device's experience state (shapes, e.g. from eval_shape) cannot fit in
    the free memory of the local learner devices (CPU devices share the host's memory)."""
    need = tree_bytes(experience_shapes)
    for device, count in _device_groups(devices):
        free = free_bytes(device)
        if free is not None and need * count > free:
            raise ValueError(
                f"the agent's experience state (e.g. its replay) needs {need / GIB:.1f} GiB per learner device "
                f"x {count} on {device} ({need * count / GIB:.1f} GiB), but only {free / GIB:.1f} GiB is free there; "
                f"make it smaller (R2D2: --replay_capacity; on Atari, --stack_on_device makes its replay keep "
                f"single frames, a quarter of the memory)")


def experience_layout(config: LoopConfig, num_players: int, num_actors: int, frame_stack: int = 1) -> ExperienceLayout:
    """What one learner device's experience state holds room for, in either loop: `num_actors`
    sources (the Sebulba loop's inferencers; Anakin: 1) of this device's share of the rows
    (envs x players), every process's learner devices counted."""
    rows = config.num_envs * num_players // len(config.learner_devices)
    return ExperienceLayout(num_actors, rows, config.steps_per_cycle, frame_stack,
                            len(config.learner_devices) * jax.process_count(), num_players)


class MemoryEstimate(NamedTuple):
    """A run's memory in bytes, from shapes (lower bounds): `envs`, the pools' latest
    observations (Anakin: the env lanes'); `trajectories`, the cycles' records in flight (each
    inferencer's, and the learner's: (T + 1) steps of every row); `experience`, one learner
    device's experience state (its replay), held by each of `learner_devices` (local)."""

    envs: int
    trajectories: int
    experience: int
    learner_devices: int

    @property
    def total(self) -> int:
        return self.envs + self.trajectories + self.experience * self.learner_devices

    def describe(self) -> str:
        g = lambda b: f"{b / GIB:.1f} GiB"  # noqa: E731
        return (f"env observations {g(self.envs)}, trajectories in flight {g(self.trajectories)}, the agent's "
                f"experience state (e.g. its replay) {g(self.experience)} per learner device x {self.learner_devices}")


def estimate(agent: Agent, config: LoopConfig, anakin: bool) -> MemoryEstimate:
    """What a run of `agent` on `config` (in the Anakin loop or the Sebulba loop) needs in this
    process, from shapes only: nothing is built or allocated."""
    spec = agent.env_spec
    players = int(spec.config.get("max_num_players", 1) or 1)
    rows = config.num_envs * players
    obs = space_bytes(spec.observation_space)
    frame_stack = 1
    if config.stack_on_device and not anakin:  # the pools send single frames
        frame_stack = StackPlan.create(config.env_id, config.env_kwargs).num
        obs //= frame_stack
    step = obs + 4 + 3  # observation, reward (float32), first / terminated / truncated
    trajectory = (config.steps_per_cycle + 1) * rows * step + config.steps_per_cycle * rows * space_bytes(spec.action_space)
    if anakin:
        replicas = config.num_seeds
        envs_bytes, trajectories = replicas * rows * obs, replicas * trajectory
    else:
        envs_bytes = config.num_inferencers * rows * obs
        trajectories = (config.num_inferencers + 1) * trajectory  # each inferencer's buffers and the learner's copy
    layout = experience_layout(config, players, 1 if anakin else config.num_inferencers,
                               frame_stack if agent.accepts_frames else 1)
    networks = jax.eval_shape(agent.init_networks, jax.random.key(0))
    experience = jax.eval_shape(lambda n, k: agent.init_experience(n, layout, k), networks, jax.random.key(0))
    per_device = tree_bytes(experience) * (config.num_seeds if anakin else 1)
    return MemoryEstimate(envs_bytes, trajectories, per_device, len(config.learner_devices))


def check_run_fits(agent: Agent, config: LoopConfig, anakin: bool) -> MemoryEstimate:
    """The run's `estimate`; ValueError, with it, when it exceeds the memory free here (the
    host's, where the envs live, plus the devices' for what lives on them: on CPU devices all of
    it is the host's)."""
    need = estimate(agent, config, anakin)
    local = jax.local_devices()
    learners = [local[i] for i in config.learner_devices if i < len(local)]
    on_host = need.envs + (need.total - need.envs if all(d.platform == "cpu" for d in learners) else 0)
    host = free_bytes(jax.local_devices(backend="cpu")[0]) if on_host else None
    problems = []
    if host is not None and on_host > host:
        problems.append(f"{on_host / GIB:.1f} GiB on the host, where {host / GIB:.1f} GiB is available")
    for device, count in _device_groups([d for d in learners if d.platform != "cpu"]):
        free = free_bytes(device)
        wants = need.experience * count + need.trajectories
        if free is not None and wants > free:
            problems.append(f"{wants / GIB:.1f} GiB on {device}, where {free / GIB:.1f} GiB is free")
    if problems:
        raise ValueError(f"this run needs at least {'; '.join(problems)} ({need.describe()}); make it smaller: "
                         f"{', or '.join(_remedies(need, config, anakin, agent.env_spec))}")
    return need


# An evaluation keeps each player's episode as Python floats (return, length, player; the episode's
# returns), about this many bytes each.
EPISODE_BYTES = 128


def check_evaluation_fits(spec: Any, num_envs: int, episodes: int) -> None:
    """ValueError when an evaluation of `episodes` episodes on `num_envs` envs of `spec` cannot fit
    in the host's free memory (the pool's observations and the episodes' records: lower bounds)."""
    players = int(spec.config.get("max_num_players", 1) or 1)
    need = num_envs * players * space_bytes(spec.observation_space) + episodes * players * EPISODE_BYTES
    free = free_bytes(jax.local_devices(backend="cpu")[0])
    if free is not None and need > free:
        raise ValueError(f"this evaluation needs at least {need / GIB:.1f} GiB on the host, where {free / GIB:.1f} GiB "
                         f"is available ({num_envs:,} envs, {episodes:,} episodes): ask for fewer (--num_envs, "
                         "--episodes)")


def _remedies(need: MemoryEstimate, config: LoopConfig, anakin: bool, spec: Any) -> list[str]:
    """The flags that shrink what is large in `need`, largest part first."""
    per_env = (need.envs + need.trajectories, f"fewer envs (--num_envs, {config.num_envs:,} now)")
    replay = (need.experience * need.learner_devices, "a smaller replay (--replay_capacity)")
    out = [text for size, text in sorted((per_env, replay), key=lambda p: -p[0]) if size >= 0.1 * need.total]
    if anakin and config.num_seeds > 1:
        out.append(f"fewer replicas (--num_seeds, {config.num_seeds} now)")
    if not config.stack_on_device and not anakin and "stack_num" in spec.pool_config.task_kwargs:
        out.append("--stack_on_device (the envs send single frames: a replay of R2D2's keeps a quarter of the bytes)")
    return out

