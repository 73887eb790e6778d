"""The contract both loops keep (`Loop`), and the one place that chooses which loop runs a config
(`make_loop`). Whoever runs a loop (the experiment kit, the middleware, a user's script) uses it
through this contract and never asks which loop it is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import jax

from sebulba.agent import Agent
from sebulba.loop.checkpoint import Checkpointer
from sebulba.loop.config import LoopConfig, uses_anakin
from sebulba.loop.metrics import MetricsWindow
from sebulba.loop.staging import Staging
from sebulba.loop.task import Middleware


@runtime_checkable
class Loop(Protocol):
    """A loop that trains an Agent on a `LoopConfig`: `GymnasiumLoop` (Sebulba) or `AnakinLoop`."""

    config: LoopConfig
    window: MetricsWindow  # the metrics of the current logging interval
    reports: list[dict]  # every metrics report of the run so far
    stop_requested: bool

    def run(self, max_env_steps: int | None = None, max_cycles: int | None = None,
            middleware: Sequence[Middleware] = (), report: Callable[[dict], None] | None = None,
            checkpointer: Checkpointer | None = None, resume: bool = False) -> Any:
        """Learn until the budget (the job's env steps, or learner updates); with `resume`, from
        the checkpointer's latest complete checkpoint first."""

    def request_stop(self) -> None:
        """Stop at the end of the current learner iteration (a run with a checkpointer then saves)."""

    def save(self, checkpointer: Checkpointer, env_steps: int, learner_steps: int) -> None:
        """A checkpoint of the loop's state at learner_steps (every process of a job calls it at
        the same learner step); `run` saves through it."""

    def restore(self, checkpointer: Checkpointer, step: int | None = None) -> dict:
        """Load a checkpoint into the loop; its metadata (counters)."""

    def close(self) -> None:
        """Release threads, pools and devices' state. Idempotent."""

    @property
    def closed(self) -> bool:
        """Whether `close` was called (a closed loop refuses `run`)."""

    @property
    def synchronous(self) -> bool:
        """Whether learning waits for acting and the reverse (the Sebulba loop's sync mode; Anakin
        always): a seed then gives bit-identical runs, and evaluation during training waits too."""

    @property
    def staging(self) -> Staging:
        """Where the latest networks wait for acting and evaluation."""

    @property
    def eval_device(self) -> jax.Device:
        """The device evaluation during training acts on."""

    def __enter__(self) -> Loop: ...

    def __exit__(self, *exc: Any) -> None: ...


def make_loop(agent: Agent, config: LoopConfig) -> Loop:
    """The loop `config` asks for (`LoopConfig.loop`; auto: Anakin for a JAX-native env), built."""
    from sebulba.loop.anakin import AnakinLoop
    from sebulba.loop.loop import GymnasiumLoop

    return (AnakinLoop if uses_anakin(config) else GymnasiumLoop)(agent, config)
