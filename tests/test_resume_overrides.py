"""--resume with flags: the budget, logging and checkpoint cadence may change (a run can be
extended), anything that defines the run is refused by name, and a finished run resumed with no
new budget says so and trains nothing. Real runs through the CLI."""

import csv
import json

import pytest

from tests.support.cli import last_metrics, run_experiment

ARGS = ["--total_env_steps=6400", "--checkpoint_every=5", "--noprogress", "--log_every_s=0.1"]


def rows(run_dir):
    return list(csv.DictReader((run_dir / "metrics.csv").open()))


def checkpoints(run_dir):
    return sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit())


@pytest.mark.slow(seconds=16)
def test_resume_extends_refuses_and_knows_when_finished(tmp_path):
    out = run_experiment("experiments.impala", *ARGS, f"--logdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, first = last_metrics(tmp_path)
    before_rows, before_ckpts = rows(run_dir), checkpoints(run_dir)

    # Finished, no new budget: says so, trains nothing (no new row, no new checkpoint), exits 0.
    out = run_experiment("experiments.impala", f"--resume={run_dir}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith(f"finished already: {int(first['env_steps']):,} env steps"), out.stdout
    assert rows(run_dir) == before_rows and checkpoints(run_dir) == before_ckpts

    # A flag that defines the run: refused by name, nothing touched.
    out = run_experiment("experiments.impala", f"--resume={run_dir}", "--num_envs=8", "--noprogress")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "error: --num_envs=8 cannot change when resuming: the run was started with its preset's value" in out.stderr
    assert rows(run_dir) == before_rows

    # A larger budget extends it, and the run remembers its new budget.
    out = run_experiment("experiments.impala", f"--resume={run_dir}", "--total_env_steps=12800", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resuming with total_env_steps=12800 (was 6400)" in out.stderr
    _, last = last_metrics(tmp_path)
    assert int(last["env_steps"]) >= 12_800 and int(last["learner_steps"]) > int(first["learner_steps"])
    assert json.loads((run_dir / "flags.json").read_text())["total_env_steps"] == 12_800
    out = run_experiment("experiments.impala", f"--resume={run_dir}", "--noprogress")
    assert out.returncode == 0 and out.stdout.startswith(f"finished already: {int(last['env_steps']):,} env steps")
