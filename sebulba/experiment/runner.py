"""The part of an experiment that is the same for every agent: devices, the run directory,
outputs, and the loop run itself."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import jax

from sebulba.agent import Agent
from sebulba.experiment.outputs import Outputs
from sebulba.experiment.run_dir import RunDir
from sebulba.loop.config import LoopConfig
from sebulba.loop.loop import GymnasiumLoop

log = logging.getLogger("sebulba")


def default_devices(num_envs: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Separate actor and learner devices when there is more than one: device 0 acts and the
    most of the others that split num_envs evenly learn; on one device both share it."""
    n = len(jax.devices())
    if n == 1:
        return (0,), (0,)
    learners = max(k for k in range(1, n) if num_envs % k == 0)
    return (0,), tuple(range(1, 1 + learners))


def parse_devices(text: str | None) -> tuple[int, ...] | None:
    """'0,1' -> (0, 1); None or '' -> None (use the default)."""
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"devices must be comma-separated indices like '0,1', got {text!r}") from None


@dataclasses.dataclass(frozen=True)
class RunResult:
    final: dict[str, Any]  # the last metrics report
    run_dir: RunDir


def run(
    experiment: str,
    agent: Agent,
    loop_config: LoopConfig,
    total_env_steps: int,
    logdir: str,
    flags: dict[str, Any],
    progress: bool = True,
) -> RunResult:
    """Train until total_env_steps, writing metrics, TensorBoard, flags and the learning curve
    into a new run directory under logdir."""
    run_dir = RunDir.create(logdir, experiment, loop_config.env_id, loop_config.seed, flags)
    log.info(f"run directory: {run_dir.path}")
    with GymnasiumLoop(agent, loop_config) as loop, Outputs(run_dir, total_env_steps, progress=progress) as outputs:
        loop.run(max_env_steps=total_env_steps, report=outputs)
        final = loop.reports[-1]
    return RunResult(final, run_dir)
