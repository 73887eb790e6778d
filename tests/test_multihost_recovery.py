"""Multi-process runs that survive (issue 28), as users launch them: the entry point once per
process, 2 real processes on 127.0.0.1 through jax.distributed, real kills, real orbax
checkpoints. Sync mode, so a resumed job must end exactly where an uninterrupted one ends.

Every drill is of R2D2 with its replay in the checkpoints (each process's replay shards), so one
uninterrupted job is the reference of all of them: each job takes both cores for about 35 s."""

import csv
import signal
from pathlib import Path

import pytest

from tests.support.cli import run_experiment
from tests.support.job import (
    Job,
    assert_trees_equal,
    checkpoint_state,
    complete_checkpoints,
    wait_for_checkpoint,
)
from tests.support.wandb_files import offline_runs, read_offline_run

EXIT_PEER_LOST = 75
R2D2 = ["--num_envs=4", "--total_env_steps=2000", "--checkpoint_every=10", "--save_replay", "--replay_capacity=100",
        "--min_replay_size=8", "--optims_per_cycle=2", "--batch_size=4", "--log_every_s=0.5", "--noprogress",
        "--peer_timeout_s=10"]  # 25 learner steps of 2 x 4 envs x 10 steps

pytestmark = [pytest.mark.xdist_group("multihost"), pytest.mark.multiprocess]  # one worker: each job takes both cores


def job_run(module: str, args: list[str], workdir: Path) -> Path:
    """An uninterrupted job; its run directory."""
    logdir = workdir / "runs"
    job = Job(module, [*args, f"--logdir={logdir}"], workdir)
    job.assert_ok()
    (run_dir,) = logdir.iterdir()
    return run_dir


def rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open()))


def assert_continuous(path: Path) -> None:
    steps = [int(r["env_steps"]) for r in rows(path)]
    assert steps == sorted(set(steps)), f"{path} has a duplicate or out-of-order row: {steps}"


@pytest.fixture(scope="session")  # session: built once on the group's worker, whatever the order of its tests
def straight(tmp_path_factory) -> Path:
    return job_run("experiments.r2d2", [*R2D2, "--wandb", "--wandb_mode=offline"],  # W&B: does not change the run
                   tmp_path_factory.mktemp("r2d2-straight"))


@pytest.mark.slow(seconds=30)
def test_a_job_writes_one_run_directory_that_says_which_process_wrote_what(straight):
    run_dir = straight
    import json

    processes = json.loads((run_dir / "processes.json").read_text())
    assert [p["process"] for p in processes] == [0, 1]
    assert "metrics.csv" in processes[0]["writes"] and "processes/p1/metrics.csv" in processes[1]["writes"]
    job, own = rows(run_dir / "metrics.csv"), [rows(run_dir / "processes" / f"p{i}" / "metrics.csv") for i in range(2)]
    assert (run_dir / "learning_curve.png").exists() and (run_dir / "processes" / "p1" / "log.txt").exists()
    assert int(job[-1]["env_steps"]) == 2000 and int(job[-1]["learner_steps"]) == 25  # the job's budget, not each's
    for r, a, b in zip(job, *own):  # each process reports at the same learner steps; process 0 writes the totals
        assert r["env_steps"] == a["env_steps"] == b["env_steps"]
        assert int(r["episodes"]) == int(a["episodes"]) + int(b["episodes"])
        assert float(r["sps"]) == pytest.approx(float(a["sps"]) + float(b["sps"]))
        assert a["loss"] == b["loss"] and (r["loss"] == a["loss"] == "" or float(r["loss"]) == pytest.approx(float(a["loss"])))
    assert complete_checkpoints(run_dir)[-1] == 25
    outs = [(run_dir.parent.parent / f"p{i}.out").read_text() for i in range(2)]  # stdout: our lines only, labelled
    assert not any("Gloo" in out for out in outs), outs
    assert outs[0].startswith("done (the job of 2 processes): 2,000 env steps"), outs[0]
    assert outs[1].startswith("done (process 1 of 2: its own episodes; the job's are process 0's): "), outs[1]
    # --wandb: process 0 alone logs, the job's totals
    (offline,) = offline_runs(run_dir)
    assert not list((run_dir / "processes").rglob("offline-run-*"))
    summary = read_offline_run(offline)["summary"]
    assert summary["env_steps"] == 2000 and summary["episodes"] == int(job[-1]["episodes"])


