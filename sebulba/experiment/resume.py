"""Resuming a run, the experiment's side of it in one place: the flags a resume takes from the
run (`adopt_resumed_flags`), what a run does with its directory and the flags (`plan_resume`:
start, continue, extend or "already finished", checked before anything is built), what a resume
that trains records (`record_resume`), and what a stopped job says to relaunch (`resume_hint`).
The loop's side: `Loop.run(resume=True)` loads the checkpoint (`sebulba/loop/checkpoint.py`);
the outputs go on where they stopped (`MetricsWriter.resume_at`, from `ResumePlan.env_steps`)."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import jax
import numpy as np
from absl import flags

from sebulba.experiment.flags import NOT_RESUMED, RESUME_OVERRIDES
from sebulba.experiment.run_dir import RunDir
from sebulba.experiment.run_record import resumed_record
from sebulba.loop.checkpoint import Checkpointer, complete_steps, resume_layout
from sebulba.loop.config import LoopConfig
from sebulba.loop.processes import allgather, together

FLAGS = flags.FLAGS
log = logging.getLogger("sebulba")


def adopt_resumed_flags() -> None:
    """With --resume RUN_DIR, set every flag to its value in RUN_DIR/flags.json (the run goes on
    with its own configuration), except NOT_RESUMED, which come from this command line, and
    RESUME_OVERRIDES given on it, which replace the run's own (`runner.run` writes them to
    flags.json once the resume trains, so a later resume keeps them; `changed_flags`). Any other
    flag given with a value other than the run's is refused by name."""
    if not FLAGS.resume:
        return
    with together("reading the resumed run's flags"):  # every process reads them: one that cannot, stops them all
        run_dir = RunDir.open(FLAGS.resume)
        saved = json.loads(run_dir.flags_path.read_text())
        _adopt(saved)


def _adopt(saved: dict[str, Any]) -> None:
    for name, value in saved.items():
        if name not in FLAGS or name in NOT_RESUMED or FLAGS.find_module_defining_flag(name, "").startswith("absl"):
            continue  # absl's own flags (logging, help) come from this command line
        flag = FLAGS[name]
        if flag.present and flag.value != value:
            if name not in RESUME_OVERRIDES:
                was = f"{name}={value!r}" if value is not None else "its preset's value (see its config.json)"
                raise ValueError(
                    f"--{name}={flag.value} cannot change when resuming: the run was started with {was}, "
                    f"and its networks, optimizer state, envs and layout are in its checkpoint; drop the flag, or "
                    f"start a new run (flags a resume may change: {', '.join('--' + f for f in RESUME_OVERRIDES)})"
                )
            continue
        flag.value = value


