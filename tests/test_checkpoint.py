"""Checkpoints with orbax: exact resume in sync mode, atomic writes, the last K kept."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.learner import NonFiniteError
from tests.support.agents import CountingAgent, MinibatchSPG

CARTPOLE = envs.make_spec("CartPole-v1")


def make_loop(minibatches: int = 1, **kw):
    cfg = sebulba.LoopConfig(num_envs=8, steps_per_cycle=10, async_mode=False, inferencers_per_device=2,
                             learner_devices=(1, 2), seed=7, log_every_s=1000.0, **kw)
    return sebulba.GymnasiumLoop(MinibatchSPG(CARTPOLE, minibatches), cfg)


def networks(loop):
    return jax.tree.map(np.asarray, loop.learner.networks)


@pytest.mark.slow(seconds=8)
@pytest.mark.parametrize("minibatches", [2])
def test_interrupted_and_resumed_run_is_bit_identical(tmp_path, minibatches):
    """With 2 minibatches the learner's key and optimizer count advance twice per update; one
    minibatch is the resume drills' case (tests/test_resume_drills.py: the CLI, sync mode, a
    resumed run ends exactly where an uninterrupted one ends)."""
    with make_loop(minibatches) as loop:
        loop.run(max_cycles=12)
        straight = networks(loop)
        straight_report = loop.reports[-1]
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=5, keep=2)
    with make_loop(minibatches) as loop:
        loop.run(max_cycles=7, checkpointer=Checkpointer(ckpt))  # saves at 5 and at the end (7)
    assert Checkpointer(ckpt).latest_step() == 7
    with make_loop(minibatches) as loop:  # a fresh process would build exactly this
        ctx = loop.run(max_cycles=12, checkpointer=Checkpointer(ckpt), resume=True)
        resumed = networks(loop)
        assert ctx.learner_steps == 12 and ctx.env_steps == 12 * 8 * 10
        assert loop.reports[-1]["episodes"] == straight_report["episodes"]
        assert loop.reports[-1]["episode_return_mean"] == straight_report["episode_return_mean"]
    jax.tree.map(np.testing.assert_array_equal, straight, resumed)
    assert sorted(int(p.name) for p in (tmp_path / "ckpt").iterdir() if p.name.isdigit()) == [10, 12]  # keep=2


@pytest.mark.slow(seconds=13)
def test_a_partial_checkpoint_is_never_loaded(tmp_path):
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=3, keep=5)
    with make_loop() as loop:
        loop.run(max_cycles=3, checkpointer=Checkpointer(ckpt))
    # what a kill -9 during a write leaves: orbax's temporary directory of a later step
    partial = tmp_path / "ckpt" / "6.orbax-checkpoint-tmp-1234"
    partial.mkdir()
    (partial / "junk").write_text("half written")
    assert Checkpointer(ckpt).latest_step() == 3
    with make_loop() as loop:
        ctx = loop.run(max_cycles=4, checkpointer=Checkpointer(ckpt), resume=True)
        assert ctx.learner_steps == 4


class EmptyLeaves(CountingAgent):
    """CountingAgent with zero-size arrays in its networks and its step state."""

    def init_networks(self, key):
        return {**super().init_networks(key), "empty": jnp.zeros((0, 4))}

    def init_step_state(self, networks, num_envs, key):
        return super().init_step_state(networks, num_envs, key), jnp.zeros((num_envs, 0), jnp.uint8)

    def step(self, networks, step_state, env_step):
        out, count = super().step(networks, step_state[0], env_step)
        return out, (count, step_state[1])

    def update_experience(self, experience, initial_step_state, final_step_state, trajectory):
        return super().update_experience(experience, initial_step_state[0], final_step_state[0], trajectory)


def test_zero_size_arrays_in_networks_and_step_states_are_saved_restored_and_read_back(tmp_path):
    """Orbax cannot write an array with no elements: a checkpoint leaves them out and a restore (and
    `read_networks`, evaluation's) builds them back from what it restores into."""
    from sebulba.loop.checkpoint import read_networks

    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=5, async_mode=False, inferencers_per_device=2,
                             learner_devices=(1,), seed=3, log_every_s=1000.0)
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=1000)
    with sebulba.GymnasiumLoop(EmptyLeaves(CARTPOLE), cfg) as loop:
        loop.run(max_cycles=4, checkpointer=Checkpointer(ckpt))
    with sebulba.GymnasiumLoop(EmptyLeaves(CARTPOLE), cfg) as loop:
        ctx = loop.run(max_cycles=6, checkpointer=Checkpointer(ckpt), resume=True)
        assert ctx.learner_steps == 6
        experience = jax.tree.map(lambda x: int(np.asarray(x).reshape(-1)[0]), loop.learner.experience)  # device 0's
        assert [inf.step_state[1].shape for inf in loop.inferencers] == [(4, 0), (4, 0)]
        like = jax.tree.map(np.asarray, loop.learner.networks)
    assert experience["cycles"] == 2 and experience["initial_min"] == 10  # each inferencer's counters went on
    read = read_networks(ckpt.directory, 6, like)
    assert read["empty"].shape == (0, 4) and read["empty"].dtype == np.float32 and read["w"] == like["w"]


