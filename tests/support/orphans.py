"""Worker processes whose parent was killed: run a script that starts workers, prints their pids
and SIGKILLs itself, then check that those workers end too (rather than live on as orphans)."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.cli import ROOT, child_env


def pids_of_a_killed_parent(script: str) -> list[int]:
    """Run `python -c script` (it prints its workers' pids on one line, then kills itself with
    SIGKILL, so no exit handler of its runs) and return the pids it printed. Its output is read up
    to that line only: an orphan would hold the pipe open."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=child_env(XLA_FLAGS=""),
                                stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            line = proc.stdout.readline()
            status = proc.wait(timeout=120)
        finally:
            proc.kill()
            proc.stdout.close()
        err.seek(0)
        assert status == -signal.SIGKILL and line.strip(), err.read()[-3000:]
    return [int(p) for p in line.split()]


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie has ended: this host's init may not reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def assert_they_end(pids: list[int], within_s: float = 60.0) -> None:
    """Every pid ends within `within_s` (a bound for a loaded host, not a speed); any still running
    then is killed and the test fails naming it."""
    deadline = time.monotonic() + within_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    if left:
        pytest.fail(f"workers {left} outlived their killed parent by {within_s:g} s (killed now)")
