"""The part of an experiment that is the same for every agent: devices, the run directory,
outputs, and the loop run itself."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import logging
import os
import shutil
import signal
import socket
import threading
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
from sebulba.experiment.resume import changed_flags, check_resumable, resume_hint, resuming_line
from sebulba.experiment.run_log import LOG_FILE, log_file
from sebulba.experiment.run_record import resumed_record, run_record
from sebulba.experiment.run_dir import RunDir
from sebulba.experiment.wandb_logger import WandbFlags, WandbLogger
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.config import LoopConfig, uses_anakin
from sebulba.loop.contract import Loop, make_loop
from sebulba.loop.evaluator import Evaluator, PeriodicEvaluation
from sebulba.loop.memory import MemoryEstimate, byte_size, check_run_fits
from sebulba.loop.middleware import LoopContext
from sebulba.loop.metrics import job_report
from sebulba.loop.processes import broadcast_text, gather_texts, together

log = logging.getLogger("sebulba")


def default_devices(num_envs: int, minibatches: int = 1, anakin: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Separate actor and learner devices when there is more than one: device 0 acts and the
    most of the others that split num_envs evenly (into `minibatches` per device) learn; on one
    device both share it. Anakin (acting on the learner devices): the most of all devices that
    split num_envs evenly."""
    n = len(jax.local_devices())
    if anakin:
        fits = [k for k in range(1, n + 1) if num_envs % (k * minibatches) == 0]
        return (0,), tuple(range(max(fits) if fits else 1))
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


class StoppedBeforeTraining(KeyboardInterrupt):
    """SIGTERM or Ctrl-C while a run was being set up (its env pools built, its programs
    compiled): the run stops there, and a new run's directory is removed."""

    def __init__(self, sig: signal.Signals):
        super().__init__(f"stopped by {sig.name} while the run was being set up, before training")
        self.signal = sig


class _Stopper:
    loop: Loop | None = None  # set once the loop trains


@contextlib.contextmanager
def graceful_stop():
    """Signals during a run: SIGTERM or a first Ctrl-C before the loop trains raises
    `StoppedBeforeTraining` (the setup unwinds: pools closed, a new run's directory removed);
    once it trains (`stopper.loop` set), they ask the loop to stop after the current learner
    iteration (it then saves its final checkpoint); a second Ctrl-C interrupts at once. Yields
    (a list that holds the first signal received, if any; the stopper)."""
    received: list[signal.Signals] = []
    stopper = _Stopper()
    if threading.current_thread() is not threading.main_thread():
        yield received, stopper
        return

    def handler(signum, frame):
        sig = signal.Signals(signum)
        loop = stopper.loop
        if loop is None:
            raise StoppedBeforeTraining(sig)
        if loop.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if not received:
            received.append(sig)
        again = " (Ctrl-C again to abort)" if sig == signal.SIGINT else ""
        log.warning(f"{sig.name}: stopping after this learner iteration{again}")
        loop.request_stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received, stopper
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


def open_run_dir(resume: str | None, logdir: str, experiment: str, loop_config: LoopConfig,
                 flags: dict[str, Any], made: list[Path] | None = None) -> RunDir:
    """The run's directory: `resume`, or a new one under logdir. In a multi-process job there is
    one for the job, made by process 0, and every process must see it (a shared filesystem):
    checkpoints are written into it by all of them; if one cannot, process 0 removes it and
    `made` (the directories of logdir it created)."""
    first, processes = jax.process_index() == 0, jax.process_count()
    with user_input(), together("opening the run directory"):
        if resume is not None:
            return RunDir.open(resume) if processes == 1 else _visible(resume)
        created = RunDir.create(logdir, experiment, loop_config.env_id, loop_config.seed, flags) if first else None
    if processes == 1:
        return created
    path = broadcast_text(str(created.path) if first else "")
    with _removed_unless_trained(created, made) if first else contextlib.nullcontext(), \
            user_input(), together("finding the run directory"):
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
    `processes/p<i>/`), and checkpoints hold every process's state.
    A new run that fails before the loop runs (a mistake in its input, found while the loop is
    built) leaves no directory. A resume writes nothing until it trains (one that finds the run
    finished changes no file); then log.txt gets its lines, flags.json the flags it changed, and
    config.json what the run now follows and the resume (`record_resume`).
    A run that cannot fit in memory is refused before anything is built (`memory.check_run_fits`);
    SIGTERM or Ctrl-C before the loop trains raises `StoppedBeforeTraining`, a new run's directory
    removed (`graceful_stop`).
    `profile`: a window of the run to trace into the run directory's profile/. `wandb`: also
    log the job's metrics, config and learning curve to Weights & Biases (from process 0)."""
    with user_input():  # before anything is built or written
        memory = check_run_fits(agent, loop_config, uses_anakin(loop_config))
    with graceful_stop() as (received, stopper):
        return _run(experiment, agent, loop_config, total_env_steps, logdir, flags, progress, checkpoints, resume,
                    profile, evaluation, wandb, memory, received, stopper)


