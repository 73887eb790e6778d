"""The part of an experiment that is the same for every agent: a run (`run`), from the checks
before anything is built to the loop's last report: the run directory (run_lifecycle.py), the
resume plan (resume.py), checkpoints, outputs, evaluation during training, signals (signals.py)
and the loop itself (through its contract)."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import logging
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax

import envs
from sebulba.agent import Agent, reload_problem
from sebulba.experiment import distributed
from sebulba.experiment.errors import user_input
from sebulba.experiment.outputs import MetricsWriter, Outputs
from sebulba.experiment.profiling import ProfileWindow, profiled
from sebulba.experiment.progress import process_age_s
from sebulba.experiment.resume import plan_resume, record_resume, resume_hint
from sebulba.experiment.run_dir import RunDir
from sebulba.experiment.run_lifecycle import (log_path, missing_dirs, open_run_dir, own_dir, removed_unless_trained,
                                              write_processes)
from sebulba.experiment.run_log import log_file
from sebulba.experiment.run_record import run_record
from sebulba.experiment.signals import Stopper, graceful_stop
from sebulba.experiment.wandb_logger import WandbFlags, WandbLogger
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.config import LoopConfig, uses_anakin
from sebulba.loop.contract import Loop, make_loop
from sebulba.loop.evaluator import Evaluator, PeriodicEvaluation
from sebulba.loop.memory import MemoryEstimate, byte_size, check_run_fits
from sebulba.loop.middleware import LoopContext
from sebulba.loop.metrics import job_report
from sebulba.loop.processes import together

log = logging.getLogger("sebulba")


@dataclasses.dataclass(frozen=True)
class RunResult:
    """What `run` returns: the last metrics report, the run directory, and how the run ended."""

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
    """`run`'s checkpoint schedule (the flags --checkpoint_every, --keep_checkpoints, --save_replay)."""

    every_learner_steps: int = 1000  # 0: no checkpoints
    keep: int = 3
    # The agent's experience state in every checkpoint; None: when it is a replay (`replay_in_checkpoints`)
    save_replay: bool | None = None


@dataclasses.dataclass(frozen=True)
class EvalFlags:
    """`run`'s evaluation during training (the flags --eval_every, --eval_episodes)."""

    every_env_steps: int = 0  # 0: no evaluation during training
    episodes: int = 10

    def __post_init__(self) -> None:
        if self.every_env_steps < 0 or self.episodes < 1:
            raise ValueError(f"eval_every must be >= 0 and eval_episodes >= 1, got {self.every_env_steps}, "
                             f"{self.episodes}")


def periodic_evaluation(agent: Agent, loop: Loop, flags: EvalFlags, total_env_steps: int,
                        report: Callable[[dict], None], start_env_steps: int = 0) -> PeriodicEvaluation:
    """Evaluation on its own pool of min(episodes, 8) envs (seeded apart from the training envs),
    on the loop's evaluation device (the first actor device; Anakin: the first learner device).
    A sync or Anakin run waits for each evaluation (reproducible). The first is due at the first
    multiple of `every_env_steps` after `start_env_steps` (where the run starts or resumes): an
    Anakin call, which runs many updates, evaluates at the first call that reaches it."""
    cfg = loop.config
    evaluator = Evaluator(agent, cfg.env_id, cfg.env_kwargs, min(flags.episodes, 8), seed=cfg.seed + 1_000_003,
                          device=loop.eval_device)
    return PeriodicEvaluation(loop.staging, evaluator, flags.every_env_steps, flags.episodes, seed=cfg.seed,
                              block=loop.synchronous, report=report, total_env_steps=total_env_steps,
                              start_env_steps=start_env_steps)


