"""Failure drills through the CLI, on a real process: SIGTERM's (and Ctrl-C's) clean stop, then
--resume. Sync mode, so the resumed run must end exactly where an uninterrupted run ends. The
kill -9 drill is tests/test_multihost_recovery.py's (a process of a 2-process job killed, both
relaunched); atomic writes are tests/test_checkpoint.py's."""

import csv
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import ROOT, child_env, last_metrics, run_experiment

ARGS = ["--total_env_steps=40960", "--checkpoint_every=20", "--noprogress", "--log_every_s=0.2"]
WAIT_S = 300  # generous: only a bound on a hang, never a measurement


def start(logdir: Path) -> subprocess.Popen:
    env = child_env(XLA_FLAGS="")
    return subprocess.Popen([sys.executable, "-m", "experiments.impala", *ARGS, f"--logdir={logdir}"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def complete_checkpoints(run_dir: Path) -> list[int]:
    ckpt = run_dir / "checkpoints"
    return sorted(int(p.name) for p in ckpt.iterdir() if p.name.isdigit()) if ckpt.exists() else []


def wait_for_checkpoint(proc: subprocess.Popen, logdir: Path, at_least: int) -> Path:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"training exited early ({proc.returncode}): {proc.stderr.read()[-2000:]}"
        runs = list(logdir.iterdir()) if logdir.exists() else []
        if runs and any(s >= at_least for s in complete_checkpoints(runs[0])):
            return runs[0]
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"no checkpoint >= {at_least} within {WAIT_S} s")


def final_row(run_dir: Path) -> dict:
    return last_metrics(run_dir.parent)[1]


def assert_continuous(run_dir: Path) -> None:
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    steps = [int(r["env_steps"]) for r in rows]
    walls = [float(r["wall_time"]) for r in rows]
    assert steps == sorted(set(steps)), "metrics.csv has a duplicate or out-of-order row"
    assert walls == sorted(walls), "wall_time went backwards across the resume"


# One worker runs this module's drills and builds the reference run once (session: kept whatever
# tests of other modules xdist interleaves).
pytestmark = pytest.mark.xdist_group("resume_drills")


@pytest.fixture(scope="session")
def uninterrupted(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("straight")
    out = run_experiment("experiments.impala", *ARGS, f"--logdir={logdir}")
    assert out.returncode == 0, out.stderr[-3000:]
    return last_metrics(logdir)[1]


@pytest.mark.slow(seconds=27)
@pytest.mark.timeout(900)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_cleanly_says_how_to_resume_then_resumes(tmp_path, request, sig):
    """SIGTERM or one Ctrl-C: the run saves its state, says it was interrupted, where its last
    checkpoint is and the command that continues it, and exits 143 / 130 (not finished); that
    very command (run after SIGTERM) then ends where an uninterrupted run ends."""
    proc = start(tmp_path)
    run_dir = wait_for_checkpoint(proc, tmp_path, at_least=20)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 128 + sig, (proc.returncode, stdout[-2000:], stderr[-3000:])
    stopped_at = int(final_row(run_dir)["learner_steps"])
    assert complete_checkpoints(run_dir)[-1] == stopped_at  # the final state was saved on the way out
    assert f"interrupted by {sig.name} at " in stdout and "done:" not in stdout, stdout
    again = "(Ctrl-C again to abort)"
    assert f"{sig.name}: stopping after this learner iteration" in stderr and (again in stderr) == (sig == signal.SIGINT)
    assert f"last checkpoint: {run_dir / 'checkpoints' / str(stopped_at)} " in stdout, stdout
    command = next(line for line in stdout.splitlines() if line.startswith("continue it with: "))
    argv = command.removeprefix("continue it with: ").split()
    assert argv == [sys.executable, "-m", "experiments.impala", "--resume", str(run_dir)], argv
    if sig == signal.SIGINT:
        return  # the resume from a signal's checkpoint is the same for both: run once, with SIGTERM
    uninterrupted = request.getfixturevalue("uninterrupted")
    env = child_env(XLA_FLAGS="")
    out = subprocess.run([*argv, "--noprogress"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("done: "), out.stdout[-2000:]
    final = final_row(run_dir)
    for key in ("env_steps", "learner_steps", "episodes", "episode_return_mean"):
        assert final[key] == uninterrupted[key], (key, final[key], uninterrupted[key])
    assert_continuous(run_dir)