def _run(experiment: str, agent: Agent, loop_config: LoopConfig, total_env_steps: int, logdir: str,
         flags: dict[str, Any], progress: bool, checkpoints: CheckpointFlags, resume: str | None,
         profile: ProfileWindow | None, evaluation: EvalFlags, wandb: WandbFlags | None, memory: MemoryEstimate,
         received: list[signal.Signals], stopper: _Stopper) -> RunResult:
    """`run`, with its memory estimated and its signals handled (`graceful_stop`)."""
    multi, first = jax.process_count() > 1, jax.process_index() == 0
    made = _missing_dirs(logdir) if resume is None and first else []
    run_dir = open_run_dir(resume, logdir, experiment, loop_config, flags, made)
    own_dir = run_dir.path / "processes" / f"p{jax.process_index()}" if multi else run_dir.path
    own_dir.mkdir(parents=True, exist_ok=True)
    record = run_record(experiment, agent, loop_config, total_env_steps) if first else None
    if first and resume is None:
        run_dir.write_config(record)
    with _removed_unless_trained(run_dir, made if resume is None and first else None) as setup, \
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
            elif resume is not None:
                raise ValueError("resuming needs checkpoints: checkpoint_every must be > 0")
            resume_steps = None
            if resume is not None:
                meta = check_resumable(checkpointer, run_dir, loop_config)
                resume_steps, changed = meta["env_steps"], changed_flags(run_dir, flags)
                if replay_bytes and not meta["has_experience"]:
                    log.warning(f"checkpoint {meta['learner_steps']} holds no replay: the resumed run starts with an "
                                "empty replay, so it will not end as an uninterrupted run would (checkpoints hold "
                                "it unless --nosave_replay)")
                if resume_steps >= total_env_steps:  # finished: nothing to train, not one more cycle; no file changes
                    log.info(f"{run_dir.path} is finished: {resume_steps:,} env steps of its budget of "
                             f"{total_env_steps:,}; pass a larger --total_env_steps to extend it")
                    _finished()
                    return RunResult(last_report(run_dir), run_dir, None, checkpointer.latest_step(), finished_before=True)
                if changed:
                    log.info(resuming_line(changed))
            if multi:
                write_processes(run_dir)
            with together("starting W&B logging"):
                tracker = WandbLogger.start(run_dir, wandb) if wandb is not None and first else None
            with together("building the loop"):
                try:
                    loop_in_setup = make_loop(agent, loop_config)
                except BaseException:
                    if tracker is not None:  # started first, so a bad key fails before the pools build
                        tracker.finish(failed=True)
                    raise
        if resume is not None:  # the resume trains: its records say what the run now follows
            transcript.start()
            if first:
                record_resume(run_dir, record, meta, changed)
        watch = distributed.watch()
        if watch is not None:
            watch.context = lambda: resume_hint(run_dir)
        with loop_in_setup as loop, \
                _job_outputs(run_dir, total_env_steps, progress and first, resume_steps,
                             evaluation.every_env_steps > 0, first, tracker) as outputs, \
                _own_metrics(own_dir, resume_steps, multi) as own, profiled(profile, own_dir / "profile"), \
                contextlib.ExitStack() as stack:
            middleware = [announce_first_update()]
            if evaluation.every_env_steps > 0 and first:  # the networks are the same everywhere
                with user_input():
                    evaluating = periodic_evaluation(agent, loop, evaluation, total_env_steps, outputs, resume_steps or 0)
                middleware.append(stack.enter_context(contextlib.closing(evaluating)))
            report = outputs if not multi else JobReports(own, outputs)
            setup.training, stopper.loop = True, loop
            loop.run(max_env_steps=total_env_steps, middleware=middleware, report=report, checkpointer=checkpointer,
                     resume=resume is not None)
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


def log_path(run_dir: RunDir) -> Path:
    """This process's log.txt: the run directory's (process 0), or processes/p<i>/log.txt."""
    i = jax.process_index()
    return run_dir.path / LOG_FILE if i == 0 else run_dir.path / "processes" / f"p{i}" / LOG_FILE


def record_resume(run_dir: RunDir, record: dict[str, Any], meta: dict[str, Any],
                  changed: dict[str, tuple[Any, Any]]) -> None:
    """A resume that trains: flags.json takes the flags it changed (a later resume keeps them), and
    config.json what the run now follows and the resume itself (`run_record.resumed_record`)."""
    if changed:
        saved = json.loads(run_dir.flags_path.read_text())
        run_dir.write_flags({**saved, **{name: now for name, (_, now) in changed.items()}})
    previous = json.loads(run_dir.config_path.read_text()) if run_dir.config_path.exists() else record
    run_dir.write_config(resumed_record(previous, record, meta["env_steps"], meta["learner_steps"], changed))


def warn_atari_on_cpu(env_id: str) -> None:
    """An Atari run with only CPU devices works but crawls: say so once, with what a GPU reaches."""
    if envs.is_atari(env_id) and all(d.platform == "cpu" for d in jax.devices()):
        log.warning(
            f"{env_id} on CPU devices only: expect about 115 env steps/s on 2 cores (the convolutions dominate); "
            "one H100 with 16 cores runs the IMPALA preset at about 13.5k env steps/s (54k frames/s, BENCHMARKS.md)"
        )


class _Setup:
    training = False  # set once the loop runs: a failure from then on keeps the run directory


@contextlib.contextmanager
def _removed_unless_trained(run_dir: RunDir, made: list[Path] | None):
    """A new run's directory (`made`: the directories making it created, deepest first; None: not
    a new run, never removed) is removed with them when the run fails before the loop runs: a run
    refused at setup leaves nothing behind."""
    setup = _Setup()
    try:
        yield setup
    except BaseException:
        if made is not None and not setup.training:
            _remove_new(run_dir.path, made)
        raise


def _missing_dirs(path: str | os.PathLike) -> list[Path]:
    """The directories that making `path` (with its parents) creates, deepest first."""
    out, p = [], Path(path).absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def _remove_new(path: Path, made: list[Path]) -> None:
    """Remove a new run directory, then those of `made` left empty."""
    shutil.rmtree(path, ignore_errors=True)
    for d in made:
        try:
            d.rmdir()
        except OSError:  # not empty: another run's, or the user's
            break
    if path.exists():
        log.warning(f"could not remove {path}, made for a run that stopped before training")
    else:
        log.info(f"removed {path}: the run stopped before training")


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