def changed_flags(run_dir: RunDir, flags: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{flag: (the run's value, this resume's)} for the RESUME_OVERRIDES among a resumed run's
    `flags` (what `adopt_resumed_flags` left) that differ from its flags.json."""
    saved = json.loads(run_dir.flags_path.read_text())
    return {name: (saved[name], flags[name]) for name in RESUME_OVERRIDES
            if name in saved and name in flags and flags[name] != saved[name]}


def resuming_line(changed: dict[str, tuple[Any, Any]]) -> str:
    """What a resume that changes flags says: `resuming with total_env_steps=12800 (was 6400)`."""
    return "resuming with " + ", ".join(f"{k}={now!r} (was {was!r})" for k, (was, now) in changed.items())


@dataclasses.dataclass(frozen=True)
class ResumePlan:
    """What a run does with its run directory: "start" (a new run), "continue" (a resume within
    the run's budget), "extend" (a resume whose --total_env_steps is larger than the run's own),
    or "finished" (a resume of a run that has met its budget: nothing trains, no file changes)."""

    action: str
    meta: dict[str, Any] | None = None  # a resume's checkpoint metadata (counters, layout)
    changed: dict[str, tuple[Any, Any]] = dataclasses.field(default_factory=dict)  # {flag: (the run's, now)}

    @property
    def resumes(self) -> bool:
        """Whether the run goes on from a checkpoint (continue or extend)."""
        return self.action in ("continue", "extend")

    @property
    def env_steps(self) -> int | None:
        """Where a resume starts (the checkpoint's env steps); None for a new run."""
        return None if self.meta is None else self.meta["env_steps"]


def plan_resume(resume: str | None, run_dir: RunDir, checkpointer: Checkpointer | None, loop_config: LoopConfig,
                flags: dict[str, Any], total_env_steps: int, replay_bytes: int = 0) -> ResumePlan:
    """What this run does with `run_dir` (`resume`: the --resume directory, None for a new run),
    with the run's `flags` (after `adopt_resumed_flags`) and its budget: the one place a resume is
    decided. A resume is checked first (checkpoints on, every process seeing the same one, the
    job's process count and the loop's layout the checkpoint's: `check_resumable`), and says what
    it does in one line; one whose checkpoint lacks the replay of an agent that keeps one
    (`replay_bytes` > 0) warns that it will not end as an uninterrupted run would. ValueError
    (on every process together) for a resume that cannot go on."""
    if resume is None:
        return ResumePlan("start")
    if checkpointer is None:
        raise ValueError("resuming needs checkpoints: checkpoint_every must be > 0")
    meta = check_resumable(checkpointer, run_dir, loop_config)
    changed = changed_flags(run_dir, flags)
    if replay_bytes and not meta["has_experience"]:
        log.warning(f"checkpoint {meta['learner_steps']} holds no replay: the resumed run starts with an "
                    "empty replay, so it will not end as an uninterrupted run would (checkpoints hold "
                    "it unless --nosave_replay)")
    if meta["env_steps"] >= total_env_steps:  # not one more cycle
        log.info(f"{run_dir.path} is finished: {meta['env_steps']:,} env steps of its budget of "
                 f"{total_env_steps:,}; pass a larger --total_env_steps to extend it")
        return ResumePlan("finished", meta, changed)
    if changed:
        log.info(resuming_line(changed))
    was, now = changed.get("total_env_steps", (total_env_steps, total_env_steps))
    return ResumePlan("extend" if now > was else "continue", meta, changed)


def record_resume(run_dir: RunDir, record: dict[str, Any], plan: ResumePlan) -> None:
    """A resume that trains: flags.json takes the flags it changed (a later resume keeps them), and
    config.json what the run now follows and the resume itself (`run_record.resumed_record`)."""
    changed, meta = plan.changed, plan.meta
    if changed:
        saved = json.loads(run_dir.flags_path.read_text())
        run_dir.write_flags({**saved, **{name: now for name, (_, now) in changed.items()}})
    previous = json.loads(run_dir.config_path.read_text()) if run_dir.config_path.exists() else record
    run_dir.write_config(resumed_record(previous, record, meta["env_steps"], meta["learner_steps"], changed))


def check_resumable(checkpointer: Checkpointer, run_dir: RunDir, loop_config: LoopConfig) -> dict[str, Any]:
    """The latest complete checkpoint's metadata, after checking that every process sees the same
    checkpoints, that the job has the checkpoint's process count and that the loop has its layout
    (a ValueError on every process together otherwise, before any env or compilation)."""
    with together("finding the checkpoint"):
        meta = checkpointer.latest_meta()
        if meta is None:
            raise FileNotFoundError(f"{run_dir.path} has no complete checkpoint to resume from")
    steps = allgather(np.array(meta["learner_steps"], np.int64))
    with together("checking the checkpoint"):
        if len(set(steps.tolist())) > 1:
            raise ValueError(f"the processes see different latest checkpoints in {run_dir.checkpoint_dir} (learner steps "
                             f"{', '.join(f'process {p}: {s}' for p, s in enumerate(steps.tolist()))}): every process "
                             "needs the same checkpoint directory, on a filesystem they share")
        saved = meta.get("layout", {}).get("processes", 1)
        if saved != jax.process_count():
            raise ValueError(f"{run_dir.path} was written by {saved} process(es) and this job has {jax.process_count()}: "
                             f"relaunch it with --num_processes {saved} (each process's envs and actor state are in "
                             "the checkpoint)")
        checkpointer.check_layout(meta, *resume_layout(loop_config))
    return meta


def resume_hint(run_dir: RunDir) -> str:
    """Where a stopped multi-process run stands and what continues it."""
    steps = complete_steps(run_dir.checkpoint_dir)
    last = (f"its last complete checkpoint is {run_dir.checkpoint_dir / str(steps[-1])}" if steps
            else "it has no complete checkpoint yet")
    return f"The run is in {run_dir.path}; {last}. Relaunch every process with --resume {run_dir.path}."
