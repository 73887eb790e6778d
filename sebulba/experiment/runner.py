"""The part of an experiment that is the same for every agent: devices, the run directory,
outputs, and the loop run itself."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

import jax

from sebulba.agent import Agent, reload_problem
from sebulba.experiment import distributed
from sebulba.experiment.errors import user_input
from sebulba.experiment.outputs import MetricsWriter, Outputs
from sebulba.experiment.profiling import ProfileWindow, profiled
from sebulba.experiment.resume import check_resumable, resume_hint
from sebulba.experiment.run_record import run_record
from sebulba.experiment.run_dir import RunDir
from sebulba.experiment.wandb_logger import WandbFlags, WandbLogger
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.config import LoopConfig
from sebulba.loop.evaluator import Evaluator, PeriodicEvaluation
from sebulba.loop.loop import GymnasiumLoop
from sebulba.loop.metrics import job_report
from sebulba.loop.processes import broadcast_text, gather_texts, together

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
    stopped_by_peer: bool = False  # multi-process: stopped before its budget by a signal to another process

    @property
    def exit_status(self) -> int:
        """0 for a run that finished; the signal's conventional status (128 + signal number: 130
        for SIGINT, 143 for SIGTERM) for one that was stopped, so a scheduler sees it unfinished
        (143 for a process stopped by another process's signal)."""
        if self.interrupted_by is None:
            return 128 + int(signal.SIGTERM) if self.stopped_by_peer else 0
        return 128 + int(self.interrupted_by)


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


def open_run_dir(resume: str | None, logdir: str, experiment: str, loop_config: LoopConfig,
                 flags: dict[str, Any]) -> RunDir:
    """The run's directory: `resume`, or a new one under logdir. In a multi-process job there is
    one for the job, made by process 0, and every process must see it (a shared filesystem):
    checkpoints are written into it by all of them."""
    first, processes = jax.process_index() == 0, jax.process_count()
    with user_input(), together("opening the run directory"):
        if resume is not None:
            return RunDir.open(resume) if processes == 1 else _visible(resume)
        created = RunDir.create(logdir, experiment, loop_config.env_id, loop_config.seed, flags) if first else None
    if processes == 1:
        return created
    path = broadcast_text(str(created.path) if first else "")
    with user_input(), together("finding the run directory"):
        return created or _visible(path)


def _visible(path: str) -> RunDir:
    """RunDir.open, saying which process cannot see the directory."""
    try:
        return RunDir.open(path)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"process {jax.process_index()} cannot see the run directory: {e}; every process of "
                                "a job needs the same run directory, on a filesystem they share (--logdir)") from None


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
    wandb: WandbFlags | None = None,
) -> RunResult:
    """Train until total_env_steps, writing metrics, TensorBoard, flags, checkpoints and the
    learning curve into a new run directory under logdir, or, with `resume` (a run directory),
    continuing that run from its latest complete checkpoint. In a multi-process job
    (jax.distributed) every process calls it: total_env_steps is the job's, there is one run
    directory for the job (process 0 writes the job's outputs, every process its own under
    processes/p<i>/), and checkpoints hold every process's state.
    `profile`: a window of the run to trace into the run directory's profile/. `wandb`: also
    log the job's metrics, config and learning curve to Weights & Biases (from process 0)."""
    multi, first = jax.process_count() > 1, jax.process_index() == 0
    run_dir = open_run_dir(resume, logdir, experiment, loop_config, flags)
    own_dir = run_dir.path / "processes" / f"p{jax.process_index()}" if multi else run_dir.path
    own_dir.mkdir(parents=True, exist_ok=True)
    if first and (resume is None or not run_dir.config_path.exists()):
        run_dir.write_config(run_record(experiment, agent, loop_config, total_env_steps))
    if multi:
        write_processes(run_dir)
    with log_file(run_dir.path / LOG_FILE if first else own_dir / LOG_FILE):
        log.info(f"run directory: {run_dir.path}")
        problem = reload_problem(type(agent))
        if problem is not None and first:
            log.warning(f"experiments.evaluate and sebulba.load_policy will not be able to rebuild this run's agent: "
                        f"{problem}")
        with user_input():  # the run's input: a mistake here is the user's, told in one line
            checkpointer = None
            if checkpoints.every_learner_steps > 0:
                checkpointer = Checkpointer(CheckpointConfig(str(run_dir.checkpoint_dir), checkpoints.every_learner_steps,
                                                             checkpoints.keep, checkpoints.save_replay))
            elif resume is not None:
                raise ValueError("resuming needs checkpoints: checkpoint_every must be > 0")
            resume_steps = None
            if resume is not None:
                resume_steps = check_resumable(checkpointer, run_dir, loop_config)["env_steps"]
                if resume_steps >= total_env_steps:  # finished: nothing to train, not one more cycle
                    log.info(f"{run_dir.path} is finished: {resume_steps:,} env steps of its budget of "
                             f"{total_env_steps:,}; pass a larger --total_env_steps to extend it")
                    _finished()
                    return RunResult(last_report(run_dir), run_dir, None, checkpointer.latest_step(), finished_before=True)
            with together("starting W&B logging"):
                tracker = WandbLogger.start(run_dir, wandb) if wandb is not None and first else None
            with together("building the loop"):
                try:
                    loop_in_setup = GymnasiumLoop(agent, loop_config)
                except BaseException:
                    if tracker is not None:  # started first, so a bad key fails before the pools build
                        tracker.finish(failed=True)
                    raise
        watch = distributed.watch()
        if watch is not None:
            watch.context = lambda: resume_hint(run_dir)
        with loop_in_setup as loop, \
                _job_outputs(run_dir, total_env_steps, progress and first, resume_steps,
                             evaluation.every_env_steps > 0, first, tracker) as outputs, \
                _own_metrics(own_dir, resume_steps, multi) as own, \
                graceful_stop(loop) as received, profiled(profile, own_dir / "profile"), \
                contextlib.ExitStack() as stack:
            middleware = []
            if evaluation.every_env_steps > 0 and first:  # the networks are the same everywhere
                with user_input():
                    evaluating = periodic_evaluation(agent, loop, evaluation, total_env_steps, outputs)
                middleware.append(stack.enter_context(contextlib.closing(evaluating)))
            report = outputs if not multi else JobReports(own, outputs)
            loop.run(max_env_steps=total_env_steps, middleware=middleware, report=report, checkpointer=checkpointer,
                     resume=resume is not None)
            final = report.last if multi and first else loop.reports[-1]
    _finished()
    early = final["env_steps"] < total_env_steps
    interrupted = received[0] if received and early else None
    return RunResult(final, run_dir, interrupted, None if checkpointer is None else checkpointer.latest_step(),
                     stopped_by_peer=multi and early and interrupted is None)


