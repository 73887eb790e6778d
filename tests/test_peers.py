"""A lost process in a multi-process job (sebulba/experiment/peers.py), on 2 real processes
running collectives: the other stops within the peer timeout with an error naming it."""

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.support.cli import ROOT, child_env
from tests.support.job import free_port

pytestmark = pytest.mark.multiprocess  # each test starts a job of worker processes

EXIT_PEER_LOST = 75
WAIT_S = 120  # a bound on a hang (the peer timeout is 3 s), never a measurement


@contextlib.contextmanager
def started(mode: str) -> Iterator[list[subprocess.Popen]]:
    """The 2 worker processes, killed on the way out whatever happened."""
    address = f"127.0.0.1:{free_port()}"
    env = child_env(XLA_FLAGS="--xla_force_host_platform_device_count=1")
    procs = [subprocess.Popen([sys.executable, "-m", "tests.support.peer_worker", address, str(i), mode], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def wait_running(proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "running" in line:
            return
        assert line or proc.poll() is None, f"the worker exited early: {proc.stderr.read()[-3000:]}"
    pytest.fail("the job did not start")


@pytest.mark.slow(seconds=6)
@pytest.mark.timeout(300)
def test_a_hung_process_is_named_and_the_other_stops():
    with started("hang") as procs:
        wait_running(procs[0])
        procs[1].send_signal(signal.SIGSTOP)  # hangs: alive, but silent
        _, err = procs[0].communicate(timeout=WAIT_S)
        assert procs[0].returncode == EXIT_PEER_LOST, err[-3000:]
        assert "error: process 1 of 2 was lost (no heartbeat for 3 s: it died, hung, or its host cannot be reached); " \
               "process 0 stops too." in err, err[-3000:]


@pytest.mark.timeout(300)
def test_a_process_that_fails_is_named_with_its_error():
    with started("fail") as procs:
        _, err1 = procs[1].communicate(timeout=WAIT_S)
        _, err0 = procs[0].communicate(timeout=WAIT_S)
        assert procs[1].returncode == 1 and "RuntimeError: boom in process 1" in err1, err1[-3000:]
        assert procs[0].returncode == EXIT_PEER_LOST, err0[-3000:]
        assert "error: process 1 of 2 was lost (it failed: RuntimeError: boom in process 1); process 0 stops too." in err0, \
            err0[-3000:]


@pytest.mark.slow(seconds=4)
@pytest.mark.timeout(300)
def test_when_process_0_dies_jax_ends_the_others_at_once():
    """Process 0 hosts JAX's coordination service: without it no process can go on, and JAX's
    client ends the others itself, before any Python code runs (README and DESIGN.md say so)."""
    with started("hang") as procs:
        wait_running(procs[1])
        procs[0].kill()
        _, err = procs[1].communicate(timeout=WAIT_S)
        assert procs[1].returncode not in (0, EXIT_PEER_LOST), err[-3000:]
        assert "Terminating process because the JAX distributed service detected fatal errors" in err, err[-3000:]


def test_stop_ends_the_watch_thread_before_the_interpreter_finalizes():
    """A daemon watch thread left inside a call to JAX's client at exit is unwound through C++
    frames and aborts the process ("FATAL: exception not rethrown", seen in a 2-process job):
    `stop` (registered at exit by `distributed.initialize`, and called by `done`) joins it."""
    import threading

    from sebulba.experiment.peers import PeerWatch

    watch = PeerWatch(0, 2, timeout_s=1.0, on_lost=lambda message: None).start()
    assert any(t.name == "sebulba-peer-watch" for t in threading.enumerate())
    watch.stop()
    assert not any(t.name == "sebulba-peer-watch" for t in threading.enumerate())
