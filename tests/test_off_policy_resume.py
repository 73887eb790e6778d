"""An off-policy run's replay in its checkpoints: saved by default (its size said in the run's
first lines), so SIGTERM and --resume end bit-identical to an uninterrupted run in sync mode;
--nosave_replay leaves it out, and a resume from such a checkpoint says that its replay starts
empty. On-policy agents have no replay to save."""

import logging
import signal
import subprocess
import sys

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

import envs
from sebulba.agents.dqn import DQN, DQNConfig
from sebulba.agents.impala import Impala, ImpalaConfig
from sebulba.agents.ppo import PPO, PPOConfig
from sebulba.agents.r2d2 import R2D2, R2D2Config
from sebulba.agents.sac import SAC, SACConfig
from sebulba.agents.td3 import TD3, TD3Config
from sebulba.experiment.runner import check_disk_room, replay_in_checkpoints
from sebulba.loop.memory import byte_size
from sebulba.loop.config import LoopConfig
from sebulba.loop.memory import estimate
from tests.support.cli import ROOT, child_env, last_metrics, run_experiment
from tests.test_resume_drills import WAIT_S, assert_continuous, complete_checkpoints, final_row, wait_for_checkpoint

# DQN on CartPole, small: 8 envs x 4 steps a cycle, sync; 256 learner steps, a checkpoint every 20.
ARGS = ["--total_env_steps=8192", "--checkpoint_every=20", "--noprogress", "--log_every_s=0.2", "--seed=1",
        "--hidden_sizes=32,32", "--batch_size=32", "--learning_starts=256", "--replay_capacity=4096"]
