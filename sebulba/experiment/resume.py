"""Resuming a run, the experiment's side of it in one place: the flags a resume takes from the
run (`adopt_resumed_flags`), the checks before anything is built (`check_resumable`), and what a
stopped job says to relaunch (`resume_hint`). The loop's side: `GymnasiumLoop.run(resume=True)`
loads the checkpoint (`sebulba/loop/checkpoint.py`); the outputs go on where they stopped
(`MetricsWriter.resume_at`)."""

from __future__ import annotations

import json
from typing import Any

import jax
import numpy as np
from absl import flags

from sebulba.experiment.run_dir import RunDir
from sebulba.loop.checkpoint import Checkpointer, complete_steps, resume_layout
from sebulba.loop.config import LoopConfig
from sebulba.loop.processes import allgather, together

FLAGS = flags.FLAGS

# flags a resumed run takes from its own command line
NOT_RESUMED = ("resume", "progress", "logdir", "profile_after_s", "profile_seconds", "profile_python", "debug",
               "coordinator_address", "num_processes", "process_id", "distributed", "peer_timeout_s")
# flags that, given with --resume, replace the run's own: they change how long it runs and what it
# writes, not what it is (its networks, optimizer, envs and layout are in the checkpoint)
RESUME_OVERRIDES = ("total_env_steps", "log_every_s", "checkpoint_every", "keep_checkpoints", "save_replay",
                    "eval_every", "eval_episodes", "wandb", "wandb_project", "wandb_entity", "wandb_mode")



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
