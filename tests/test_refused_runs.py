"""A run refused at setup leaves no run directory (nor the logdir made for it), through the CLI
and `runner.run`; a resume refused at setup, or one that finds the run finished, changes no file
of the run it was given."""

import dataclasses

import pytest

import envs
import sebulba
from sebulba.agents import SimplePolicyGradient, SPGConfig
from sebulba.experiment.errors import UserError
from sebulba.experiment.runner import CheckpointFlags, run
from tests.support.agents import BrokenAgent
from tests.support.cli import file_hashes, run_experiment

LOOP = sebulba.LoopConfig(env_id="CartPole-v1", num_envs=8, steps_per_cycle=16, async_mode=False,
                          inferencers_per_device=1, log_every_s=1e3)


def agent():
    return SimplePolicyGradient(envs.make_spec("CartPole-v1"), SPGConfig(hidden_sizes=(8,)))


@pytest.mark.slow(seconds=5)
def test_a_run_refused_while_its_loop_is_built_leaves_no_directory_on_the_cli(tmp_path):
    logdir = tmp_path / "new" / "runs"
    out = run_experiment("experiments.ppo", "--actor_devices=9", f"--logdir={logdir}", "--noprogress", timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert out.stderr.splitlines()[-1].startswith("error: actor_devices"), out.stderr[-3000:]
    assert "the run stopped before training" in out.stderr
    assert not (tmp_path / "new").exists()  # neither the run directory nor the logdir made for it


def test_a_run_refused_at_setup_through_the_api_removes_only_what_it_made(tmp_path):
    logdir = tmp_path / "runs"
    logdir.mkdir()
    (logdir / "other-run").mkdir()
    with pytest.raises(UserError, match="learner_devices .* do not exist"):
        run("refused", agent(), dataclasses.replace(LOOP, learner_devices=(7,)), 1000, str(logdir), flags={},
            progress=False)
    assert sorted(p.name for p in logdir.iterdir()) == ["other-run"]


@pytest.mark.slow(seconds=12)
def test_a_resume_refused_or_finished_changes_no_file(tmp_path):
    checkpoints = CheckpointFlags(every_learner_steps=4)
    result = run("resumed", agent(), LOOP, 1024, str(tmp_path), flags={}, progress=False, checkpoints=checkpoints)
    run_dir = result.run_dir.path
    before = file_hashes(run_dir)
    assert "log.txt" in before and "config.json" in before

    again = run("resumed", agent(), LOOP, 1024, str(tmp_path), flags={}, progress=False, checkpoints=checkpoints,
                resume=str(run_dir))
    assert again.finished_before and file_hashes(run_dir) == before

    with pytest.raises(UserError, match="num_envs"):  # the checkpoint's layout differs: refused before building
        run("resumed", agent(), dataclasses.replace(LOOP, num_envs=4), 2048, str(tmp_path), flags={}, progress=False,
            checkpoints=checkpoints, resume=str(run_dir))
    with pytest.raises(ZeroDivisionError, match="on purpose"):  # fails while the loop is built
        run("resumed", BrokenAgent(envs.make_spec("CartPole-v1")), LOOP, 2048, str(tmp_path), flags={},
            progress=False, checkpoints=checkpoints, resume=str(run_dir))
    assert file_hashes(run_dir) == before and [p.name for p in tmp_path.iterdir()] == [run_dir.name]