@pytest.mark.slow(seconds=8)
def test_resume_needs_a_checkpoint_and_the_same_mode(tmp_path):
    ckpt = CheckpointConfig(str(tmp_path / "none"))
    with make_loop() as loop:
        with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
            loop.run(max_cycles=2, checkpointer=Checkpointer(ckpt), resume=True)
        with pytest.raises(ValueError, match="needs a checkpointer"):
            loop.run(max_cycles=2, resume=True)
    with pytest.raises(ValueError, match="every_learner_steps and keep must be >= 1"):
        CheckpointConfig(str(tmp_path), every_learner_steps=0)


class NaNAtStep3(CountingAgent):
    """Its loss turns NaN on the third cycle it learns from."""

    def loss(self, networks, experience, key):
        poison = jnp.where(experience["cycles"] >= 3, jnp.nan, 0.0)
        return (networks["w"] - 1.0) ** 2 + poison, {"w": networks["w"]}


def test_nan_loss_stops_the_run_with_a_checkpoint_of_the_last_good_state(tmp_path):
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=1000)
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=5, async_mode=False, inferencers_per_device=1,
                             learner_devices=(1, 2), log_every_s=1000.0)
    with sebulba.GymnasiumLoop(NaNAtStep3(CARTPOLE), cfg) as loop:
        good = []
        with pytest.raises(NonFiniteError, match=r"learner step 3: metric\(s\) \['loss'\]") as err:
            loop.run(max_cycles=10, checkpointer=Checkpointer(ckpt),
                     middleware=[lambda ctx: good.append(float(loop.learner.networks["w"]))])
        assert err.value.step == 3 and loop.learner.version == 2
        assert float(loop.learner.networks["w"]) == good[-1] and np.isfinite(good[-1])  # the learner kept step 2's state
    assert Checkpointer(ckpt).latest_step() == 2  # saved on the way out: the last good state
    with sebulba.GymnasiumLoop(NaNAtStep3(CARTPOLE), cfg) as loop:
        loop.start_inferencers()
        loop.restore(Checkpointer(ckpt))
        assert float(loop.learner.networks["w"]) == good[-1]


@pytest.mark.slow(seconds=12)
def test_replay_is_saved_when_asked_and_async_runs_resume_their_learner(tmp_path):
    from sebulba.agents.r2d2 import R2D2, R2D2Config

    agent = R2D2(CARTPOLE, R2D2Config(core_size=16, hidden_sizes=(16,), sequence_length=8, burn_in=2, n_step=2,
                                      batch_size=4, replay_capacity=64, min_replay_size=4))
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=4, async_mode=True, inferencers_per_device=1,
                             learner_devices=(1, 2), log_every_s=1000.0)
    for save_experience in (True,):  # (without it the experience stays as initialized: the same code path)
        ckpt = CheckpointConfig(str(tmp_path / f"ckpt{save_experience}"), every_learner_steps=100, save_experience=save_experience)
        with sebulba.GymnasiumLoop(agent, cfg) as loop:
            loop.run(max_cycles=6, checkpointer=Checkpointer(ckpt))
            saved = jax.tree.map(np.asarray, (loop.learner.networks, loop.learner.experience))
        with sebulba.GymnasiumLoop(agent, cfg) as loop:
            fresh_experience = jax.tree.map(np.asarray, loop.learner.experience)
            meta = loop.restore(Checkpointer(ckpt))
            assert meta["learner_steps"] == 6 and loop.learner.version == 6
            jax.tree.map(np.testing.assert_array_equal, saved[0], jax.tree.map(np.asarray, loop.learner.networks))
            expected = saved[1] if save_experience else fresh_experience
            jax.tree.map(np.testing.assert_array_equal, expected, jax.tree.map(np.asarray, loop.learner.experience))
            ctx = loop.run(max_cycles=8, checkpointer=Checkpointer(ckpt), resume=True)
            assert ctx.learner_steps == 8