def last_report(run_dir: RunDir) -> dict[str, Any]:
    """The last metrics row of a run directory, numbers as floats (env_steps as an int)."""
    with run_dir.metrics_csv.open() as f:
        rows = list(csv.DictReader(f))
    row = {k: float(v) if v not in ("", None) else float("nan") for k, v in rows[-1].items()} if rows else {}
    row["env_steps"] = int(row.get("env_steps", 0))
    return row


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
    learning_curve: bool = True,
) -> RunResult:
    """Train until total_env_steps, writing metrics, TensorBoard, flags, checkpoints and the
    learning curve into a new run directory under logdir, or, with `resume` (a run directory),
    continuing that run from its latest complete checkpoint. In a multi-process job
    (jax.distributed) every process calls it: total_env_steps is the job's, there is one run
    directory for the job (process 0 writes the job's outputs, every process its own under
    `processes/p<i>/`), and checkpoints hold every process's state.
    A new run that fails before the loop runs (a mistake in its input, found while the loop is
    built) leaves no directory. A resume writes nothing until it trains (one that finds the run
    finished changes no file); then log.txt gets its lines, flags.json the flags it changed, and
    config.json what the run now follows and the resume (`record_resume`).
    A run that cannot fit in memory is refused before anything is built (`memory.check_run_fits`);
    SIGTERM or Ctrl-C before the loop trains raises `StoppedBeforeTraining`, a new run's directory
    removed (`graceful_stop`).
    `profile`: a window of the run to trace into the run directory's profile/. `wandb`: also
    log the job's metrics, config and learning curve to Weights & Biases (from process 0).
    `learning_curve`: plot learning_curve.png at the end (False: metrics.csv and TensorBoard only)."""
    with user_input():  # before anything is built or written
        memory = check_run_fits(agent, loop_config, uses_anakin(loop_config))
    with graceful_stop() as (received, stopper):
        return _run(experiment, agent, loop_config, total_env_steps, logdir, flags, progress, checkpoints, resume,
                    profile, evaluation, wandb, memory, received, stopper, learning_curve)


def _run(experiment: str, agent: Agent, loop_config: LoopConfig, total_env_steps: int, logdir: str,
         flags: dict[str, Any], progress: bool, checkpoints: CheckpointFlags, resume: str | None,
         profile: ProfileWindow | None, evaluation: EvalFlags, wandb: WandbFlags | None, memory: MemoryEstimate,
         received: list[signal.Signals], stopper: Stopper, learning_curve: bool) -> RunResult:
    """`run`, with its memory estimated and its signals handled (`graceful_stop`)."""
    multi, first = jax.process_count() > 1, jax.process_index() == 0
    made = missing_dirs(logdir) if resume is None and first else []
    run_dir = open_run_dir(resume, logdir, experiment, loop_config, flags, made)
    own = own_dir(run_dir)
    own.mkdir(parents=True, exist_ok=True)
    record = run_record(experiment, agent, loop_config, total_env_steps) if first else None
    if first and resume is None:
        run_dir.write_config(record)
    with removed_unless_trained(run_dir, made if resume is None and first else None) as setup, \
            log_file(log_path(run_dir), hold=resume is not None) as transcript:
        log.info(f"run directory: {run_dir.path}")
        problem = reload_problem(type(agent))
        if problem is not None and first:
            log.warning(f"experiments.evaluate and sebulba.load_policy cannot rebuild this run's agent by name: {problem}")
        warn_atari_on_cpu(loop_config.env_id)
        with user_input():  # the run's input: a mistake here is the user's, told in one line
            checkpointer = None
            replay_bytes = memory.experience * memory.learner_devices * jax.process_count()  # the job's
            if checkpoints.every_learner_steps > 0:
                with together("checking room for the checkpoints"):
                    save_replay = replay_in_checkpoints(checkpoints.save_replay, replay_bytes, checkpoints.keep,
                                                        run_dir.path, type(agent).__name__)
                checkpointer = Checkpointer(CheckpointConfig(str(run_dir.checkpoint_dir), checkpoints.every_learner_steps,
                                                             checkpoints.keep, save_replay))
            plan = plan_resume(resume, run_dir, checkpointer, loop_config, flags, total_env_steps, replay_bytes)
            if plan.action == "finished":  # nothing to train, not one more cycle; no file changes
                _finished()
                return RunResult(last_report(run_dir), run_dir, None, checkpointer.latest_step(), finished_before=True)
            if multi:
                write_processes(run_dir, learning_curve)
            with together("starting W&B logging"):
                tracker = WandbLogger.start(run_dir, wandb) if wandb is not None and first else None
            with together("building the loop"):
                try:
                    loop_in_setup = make_loop(agent, loop_config)
                except BaseException:
                    if tracker is not None:  # started first, so a bad key fails before the pools build
                        tracker.finish(failed=True)
                    raise
        if plan.resumes:  # the resume trains: its records say what the run now follows
            transcript.start()
            if first:
                record_resume(run_dir, record, plan)
        watch = distributed.watch()
        if watch is not None:
            watch.context = lambda: resume_hint(run_dir)
        with loop_in_setup as loop, \
                _job_outputs(run_dir, total_env_steps, progress and first, plan.env_steps,
                             evaluation.every_env_steps > 0, first, learning_curve, tracker) as outputs, \
                _own_metrics(own, plan.env_steps, multi) as own_writer, profiled(profile, own / "profile"), \
                contextlib.ExitStack() as stack:
            middleware = [announce_first_update()]
            if evaluation.every_env_steps > 0 and first:  # the networks are the same everywhere
                with user_input():
                    evaluating = periodic_evaluation(agent, loop, evaluation, total_env_steps, outputs,
                                                     plan.env_steps or 0)
                middleware.append(stack.enter_context(contextlib.closing(evaluating)))
            report = outputs if not multi else JobReports(own_writer, outputs)
            setup.training, stopper.loop = True, loop
            loop.run(max_env_steps=total_env_steps, middleware=middleware, report=report, checkpointer=checkpointer,
                     resume=plan.resumes)
            final = report.last if multi and first else loop.reports[-1]
    _finished()
    early = final["env_steps"] < total_env_steps
    interrupted = received[0] if received and early else None
    return RunResult(final, run_dir, interrupted, None if checkpointer is None else checkpointer.latest_step(),
                     stopped_by_peer=multi and early and interrupted is None)


