"""Library logging goes to RUN_DIR/log.txt; the terminal shows warnings and our own lines, so
orbax's INFO lines (dozens per checkpoint) do not bury the progress line; --verbosity brings
them back. Our own lines are plain on the terminal (no absl `I1126 09:41:07.123 file.py:12]`
prefix), with or without --verbosity."""

import re

import pytest

from tests.support.cli import last_metrics, run_experiment

ARGS = ["--total_env_steps=20000", "--checkpoint_every=20", "--noprogress"]


def orbax_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "checkpoint_manager.py" in line or "orbax" in line]


@pytest.mark.slow(seconds=6)
def test_library_info_lines_go_to_log_txt_not_the_terminal(tmp_path):
    out = run_experiment("experiments.impala", *ARGS, f"--logdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, _ = last_metrics(tmp_path)
    assert orbax_lines(out.stderr) == [], out.stderr[-3000:]
    assert re.search(r"^run directory: ", out.stderr, re.M), out.stderr[-3000:]  # ours stay, plain
    assert re.search(r"^checkpoint at learner step 20 ", out.stderr, re.M), out.stderr[-3000:]
    log = (run_dir / "log.txt").read_text()
    assert len(orbax_lines(log)) >= 10 and "INFO absl" in log
    assert f"run directory: {run_dir}" in log


@pytest.mark.slow(seconds=7)
@pytest.mark.parametrize("flag", ["--verbosity=0", "-v=0"])
def test_verbosity_brings_them_back(tmp_path, flag):
    out = run_experiment("experiments.impala", *ARGS, flag, f"--logdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(orbax_lines(out.stderr)) >= 10, out.stderr[-3000:]
    assert re.search(r"^run directory: ", out.stderr, re.M), out.stderr[-3000:]  # ours still plain


CHATTY = r'''
import ctypes, logging, sys, warnings
from absl import app
import gymnax
from sebulba.experiment import run_log

def main(argv):
    run_log.quiet_terminal()  # what an entry point does first
    libc = ctypes.CDLL(None)
    libc.printf(b"native before the run directory\n")  # as Warp's kernels print: C's stdout
    logging.getLogger("mujoco").info("a suite's line before the run directory")
    warnings.warn_explicit("a suite's warning", UserWarning, gymnax.__file__, 1)
    print("a print of our own")
    with run_log.log_file(argv[1]):
        libc.printf(b"native during the run\n")
        warnings.warn_explicit("another library's warning", UserWarning, app.__file__, 2)

app.run(main)
'''


@pytest.mark.slow(seconds=8)
@pytest.mark.parametrize("verbose", [False, True])
def test_a_jax_suites_chatter_goes_to_log_txt_not_the_terminal(tmp_path, verbose):
    """What the JAX suites print natively (MJX's solver lines from Warp's printf), their warnings and
    their lines before the run directory exists: in log.txt, off the terminal unless -v; Python's
    own prints and other libraries' warnings still reach the terminal."""
    import subprocess
    import sys

    from tests.support.cli import child_env

    log = tmp_path / "log.txt"
    out = subprocess.run([sys.executable, "-c", CHATTY, str(log), *(["-v=0"] if verbose else [])], env=child_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    chatter = ["native before the run directory", "a suite's line before the run directory", "a suite's warning",
               "native during the run"]
    text = log.read_text()
    assert all(line in text for line in chatter), text
    assert out.stdout == "a print of our own\n"
    assert "another library's warning" in out.stderr, out.stderr
    assert [line in out.stderr for line in chatter] == [verbose] * len(chatter), out.stderr
