"""A run directory records what ran: the resolved configuration (the preset's values, not the
flags' nulls), package versions, the git commit and the devices, in config.json."""

import json
import subprocess

import jax
import pytest

from experiments.impala import make_experiment
from tests.support.cli import ROOT, last_metrics, run_experiment


@pytest.mark.slow(seconds=4)
def test_config_json_holds_the_resolved_run(tmp_path):
    out = run_experiment("experiments.impala", "--total_env_steps=2000", "--learning_rate=0.004", f"--logdir={tmp_path}",
                         "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, _ = last_metrics(tmp_path)
    flags = json.loads((run_dir / "flags.json").read_text())
    assert flags["num_envs"] is None and flags["discount"] is None  # the flags as given: the preset's values are not there
    record = json.loads((run_dir / "config.json").read_text())
    preset = make_experiment("CartPole-v1", learning_rate=0.004, total_env_steps=2000)
    assert record["experiment"] == "impala" and record["total_env_steps"] == 2000
    assert record["loop"]["env_id"] == "CartPole-v1" and record["loop"]["num_envs"] == preset.loop.num_envs
    agent = record["agent"]
    assert agent["class"] == "sebulba.agents.impala.agent.Impala"
    assert agent["config"]["learning_rate"] == 0.004  # the flag
    assert agent["config"]["discount"] == preset.agent.discount  # the preset's value, filled in
    assert agent["config"]["hidden_sizes"] == list(preset.agent.hidden_sizes)
    assert record["versions"]["jax"] == jax.__version__ and record["versions"]["gymnasium"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode == 0:  # a checkout (CI clones one); a tarball has no commit to record
        assert record["git"]["commit"] == head.stdout.strip()
    else:
        assert record["git"] is None
    assert record["devices"] == [{"id": 0, "platform": "cpu", "kind": "cpu", "process": 0}]
    assert record["command"][-5:] == ["--total_env_steps=2000", "--learning_rate=0.004", f"--logdir={tmp_path}",
                                      "--noprogress", "--nolearning_curve"]  # the last: tests/support/cli.py's