def replay_in_checkpoints(save: bool | None, replay_bytes: int, keep: int, run_path: Path, agent: str) -> bool:
    """Whether checkpoints hold the agent's experience state: `save` (--save_replay,
    --nosave_replay), or by default when it is a replay: `replay_bytes` (the job's experience
    state before the first cycle) > 0. An off-policy agent's replay carries over from cycle to
    cycle: a resume without it starts with an empty replay and does not end as an uninterrupted
    run would. An on-policy agent's starts empty and becomes each cycle's trajectory, which the
    next cycle replaces: a resume needs none of it. Says the replay's size in one line, and
    refuses (ValueError) one whose checkpoints the filesystem cannot hold (`check_disk_room`)."""
    if save is None:
        save = replay_bytes > 0
    if save and not replay_bytes:
        log.info(f"--save_replay: {agent} keeps no replay (its experience state is each cycle's trajectory, which "
                 "a resume does not need); checkpoints hold the latest trajectory")
    elif save:
        check_disk_room(run_path, replay_bytes, keep)
        log.info(f"checkpoints include the replay: {byte_size(replay_bytes)} each (--nosave_replay to leave it out)")
    return save


def check_disk_room(run_path: Path, each: int, keep: int) -> None:
    """ValueError when `keep` checkpoints with a replay of `each` bytes, and the one being written
    beside them, cannot fit on the filesystem of the run directory `run_path` (its free space, plus
    what the checkpoints there already take: the new ones replace them)."""
    ckpt = run_path / "checkpoints"
    existing = sum(p.stat().st_size for p in ckpt.rglob("*") if p.is_file()) if ckpt.is_dir() else 0
    free, need = shutil.disk_usage(run_path).free, (keep + 1) * each
    if need > free + existing:
        raise ValueError(f"checkpoints with the replay need {byte_size(need)} ({keep} kept, --keep_checkpoints, and "
                         f"one being written, {byte_size(each)} each) and the filesystem of {run_path} has "
                         f"{byte_size(free + existing)} for them: free some space, lower --keep_checkpoints, or "
                         "leave the replay out with --nosave_replay (a resume then starts with an empty replay)")


def announce_first_update() -> Callable[[LoopContext], None]:
    """Middleware: one line once the first learner update is done, with the process's age then
    (the start's cost: imports, compiling, env pools, the first cycle)."""
    done = False

    def announce(ctx: LoopContext) -> None:
        nonlocal done
        if not done:
            done = True
            age = process_age_s()
            log.info("training: the first learner update is done" + ("" if age is None else f", {age:.1f} s after the "
                                                                       "process started"))

    return announce


def warn_atari_on_cpu(env_id: str) -> None:
    """An Atari run with only CPU devices works but crawls: say so once, with what a GPU reaches."""
    if envs.is_atari(env_id) and all(d.platform == "cpu" for d in jax.devices()):
        log.warning(
            f"{env_id} on CPU devices only: expect about 115 env steps/s on 2 cores (the convolutions dominate); "
            "one H100 with 16 cores runs the IMPALA preset at about 13.5k env steps/s (54k frames/s, BENCHMARKS.md)"
        )


def _finished() -> None:
    """This process ended its run cleanly: in a multi-process job, no peer may take it for lost."""
    watch = distributed.watch()
    if watch is not None:
        watch.done()


@contextlib.contextmanager
def _job_outputs(run_dir: RunDir, total_env_steps: int, progress: bool, resume_steps: int | None, evaluation: bool,
                 first: bool, learning_curve: bool, wandb: WandbLogger | None = None):
    """The job's Outputs (metrics.csv, TensorBoard, progress, PNG, W&B) on process 0; None elsewhere."""
    if not first:
        yield None
        return
    with Outputs(run_dir, total_env_steps, progress=progress, resume_env_steps=resume_steps,
                 evaluation=evaluation, wandb=wandb, learning_curve=learning_curve) as outputs:
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
