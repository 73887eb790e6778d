"""Run an experiment entry point as a user does: a fresh process with one CPU device."""

import csv
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# JAX's persistent compilation cache, shared by the suite's CLI runs: most of them compile the same
# programs (the seeds of a learning bar, the presets), and a cache hit loads the executable XLA
# compiled before, so results are unchanged (a CartPole IMPALA run: 10.5 s -> 6.8 s).
JAX_CACHE = Path(tempfile.gettempdir()) / f"sebulba-tests-jax-cache-{os.getuid()}"


def child_env(**overrides: str) -> dict[str, str]:
    """The environment of a child process that imports this checkout: ROOT first on PYTHONPATH,
    the caller's PYTHONPATH kept after it (the GPU check puts the wheels the host lacks there)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **overrides}


# Entry points that do not train (no --learning_curve flag).
NOT_TRAINING = ("experiments.evaluate", "experiments.envs_demo")


def run_experiment(module: str, *args: str, timeout: float = 900, env: dict[str, str] | None = None,
                   learning_curve: bool = False) -> subprocess.CompletedProcess:
    """`python -m module *args` in a child process; `env`: variables set for it (e.g. MUJOCO_GL).
    A training run gets --nolearning_curve unless `learning_curve`: matplotlib's import and one
    plot cost a run about a second of CPU, minutes over the suite's runs; the tests that read
    the PNG ask for it."""
    if module.startswith("experiments.") and module not in NOT_TRAINING and not learning_curve:
        args = (*args, "--nolearning_curve")
    env = child_env(XLA_FLAGS="", JAX_COMPILATION_CACHE_DIR=str(JAX_CACHE),
                    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", **(env or {}))
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def last_metrics(logdir: Path) -> tuple[Path, dict]:
    """The only run directory under logdir and its last metrics.csv row."""
    (run_dir,) = Path(logdir).iterdir()
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    return run_dir, rows[-1]


def file_hashes(directory: Path) -> dict[str, str]:
    """{path relative to directory: sha256 of its bytes} for every file under it."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(directory).rglob("*")) if p.is_file()}
