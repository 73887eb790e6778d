"""--resume with flags: the budget, logging and checkpoint cadence may change (a run can be
extended), anything that defines the run is refused by name, and a finished run resumed with no
new budget says so and trains nothing, changing no file. An extended run's records say what it
now follows: config.json its budget and learning-rate schedule, with the history of its resumes;
log.txt every line it printed. Real runs through the CLI."""

import json
import re

import pytest

from experiments.impala import make_experiment
from tests.support.cli import file_hashes, last_metrics, run_experiment

ARGS = ["--total_env_steps=6400", "--checkpoint_every=5", "--noprogress", "--log_every_s=0.1"]


@pytest.mark.slow(seconds=25)
def test_resume_extends_refuses_and_knows_when_finished(tmp_path):
    out = run_experiment("experiments.impala", *ARGS, f"--logdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, first = last_metrics(tmp_path)
    before = file_hashes(run_dir)
    started = json.loads((run_dir / "config.json").read_text())

    # Finished, no new budget (or a smaller one): says so, trains nothing, changes no file, exits 0.
    for budget in ([], ["--total_env_steps=100"]):
        out = run_experiment("experiments.impala", f"--resume={run_dir}", "--noprogress", *budget)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.startswith(f"finished already: {int(first['env_steps']):,} env steps"), out.stdout
        assert file_hashes(run_dir) == before

    # A flag that defines the run: refused by name, nothing touched.
    out = run_experiment("experiments.impala", f"--resume={run_dir}", "--num_envs=8", "--noprogress")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "error: --num_envs=8 cannot change when resuming: the run was started with its preset's value" in out.stderr
    assert file_hashes(run_dir) == before

    # A larger budget extends it, and the run's records say what it now follows.
    out = run_experiment("experiments.impala", f"--resume={run_dir}", "--total_env_steps=12800")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resuming with total_env_steps=12800 (was 6400)" in out.stderr.splitlines()
    _, last = last_metrics(tmp_path)
    assert int(last["env_steps"]) >= 12_800 and int(last["learner_steps"]) > int(first["learner_steps"])
    assert json.loads((run_dir / "flags.json").read_text())["total_env_steps"] == 12_800
    record = json.loads((run_dir / "config.json").read_text())
    extended = make_experiment("CartPole-v1", total_env_steps=12_800)
    assert record["total_env_steps"] == 12_800 and record["started"] == started["started"]
    assert record["agent"]["config"]["lr_decay_steps"] == extended.agent.lr_decay_steps
    assert extended.agent.lr_decay_steps > started["agent"]["config"]["lr_decay_steps"]  # the schedule it follows now
    (resume,) = record["resumes"]
    assert resume["flags"] == {"total_env_steps": 12_800} and resume["was"] == {"total_env_steps": 6400}
    assert resume["env_steps"] == int(first["env_steps"]) and resume["learner_steps"] == int(first["learner_steps"])
    assert f"--resume={run_dir}" in resume["command"] and resume["time"] >= started["started"]

    # Every line it printed is in log.txt: the run directory, resuming, progress, done.
    log = (run_dir / "log.txt").read_text()
    printed = [line for line in out.stderr.splitlines() + out.stdout.splitlines()
               if line.strip() and not re.match(r"[IWEF]\d{4} \d\d:", line)]  # ours: not a library's absl-prefixed line
    assert any(line.startswith(f"{run_dir.name}: env steps ") for line in printed) and printed[-1].startswith("done: ")
    for line in printed:
        assert f"] {line}" in log, line

    out = run_experiment("experiments.impala", f"--resume={run_dir}", "--noprogress")
    assert out.returncode == 0 and out.stdout.startswith(f"finished already: {int(last['env_steps']):,} env steps")
