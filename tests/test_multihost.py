"""Training across processes through jax.distributed: 2 processes on 127.0.0.1, 2 forced CPU
devices each; each runs its own inferencers and envs, the learner spans all 4 devices."""

import json
import socket
import subprocess
import sys

import numpy as np
import pytest

from tests.support.cli import ROOT, child_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow(seconds=18)
@pytest.mark.multiprocess
@pytest.mark.timeout(600)
@pytest.mark.xdist_group("multihost")  # one worker: each job takes both cores
@pytest.mark.parametrize("mode", ["async"])  # sync mode: the CLI jobs of tests/test_multihost_recovery.py
def test_two_processes_train_one_learner(tmp_path, mode):
    address = f"127.0.0.1:{free_port()}"
    env = child_env(XLA_FLAGS="--xla_force_host_platform_device_count=2")
    outs = [tmp_path / f"p{i}.json" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-m", "tests.support.multihost_worker", address, str(i), str(outs[i]), mode],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=540)[0])
    finally:
        for p in procs:
            p.kill()
    for i, p in enumerate(procs):
        assert p.returncode == 0, f"process {i} failed:\n{logs[i][-4000:]}"
    a, b = (json.loads(o.read_text()) for o in outs)
    assert a["networks"].keys() == b["networks"].keys()
    for k in a["networks"]:
        np.testing.assert_array_equal(a["networks"][k], b["networks"][k], err_msg=f"networks differ across processes at {k}")
    assert a["learner_steps"] == b["learner_steps"] == 6
    assert a["env_steps"] == b["env_steps"] == 2 * 6 * 4 * 10  # the job's: both processes' envs
    assert a["loss"] == b["loss"]  # one learner: the metrics are averaged over all 4 devices
