"""An older commit's `envs` package, importable beside this tree's as `envs_baseline`.

A speed claim "no drop" needs before and after in one run on one machine. `git archive` copies
the package at REV into a temporary folder, renamed `envs_baseline` with its own imports (and the
module names its worker processes preload) rewritten, so both versions run in one process, each
with its own worker processes.
"""

from __future__ import annotations

import atexit
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
NAME = "envs_baseline"
# `from envs.x import`, `from envs import`, `import envs`, and module names in strings ("envs.process.worker").
_IMPORTS = re.compile(r"(?<=from )envs\b|(?<=import )envs\b|(?<=[\"'])envs(?=\.)")


def short_rev(rev: str) -> str:
    return subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def import_baseline(rev: str) -> ModuleType:
    """`envs` as it was at commit rev, imported as `envs_baseline`."""
    folder = Path(tempfile.mkdtemp(prefix="envs-baseline-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    archive = subprocess.run(["git", "archive", rev, "envs"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "envs").rename(folder / NAME)
    for path in (folder / NAME).rglob("*.py"):
        path.write_text(_IMPORTS.sub(NAME, path.read_text()))
    sys.path.insert(0, str(folder))
    # Worker processes (forkserver) import the package by name too.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    return importlib.import_module(NAME)
