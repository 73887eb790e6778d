"""What ran: the resolved configuration of a run, the package versions, the git commit and the
devices, written to the run directory's `config.json` (flags.json keeps only the flags as given,
where a preset's value reads null). A resume that trains rewrites it with what the run now
follows (budget, loop, agent config: e.g. the learning-rate decay stretched to a new budget) and
appends itself to its `resumes` (`resumed_record`)."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax

from sebulba.agent import Agent
from sebulba.loop.config import LoopConfig

PACKAGES = ("jax", "jaxlib", "flax", "optax", "chex", "orbax-checkpoint", "gymnasium", "ale-py", "numpy", "sebulba")
ROOT = Path(__file__).resolve().parents[2]


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages a run depends on (None: not installed)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit(root: Path = ROOT) -> dict[str, Any] | None:
    """The checkout's commit and whether its tracked files differ from it; None outside git."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def devices() -> list[dict[str, Any]]:
    """This process's devices, as jax sees them."""
    return [{"id": d.id, "platform": d.platform, "kind": d.device_kind, "process": d.process_index} for d in jax.local_devices()]


def run_record(experiment: str, agent: Agent, loop: LoopConfig, total_env_steps: int) -> dict[str, Any]:
    """Everything needed to know what a run was: the resolved loop and agent configs (the preset
    with the flags applied), the budget, versions, commit, devices, host and command line."""
    config = getattr(agent, "config", None)
    return {
        "experiment": experiment,
        "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": [sys.executable, *sys.argv],
        "total_env_steps": total_env_steps,
        "loop": loop,
        "agent": {
            "class": f"{type(agent).__module__}.{type(agent).__qualname__}",
            "config": config if dataclasses.is_dataclass(config) else None,
        },
        "versions": {"python": platform.python_version(), **package_versions()},
        "git": git_commit(),
        "devices": devices(),
        "host": {"name": socket.gethostname(), "platform": platform.platform(), "cpu_count": os.cpu_count()},
    }


# What a resume may change in config.json: what the run follows from then on. The rest (the first
# start's time, command, versions, commit, devices, host) stays the start's; each resume adds its own.
FOLLOWED = ("total_env_steps", "loop", "agent")


def resumed_record(previous: dict[str, Any], current: dict[str, Any], env_steps: int, learner_steps: int,
                   changed: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    """config.json after a resume that trains: `previous` (the run's config.json) with what the run
    now follows taken from `current` (`run_record` of the resumed run), and an entry appended to
    its `resumes`: when, the command, the checkpoint it went on from and the flags it changed
    (`changed`: {flag: (was, now)})."""
    entry = {
        "time": current["started"],
        "command": current["command"],
        "env_steps": env_steps,
        "learner_steps": learner_steps,
        "flags": {name: now for name, (_, now) in changed.items()},
        "was": {name: was for name, (was, _) in changed.items()},
        "git": current["git"],
    }
    return {**previous, **{k: current[k] for k in FOLLOWED}, "resumes": [*previous.get("resumes", []), entry]}
