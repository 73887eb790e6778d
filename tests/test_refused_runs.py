"""A run refused at setup leaves no run directory (nor the logdir made for it), through the CLI
and `runner.run`; a resume refused at setup, or one that finds the run finished, changes no file
of the run it was given."""

import dataclasses
import signal
import subprocess
import sys

import jax.numpy as jnp
import pytest

import envs
import sebulba
from sebulba.agents import SimplePolicyGradient, SPGConfig
from sebulba.experiment.errors import UserError
from sebulba.experiment.runner import CheckpointFlags, run
from sebulba.loop.memory import estimate
from tests.support.agents import BrokenAgent
from tests.support.cli import ROOT, child_env, file_hashes, run_experiment

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


@pytest.mark.slow(seconds=8)
def test_sigterm_while_the_run_is_set_up_removes_the_new_run_and_says_so(tmp_path):
    """SIGTERM while the env pools build (an env whose workers never finish their first reset):
    the setup unwinds (pools closed, the compile in flight waited for), the new run directory and
    the logdir made for it are removed, and the run ends with one line and SIGTERM's status."""
    logdir = tmp_path / "new" / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "experiments.ppo", "--env=tests.support.toy_envs:ToySlowStart-v0",
                             f"--logdir={logdir}", "--noprogress"], cwd=ROOT, env=child_env(XLA_FLAGS=""),
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        lines = []
        for line in proc.stderr:  # the pools are building once this line is out
            lines.append(line)
            if line.startswith("compiling the act and the update while"):
                break
        else:
            pytest.fail(f"the run ended before building its pools: {''.join(lines)[-3000:]}")
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        status = proc.wait(timeout=120)
    finally:
        proc.kill()
    assert status == 128 + signal.SIGTERM, rest[-3000:]
    assert "Traceback" not in rest and "Fatal" not in rest, rest[-3000:]
    assert rest.strip().splitlines()[-1] == "stopped by SIGTERM while the run was being set up, before training", rest
    assert "the run stopped before training" in rest
    assert not (tmp_path / "new").exists()


class HugeReplayAgent(SimplePolicyGradient):
    def init_experience(self, networks, layout, key):
        return {"replay": jnp.zeros((2**46,), jnp.uint8)}  # 64 TiB


def test_the_memory_estimate_from_shapes():
    """CartPole (4 float32s a step, Discrete actions as int64), 8 envs, T = 16, one inferencer:
    the pool's observations, each inferencer's trajectory and the learner's copy, by hand."""
    need = estimate(agent(), LOOP, anakin=False)
    assert need.envs == 8 * 16
    assert need.trajectories == 2 * (17 * 8 * (16 + 4 + 3) + 16 * 8 * 8)
    anakin = estimate(agent(), dataclasses.replace(LOOP, num_seeds=3), anakin=True)
    assert (anakin.envs, anakin.trajectories) == (3 * 8 * 16, 3 * (17 * 8 * (16 + 4 + 3) + 16 * 8 * 8))
    huge = estimate(HugeReplayAgent(envs.make_spec("CartPole-v1"), SPGConfig(hidden_sizes=(8,))), LOOP, anakin=False)
    assert huge.experience == 2**46 and huge.total > 2**46


def test_a_run_that_cannot_fit_is_refused_before_anything_is_built(tmp_path):
    big = HugeReplayAgent(envs.make_spec("CartPole-v1"), SPGConfig(hidden_sizes=(8,)))
    with pytest.raises(UserError, match=r"this run needs at least 65536\.0 GiB on the host.*a smaller replay"):
        run("refused", big, LOOP, 1000, str(tmp_path / "runs"), flags={}, progress=False)
    assert not (tmp_path / "runs").exists()
