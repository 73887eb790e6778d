"""A run directory's lifecycle in a job: opened (a resume) or created once for the job and seen by
every process (`open_run_dir`), removed with the directories made for it when the run stops
before training (`removed_unless_trained`: a refused run leaves nothing behind), and what each
process writes in it (`own_dir`, `log_path`, `write_processes`). `RunDir` (run_dir.py) names its
files."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import jax

from sebulba.experiment.errors import user_input
from sebulba.experiment.run_dir import RunDir
from sebulba.experiment.run_log import LOG_FILE
from sebulba.loop.config import LoopConfig
from sebulba.loop.processes import broadcast_text, gather_texts, together

log = logging.getLogger("sebulba")


def own_dir(run_dir: RunDir) -> Path:
    """This process's own directory: the run directory, or processes/p<i>/ in a multi-process job."""
    return run_dir.path / "processes" / f"p{jax.process_index()}" if jax.process_count() > 1 else run_dir.path


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
    with removed_unless_trained(created, made) if first else contextlib.nullcontext(), \
            user_input(), together("finding the run directory"):
        return created or _visible(path)


def _visible(path: str) -> RunDir:
    """RunDir.open, saying which process cannot see the directory."""
    try:
        return RunDir.open(path)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"process {jax.process_index()} cannot see the run directory: {e}; every process of "
                                "a job needs the same run directory, on a filesystem they share (--logdir)") from None


class Setup:
    training = False  # set once the loop runs: a failure from then on keeps the run directory


@contextlib.contextmanager
def removed_unless_trained(run_dir: RunDir, made: list[Path] | None):
    """A new run's directory (`made`: the directories making it created, deepest first; None: not
    a new run, never removed) is removed with them when the run fails before the loop runs: a run
    refused at setup leaves nothing behind."""
    setup = Setup()
    try:
        yield setup
    except BaseException:
        if made is not None and not setup.training:
            _remove_new(run_dir.path, made)
        raise


def missing_dirs(path: str | os.PathLike) -> list[Path]:
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


def log_path(run_dir: RunDir) -> Path:
    """This process's log.txt: the run directory's (process 0), or processes/p<i>/log.txt."""
    i = jax.process_index()
    return run_dir.path / LOG_FILE if i == 0 else run_dir.path / "processes" / f"p{i}" / LOG_FILE


def write_processes(run_dir: RunDir, learning_curve: bool = True) -> None:
    """processes.json (process 0): which process ran where, and what each wrote (`learning_curve`:
    whether the run plots learning_curve.png). A collective."""
    me = jax.process_index()
    texts = gather_texts(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                     "devices": [d.id for d in jax.local_devices()]}))
    if me != 0:
        return
    rows = []
    for p, text in enumerate(texts):
        row = {"process": p, **json.loads(text), "writes": [f"processes/p{p}/metrics.csv", f"processes/p{p}/events.*"]}
        row["writes"] += (["flags.json", "config.json", "processes.json", "log.txt", "metrics.csv", "events.*",
                           *(["learning_curve.png"] if learning_curve else []), "checkpoints/ (with every process)"]
                          if p == 0 else
                          [f"processes/p{p}/log.txt", "checkpoints/ (with every process)"])
        rows.append(row)
    (run_dir.path / "processes.json").write_text(json.dumps(rows, indent=2) + "\n")
