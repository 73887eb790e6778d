"""The entry points keep JAX's persistent compilation cache (issue 36: a warm start in seconds)."""

import subprocess
import sys

import pytest

from tests.support.cli import ROOT, child_env

ARGS = ["-m", "experiments.ppo", "--total_env_steps=1", "--checkpoint_every=0", "--noprogress"]


def run(tmp_path, *flags: str) -> tuple[subprocess.CompletedProcess, list]:
    env = child_env(XLA_FLAGS="", XDG_CACHE_HOME=str(tmp_path / "cache"))
    for name in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"):
        env.pop(name, None)
    out = subprocess.run([sys.executable, *ARGS, *flags, f"--logdir={tmp_path / 'runs'}"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    folder = tmp_path / "cache" / "sebulba" / "jax"
    return out, sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.mark.slow(seconds=34)
def test_a_run_fills_the_cache_and_the_flag_turns_it_off(tmp_path):
    first, cached = run(tmp_path / "on")
    assert len(cached) >= 2, cached  # at least the act and the update
    assert "the first learner update is done, " in first.stderr and "act and update compiled in " in first.stderr
    _, none = run(tmp_path / "off", "--nocompilation_cache")
    assert none == [] and not (tmp_path / "off" / "cache" / "sebulba").exists()