def _finished() -> None:
    """This process ended its run cleanly: in a multi-process job, no peer may take it for lost."""
    watch = distributed.watch()
    if watch is not None:
        watch.done()


def write_processes(run_dir: RunDir) -> None:
    """processes.json (process 0): which process ran where, and what each wrote. A collective."""
    me = jax.process_index()
    texts = gather_texts(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                     "devices": [d.id for d in jax.local_devices()]}))
    if me != 0:
        return
    rows = []
    for p, text in enumerate(texts):
        row = {"process": p, **json.loads(text), "writes": [f"processes/p{p}/metrics.csv", f"processes/p{p}/events.*"]}
        row["writes"] += (["flags.json", "config.json", "processes.json", "log.txt", "metrics.csv", "events.*",
                           "learning_curve.png", "checkpoints/ (with every process)"] if p == 0 else
                          [f"processes/p{p}/log.txt", "checkpoints/ (with every process)"])
        rows.append(row)
    (run_dir.path / "processes.json").write_text(json.dumps(rows, indent=2) + "\n")


@contextlib.contextmanager
def _job_outputs(run_dir: RunDir, total_env_steps: int, progress: bool, resume_steps: int | None, evaluation: bool,
                 first: bool, wandb: WandbLogger | None = None):
    """The job's Outputs (metrics.csv, TensorBoard, progress, PNG, W&B) on process 0; None elsewhere."""
    if not first:
        yield None
        return
    with Outputs(run_dir, total_env_steps, progress=progress, resume_env_steps=resume_steps,
                 evaluation=evaluation, wandb=wandb) as outputs:
        yield outputs


@contextlib.contextmanager
def _own_metrics(directory, resume_steps: int | None, multi: bool):
    """A process's own metrics (processes/p<i>/metrics.csv and TensorBoard) in a multi-process job."""
    if not multi:
        yield None
        return
    with MetricsWriter(directory) as writer:
        if resume_steps is not None:
            writer.resume_at(resume_steps)
        yield writer


class JobReports:
    """A multi-process job's report sink: each report, this process's own into its metrics, then
    the job's totals (job_report, a collective every process reaches at the same learner
    iteration) into process 0's outputs; `last` holds the latest totals on process 0."""

    def __init__(self, own: MetricsWriter, outputs: Outputs | None):
        self.own, self.outputs = own, outputs
        self.last: dict[str, Any] | None = None

    def __call__(self, report: dict[str, Any]) -> None:
        self.own.write(report)
        totals = job_report(report)
        if totals is not None:
            self.last = totals
            if self.outputs is not None:
                self.outputs(totals)
