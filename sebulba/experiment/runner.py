"""The part of an experiment that is the same for every agent: devices, the run directory,
outputs, and the loop run itself."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

import jax

from sebulba.agent import Agent
from sebulba.experiment.errors import user_input
from sebulba.experiment.outputs import Outputs
from sebulba.experiment.profiling import ProfileWindow, profiled
from sebulba.experiment.record import run_record
from sebulba.experiment.run_dir import RunDir
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.config import LoopConfig
from sebulba.loop.evaluator import Evaluator, PeriodicEvaluation
from sebulba.loop.loop import GymnasiumLoop

log = logging.getLogger("sebulba")


def default_devices(num_envs: int, minibatches: int = 1) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Separate actor and learner devices when there is more than one: device 0 acts and the
    most of the others that split num_envs evenly (into `minibatches` per device) learn; on one
    device both share it."""
    n = len(jax.local_devices())
    if n == 1:
        return (0,), (0,)
    learners = max(k for k in range(1, n) if num_envs % (k * minibatches) == 0) if num_envs % minibatches == 0 else 1
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
    interrupted_by: signal.Signals | None = None  # the signal that stopped the run before its budget
    checkpoint_step: int | None = None  # the latest complete checkpoint (learner steps), if any
    finished_before: bool = False  # a resume of a run that had already met its budget: nothing ran

    @property
    def exit_status(self) -> int:
        """0 for a run that finished; the signal's conventional status (128 + signal number: 130
        for SIGINT, 143 for SIGTERM) for one that was stopped, so a scheduler sees it unfinished."""
        return 0 if self.interrupted_by is None else 128 + int(self.interrupted_by)


@dataclasses.dataclass(frozen=True)
class CheckpointFlags:
    every_learner_steps: int = 1000  # 0: no checkpoints
    keep: int = 3
    save_replay: bool = False


@dataclasses.dataclass(frozen=True)
class EvalFlags:
    every_env_steps: int = 0  # 0: no evaluation during training
    episodes: int = 10

    def __post_init__(self) -> None:
        if self.every_env_steps < 0 or self.episodes < 1:
            raise ValueError(f"eval_every must be >= 0 and eval_episodes >= 1, got {self.every_env_steps}, "
                             f"{self.episodes}")


def periodic_evaluation(agent: Agent, loop: GymnasiumLoop, flags: EvalFlags, total_env_steps: int,
                        report: Callable[[dict], None]) -> PeriodicEvaluation:
    """Evaluation on its own pool of min(episodes, 8) envs (seeded apart from the training envs),
    on the first actor device."""
    cfg = loop.config
    evaluator = Evaluator(agent, cfg.env_id, cfg.env_kwargs, min(flags.episodes, 8), seed=cfg.seed + 1_000_003,
                          device=loop.inferencers[0].device)
    return PeriodicEvaluation(loop.staging, evaluator, flags.every_env_steps, flags.episodes, seed=cfg.seed,
                              block=not cfg.async_mode, report=report, total_env_steps=total_env_steps)


LOG_FILE = "log.txt"


def last_report(run_dir: RunDir) -> dict[str, Any]:
    """The last metrics row of a run directory, numbers as floats (env_steps as an int)."""
    with run_dir.metrics_csv.open() as f:
        rows = list(csv.DictReader(f))
    row = {k: float(v) if v not in ("", None) else float("nan") for k, v in rows[-1].items()} if rows else {}
    row["env_steps"] = int(row.get("env_steps", 0))
    return row