@pytest.mark.slow(seconds=6)
def test_a_resume_with_another_layout_fails_at_start_in_one_line(tmp_path):
    """The runner checks the checkpoint's layout before it builds any env or compiles anything."""
    import dataclasses

    from sebulba.experiment.errors import UserError
    from sebulba.experiment.runner import CheckpointFlags, run

    cfg = sebulba.LoopConfig(num_envs=8, steps_per_cycle=5, async_mode=False, inferencers_per_device=1,
                             actor_devices=(0,), learner_devices=(0,), log_every_s=1000.0)
    agent = MinibatchSPG(CARTPOLE, 1)
    flags = CheckpointFlags(every_learner_steps=1)
    first = run("layout", agent, cfg, 80, str(tmp_path), {}, progress=False, checkpoints=flags)
    assert first.checkpoint_step == 2
    for change, message in [
        (dict(num_envs=4), "checkpoint 2 was written with num_envs=8, this run has num_envs=4: resume with the run's "
                           "own layout"),
        (dict(async_mode=True), "checkpoint 2 was written in sync mode; resume with the same mode"),
    ]:
        with pytest.raises(UserError) as e:
            run("layout", agent, dataclasses.replace(cfg, **change), 160, str(tmp_path), {}, progress=False,
                checkpoints=flags, resume=str(first.run_dir.path))
        assert str(e.value) == message


@pytest.mark.slow(seconds=16)
def test_envs_that_cannot_be_captured_resume_with_fresh_episodes_and_the_actors_keys_going_on(tmp_path, caplog):
    """Worker-process envs have no snapshot: a resumed sync run starts fresh episodes (the envs'
    own first steps, episode sums from 0) while the actors' step states (keys) are restored. It is
    said once, as a warning, when such a checkpoint is resumed, not at every checkpoint."""
    import logging

    caplog.set_level(logging.INFO, logger="sebulba")
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=30, async_mode=False, inferencers_per_device=1,
                             actor_devices=(0,), learner_devices=(0,), log_every_s=1000.0,
                             env_kwargs={"backend": "process", "num_threads": 1})
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=2)
    with sebulba.GymnasiumLoop(MinibatchSPG(CARTPOLE, 1), cfg) as loop:
        loop.run(max_cycles=2, checkpointer=Checkpointer(ckpt))
        lane = loop.inferencers[0]
        saved_keys = np.asarray(jax.random.key_data(jax.tree.leaves(lane.step_state)[0]))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert "checkpoint without env state" in caplog.text  # in the log file, at INFO
    with sebulba.GymnasiumLoop(MinibatchSPG(CARTPOLE, 1), cfg) as loop:
        loop.start_inferencers()
        lane = loop.inferencers[0]
        fresh_keys = np.asarray(jax.random.key_data(jax.tree.leaves(lane.step_state)[0]))
        assert not np.array_equal(fresh_keys, saved_keys)  # the keys moved on during the first run
        Checkpointer(ckpt).restore(loop.state)
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warned) == 1 and "checkpoint 2 holds no env state" in warned[0], warned
        with envs.make("CartPole-v1", num_envs=4, seed=cfg.seed, backend="process", num_threads=1) as fresh:
            first_obs, _ = fresh.reset()
        np.testing.assert_array_equal(np.asarray(lane.env_step.obs), first_obs)  # the reset's, not the saved step
        assert all(float(np.abs(np.asarray(x)).sum()) == 0 for x in lane.running)
        np.testing.assert_array_equal(np.asarray(jax.random.key_data(jax.tree.leaves(lane.step_state)[0])), saved_keys)
        assert loop.run(max_cycles=4, checkpointer=Checkpointer(ckpt), resume=True).learner_steps == 4
