"""`resume.plan_resume`, the one place a run decides what it does with its directory: start a new
run, continue or extend a resumed one, or find it finished; and what it refuses, before anything
is built."""

from contextlib import closing

import pytest

import envs
import sebulba
from sebulba.agents import SimplePolicyGradient, SPGConfig
from sebulba.experiment.resume import plan_resume
from sebulba.experiment.run_dir import RunDir
from sebulba.experiment.runner import CheckpointFlags, run
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer

LOOP = sebulba.LoopConfig(env_id="CartPole-v1", num_envs=8, steps_per_cycle=16, async_mode=False,
                          inferencers_per_device=1, log_every_s=1e3)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A run of 512 env steps (4 learner steps), checkpointed every 2, with flags.json's budget."""
    agent = SimplePolicyGradient(envs.make_spec("CartPole-v1"), SPGConfig(hidden_sizes=(8,)))
    result = run("plan", agent, LOOP, 512, str(tmp_path_factory.mktemp("runs")), flags={"total_env_steps": 512},
                 progress=False, checkpoints=CheckpointFlags(every_learner_steps=2))
    assert result.final["env_steps"] == 512 and result.checkpoint_step == 4
    return result.run_dir


def checkpointer(run_dir: RunDir) -> Checkpointer:
    return Checkpointer(CheckpointConfig(str(run_dir.checkpoint_dir), every_learner_steps=2))


def test_a_new_run_starts(tmp_path):
    plan = plan_resume(None, RunDir(tmp_path), None, LOOP, {}, 1000)
    assert plan.action == "start" and not plan.resumes and plan.env_steps is None and plan.changed == {}


def test_a_run_that_met_its_budget_is_finished_and_a_larger_budget_extends_it(finished_run):
    with closing(checkpointer(finished_run)) as ckpt:
        finished = plan_resume(str(finished_run.path), finished_run, ckpt, LOOP, {"total_env_steps": 512}, 512)
        extended = plan_resume(str(finished_run.path), finished_run, ckpt, LOOP, {"total_env_steps": 1024}, 1024)
    assert finished.action == "finished" and not finished.resumes and finished.env_steps == 512
    assert extended.action == "extend" and extended.resumes and extended.env_steps == 512
    assert extended.changed == {"total_env_steps": (512, 1024)}


def test_a_resume_within_the_budget_continues(finished_run):
    with closing(checkpointer(finished_run)) as ckpt:
        # the checkpoint at learner step 4 is the latest: as if the run's own budget were larger
        plan = plan_resume(str(finished_run.path), finished_run, ckpt, LOOP, {"total_env_steps": 512}, 768)
    assert plan.action == "continue" and plan.resumes and plan.meta["learner_steps"] == 4 and plan.changed == {}


def test_a_resume_without_checkpoints_or_with_another_layout_is_refused(finished_run):
    with pytest.raises(ValueError, match="resuming needs checkpoints"):
        plan_resume(str(finished_run.path), finished_run, None, LOOP, {}, 1024)
    other = sebulba.LoopConfig(**{**LOOP.__dict__, "num_envs": 4})
    with closing(checkpointer(finished_run)) as ckpt, pytest.raises(ValueError, match="written with num_envs=8, this run has num_envs=4"):
        plan_resume(str(finished_run.path), finished_run, ckpt, other, {}, 1024)