@contextlib.contextmanager
def log_file(path):
    """Every log record at INFO and above (orbax's checkpoint lines, jax's, ours) also goes to
    path for the run's duration, appended (a resumed run adds to it)."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(filename)s:%(lineno)d] %(message)s"))
    root = logging.getLogger()
    previous = root.level
    root.setLevel(min(previous, logging.INFO))  # lets INFO through; never hides what was let through
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        handler.close()


@contextlib.contextmanager
def graceful_stop(loop: GymnasiumLoop):
    """SIGTERM or a first Ctrl-C asks the loop to stop after the current learner iteration (it
    then saves its final checkpoint); a second Ctrl-C interrupts at once. Yields a list that
    holds the first signal received, if any."""
    received: list[signal.Signals] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum, frame):
        if loop.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        sig = signal.Signals(signum)
        if not received:
            received.append(sig)
        log.warning(f"{sig.name}: stopping after this learner iteration (Ctrl-C again to abort)")
        loop.request_stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


def run(
    experiment: str,
    agent: Agent,
    loop_config: LoopConfig,
    total_env_steps: int,
    logdir: str,
    flags: dict[str, Any],
    progress: bool = True,
    checkpoints: CheckpointFlags = CheckpointFlags(),
    resume: str | None = None,
    profile: ProfileWindow | None = None,
    evaluation: EvalFlags = EvalFlags(),
) -> RunResult:
    """Train until total_env_steps, writing metrics, TensorBoard, flags, checkpoints and the
    learning curve into a new run directory under logdir, or, with `resume` (a run directory),
    continuing that run from its latest complete checkpoint. In a multi-process job
    (jax.distributed), total_env_steps is the job's and each process writes its own directory.
    `profile`: a window of the run to trace into the run directory's profile/."""
    processes = jax.process_count()
    if processes > 1:
        # Each process trains on its own envs with one shared learner: the budget is the job's,
        # split evenly, and each process writes its own run directory (suffix -p<id>).
        total_env_steps = -(-total_env_steps // processes)
        experiment = f"{experiment}-p{jax.process_index()}"
        if resume is not None:
            raise ValueError("resuming a multi-process run is not supported yet")
        if checkpoints.every_learner_steps > 0:
            log.warning("checkpoints are not written in multi-process runs yet")
            checkpoints = dataclasses.replace(checkpoints, every_learner_steps=0)
    with user_input():
        run_dir = RunDir.open(resume) if resume is not None else \
            RunDir.create(logdir, experiment, loop_config.env_id, loop_config.seed, flags)
    if resume is None or not run_dir.config_path.exists():
        run_dir.write_config(run_record(experiment, agent, loop_config, total_env_steps))
    with log_file(run_dir.path / LOG_FILE):
        log.info(f"run directory: {run_dir.path}")
        with user_input():  # the run's input: a mistake here is the user's, told in one line
            checkpointer = None
            if checkpoints.every_learner_steps > 0:
                checkpointer = Checkpointer(CheckpointConfig(str(run_dir.checkpoint_dir), checkpoints.every_learner_steps,
                                                             checkpoints.keep, checkpoints.save_replay))
            elif resume is not None:
                raise ValueError("resuming needs checkpoints: checkpoint_every must be > 0")
            resume_steps = None
            if resume is not None:
                meta = checkpointer.latest_meta()
                if meta is None:
                    raise FileNotFoundError(f"{run_dir.path} has no complete checkpoint to resume from")
                resume_steps = meta["env_steps"]
                if resume_steps >= total_env_steps:  # finished: nothing to train, not one more cycle
                    log.info(f"{run_dir.path} is finished: {resume_steps:,} env steps of its budget of "
                             f"{total_env_steps:,}; pass a larger --total_env_steps to extend it")
                    return RunResult(last_report(run_dir), run_dir, None, checkpointer.latest_step(), finished_before=True)
            loop_in_setup = GymnasiumLoop(agent, loop_config)
        with loop_in_setup as loop, \
                Outputs(run_dir, total_env_steps, progress=progress, resume_env_steps=resume_steps,
                        evaluation=evaluation.every_env_steps > 0) as outputs, \
                graceful_stop(loop) as received, profiled(profile, run_dir.path / "profile"), \
                contextlib.ExitStack() as stack:
            middleware = []
            if evaluation.every_env_steps > 0:
                with user_input():
                    evaluating = periodic_evaluation(agent, loop, evaluation, total_env_steps, outputs)
                middleware.append(stack.enter_context(contextlib.closing(evaluating)))
            loop.run(max_env_steps=total_env_steps, middleware=middleware, report=outputs, checkpointer=checkpointer,
                     resume=resume is not None)
            final = loop.reports[-1]
    interrupted = received[0] if received and final["env_steps"] < total_env_steps else None
    return RunResult(final, run_dir, interrupted, None if checkpointer is None else checkpointer.latest_step())