@pytest.mark.slow(seconds=45)
@pytest.mark.timeout(900)
def test_kill_9_one_process_the_other_stops_naming_it_then_both_resume_exactly(tmp_path, straight):
    logdir = tmp_path / "runs"
    job = Job("experiments.r2d2", [*R2D2, f"--logdir={logdir}"], tmp_path / "first")
    run_dir = wait_for_checkpoint(job, logdir, at_least=10)
    job.procs[1].send_signal(signal.SIGKILL)
    codes = job.wait()
    out, err = job.output(0)
    assert codes[0] == EXIT_PEER_LOST, job.describe()
    assert "error: process 1 of 2 was lost (no heartbeat for 10 s: it died, hung, or its host cannot be reached); " \
           "process 0 stops too." in err, err[-3000:]
    assert f"Relaunch every process with --resume {run_dir}." in err, err[-3000:]
    saved = complete_checkpoints(run_dir)
    assert saved and saved[-1] < 25, saved

    # A resume with another process count fails at start, with one line.
    single = run_experiment("experiments.r2d2", f"--resume={run_dir}", "--noprogress")
    assert single.returncode == 2, single.stderr[-3000:]
    assert single.stderr.strip().splitlines()[-1].startswith(
        f"error: {run_dir} was written by 2 process(es) and this job has 1: relaunch it with --num_processes 2"), single.stderr

    resumed = Job("experiments.r2d2", [f"--resume={run_dir}", "--noprogress"], tmp_path / "resumed")
    resumed.assert_ok()
    assert f"resumed from checkpoint {saved[-1]}" in resumed.output(0)[1]
    assert len(list(logdir.iterdir())) == 1, "the resumed job must continue in its own directory"
    assert complete_checkpoints(run_dir)[-1] == 25
    assert_trees_equal(checkpoint_state(run_dir), checkpoint_state(straight), "final learner states and replays")
    for own in ("metrics.csv", "processes/p0/metrics.csv", "processes/p1/metrics.csv"):
        assert_continuous(run_dir / own)
    assert rows(run_dir / "metrics.csv")[-1]["episode_return_mean"] == rows(straight / "metrics.csv")[-1]["episode_return_mean"]


@pytest.mark.slow(seconds=33)
@pytest.mark.timeout(900)
def test_sigterm_to_one_process_stops_both_with_a_checkpoint_and_replay_that_resume_exactly(tmp_path, straight):
    logdir = tmp_path / "runs"
    job = Job("experiments.r2d2", [*R2D2, f"--logdir={logdir}"], tmp_path / "first")
    run_dir = wait_for_checkpoint(job, logdir, at_least=10)
    job.procs[1].send_signal(signal.SIGTERM)
    codes = job.wait()
    assert codes == [143, 143], job.describe()  # both unfinished; process 0 stopped by process 1's signal
    stopped_at = complete_checkpoints(run_dir)[-1]
    assert stopped_at < 25, "the job ran to its end before the signal"
    assert "interrupted by SIGTERM at " in job.output(1)[0], job.describe()
    assert "interrupted by a signal to another process of the job at " in job.output(0)[0], job.describe()
    assert f"--resume {run_dir}" in job.output(0)[0]

    resumed = Job("experiments.r2d2", [f"--resume={run_dir}", "--noprogress"], tmp_path / "resumed")
    resumed.assert_ok()
    assert f"resumed from checkpoint {stopped_at}" in resumed.output(0)[1]
    final = checkpoint_state(run_dir)
    assert "experience" in final, "--save_replay: the replay shards of both processes are in the checkpoint"
    assert_trees_equal(final, checkpoint_state(straight), "final learner states and replays")


@pytest.mark.timeout(300)
def test_a_process_that_cannot_see_the_run_directory_stops_every_process_at_start(tmp_path, straight):
    job = Job("experiments.r2d2", ["--noprogress", "--peer_timeout_s=10"], tmp_path,
              process_args={0: [f"--resume={straight}"], 1: [f"--resume={tmp_path / 'elsewhere'}"]})
    assert job.wait() == [2, 2], job.describe()
    err0, err1 = job.output(0)[1], job.output(1)[1]
    assert f"error: process 1 failed reading the resumed run's flags: {tmp_path / 'elsewhere'} is not a run directory" in err0, err0
    assert f"error: {tmp_path / 'elsewhere'} is not a run directory" in err1, err1
