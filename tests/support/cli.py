"""Run an experiment entry point as a user does: a fresh process with one CPU device."""

import csv
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_experiment(module: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "XLA_FLAGS": "", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def last_metrics(logdir: Path) -> tuple[Path, dict]:
    """The only run directory under logdir and its last metrics.csv row."""
    (run_dir,) = Path(logdir).iterdir()
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    return run_dir, rows[-1]