TIMING = {"wall_time", "sps", "updates_per_s", "learner_wait_frac", "actor_wait_frac"}  # the clock's, not the run's
REPLAY_LINE = "checkpoints include the replay: "
EMPTY_REPLAY = "holds no replay: the resumed run starts with an empty replay, so it will not end as an uninterrupted run"


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.slow(seconds=15)
@pytest.mark.timeout(900)
def test_sigterm_and_resume_with_the_defaults_ends_bit_identical(tmp_path):
    """The replay is in the checkpoints by default: the resumed run's last metrics row is the
    uninterrupted run's in every column but the clock's."""
    straight = run_experiment("experiments.dqn", *ARGS, f"--logdir={tmp_path / 'straight'}")
    assert straight.returncode == 0, straight.stderr[-3000:]
    straight_dir, uninterrupted = last_metrics(tmp_path / "straight")
    first = lines_of(straight.stderr)
    assert first[0].startswith("run directory: ") and first[1].startswith(REPLAY_LINE), first[:3]
    saved = saved_replay_bytes(straight_dir / "checkpoints" / str(complete_checkpoints(straight_dir)[-1]))
    assert first[1] == f"{REPLAY_LINE}{byte_size(saved)} each (--nosave_replay to leave it out)", (first[1], saved)

    logdir = tmp_path / "stopped"
    proc = subprocess.Popen([sys.executable, "-m", "experiments.dqn", *ARGS, f"--logdir={logdir}"], cwd=ROOT,
                            env=child_env(XLA_FLAGS=""), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_dir = wait_for_checkpoint(proc, logdir, at_least=20)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 143, (proc.returncode, stdout[-2000:], stderr[-3000:])
    stopped_at = int(final_row(run_dir)["learner_steps"])
    assert 20 <= stopped_at < 256 and complete_checkpoints(run_dir)[-1] == stopped_at

    out = run_experiment("experiments.dqn", "--resume", str(run_dir), "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert EMPTY_REPLAY not in out.stderr, out.stderr[-3000:]
    final = final_row(run_dir)
    differ = {k: (final[k], uninterrupted[k]) for k in uninterrupted if k not in TIMING and final[k] != uninterrupted[k]}
    assert not differ, differ
    assert int(final["learner_steps"]) == 256 and float(final["replay_size"]) > 0
    assert_continuous(run_dir)


def saved_replay_bytes(checkpoint) -> int:
    """The bytes of the replay in a checkpoint, from its arrays' shapes and dtypes."""
    meta = ocp.StandardCheckpointer().metadata(checkpoint / "state").item_metadata
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(meta["experience"]))


@pytest.mark.slow(seconds=7)
def test_a_resume_from_a_checkpoint_without_the_replay_says_it_starts_empty(tmp_path):
    """--nosave_replay: no replay line at the start, and the resume (here extending the finished
    run) says in one line that its replay starts empty."""
    short = [a if not a.startswith("--total_env_steps") else "--total_env_steps=1024" for a in ARGS]
    out = run_experiment("experiments.dqn", *short, "--nosave_replay", f"--logdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert REPLAY_LINE not in out.stderr, out.stderr[-3000:]
    run_dir, _ = last_metrics(tmp_path)
    out = run_experiment("experiments.dqn", "--resume", str(run_dir), "--total_env_steps=2048", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    notices = [line for line in lines_of(out.stderr) if EMPTY_REPLAY in line]
    assert len(notices) == 1 and notices[0] == f"warning: checkpoint 32 {EMPTY_REPLAY} would (checkpoints hold it unless --nosave_replay)", out.stderr[-3000:]
    assert REPLAY_LINE not in out.stderr  # flags.json keeps --nosave_replay


@pytest.mark.parametrize("agent, config, env_id, steps", [
    (DQN, DQNConfig(), "CartPole-v1", 4), (SAC, SACConfig(), "Pendulum-v1", 8), (TD3, TD3Config(), "Pendulum-v1", 8),
    (R2D2, R2D2Config(), "CartPole-v1", R2D2Config().cycle_length), (Impala, ImpalaConfig(), "CartPole-v1", 20),
    (PPO, PPOConfig(), "CartPole-v1", 128)])
def test_the_off_policy_agents_have_a_replay_and_the_on_policy_ones_none(agent, config, env_id, steps):
    """What the default rests on: the experience state before the first cycle is a replay (bytes)
    for DQN, SAC, TD3 and R2D2, and empty for IMPALA and PPO (each cycle's trajectory)."""
    need = estimate(agent(envs.make_spec(env_id), config), LoopConfig(env_id=env_id, num_envs=4, steps_per_cycle=steps),
                    anakin=False)
    assert (need.experience > 0) == (agent not in (Impala, PPO)), need


def test_the_default_saves_a_replay_and_says_its_size(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="sebulba")
    assert replay_in_checkpoints(None, 3 * 2**20, 3, tmp_path, "DQN") is True
    assert caplog.messages == [f"{REPLAY_LINE}3.0 MiB each (--nosave_replay to leave it out)"]
    caplog.clear()
    assert replay_in_checkpoints(False, 3 * 2**20, 3, tmp_path, "DQN") is False and not caplog.messages
    assert replay_in_checkpoints(None, 0, 3, tmp_path, "PPO") is False and not caplog.messages
    assert replay_in_checkpoints(True, 0, 3, tmp_path, "PPO") is True  # asked for: kept, and said to be unneeded
    assert caplog.messages == ["--save_replay: PPO keeps no replay (its experience state is each cycle's trajectory, "
                               "which a resume does not need); checkpoints hold the latest trajectory"]


def test_a_replay_the_disk_cannot_hold_is_refused_in_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"checkpoints with the replay need 16384\.0 GiB \(3 kept, --keep_checkpoints, "
                                         r"and one being written, 4096\.0 GiB each\) .* --nosave_replay") as e:
        check_disk_room(tmp_path, 2**42, 3)
    assert "\n" not in str(e.value)
    check_disk_room(tmp_path, 2**10, 3)  # 4 KiB fit
    with pytest.raises(ValueError, match="--nosave_replay"):  # through the default, before any checkpoint
        replay_in_checkpoints(None, 2**42, 3, tmp_path, "R2D2")
