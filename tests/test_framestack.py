"""Frame stacking on the actor device: the pure stack functions by hand and against a plain
numpy reference, the host-side restart rule against ALE's own stacks, and whole loops that
stack on the device against loops that take the env's stacks."""

import jax
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents import RandomAgent
from sebulba.loop import framestack
from sebulba.loop.framestack import Frames, Restarts, StackPlan

ale_py = pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[atari]'")


def reference_stacks(history: np.ndarray, frames: np.ndarray, restart: np.ndarray) -> np.ndarray:
    """Plain numpy, one step at a time: [T, B, S * c, H, W] from history [S - 1, B, c, H, W]."""
    s, c = history.shape[0] + 1, frames.shape[2]
    stack = [history[i] for i in range(s - 1)]
    out = []
    for t in range(frames.shape[0]):
        for b in np.flatnonzero(restart[t]):
            for i in range(s - 1):
                stack[i] = stack[i].copy()
                stack[i][b] = 0
        window = stack + [frames[t]]
        out.append(np.concatenate(window, axis=1))
        stack = window[1:]
    assert out[0].shape[1] == s * c
    return np.stack(out)


def test_push_and_restack_by_hand():
    # one env, S = 3, one-pixel gray frames 1, 2, ... ; frames before: 8, 9
    hist = np.array([8, 9], np.uint8).reshape(2, 1, 1, 1, 1)
    frames = np.arange(1, 6, dtype=np.uint8).reshape(5, 1, 1, 1, 1)
    restart = np.array([False, False, True, False, False]).reshape(5, 1)
    got = np.asarray(framestack.restack(hist, Frames(frames, restart))).reshape(5, 3)
    np.testing.assert_array_equal(got, [[8, 9, 1], [9, 1, 2], [0, 0, 3], [0, 3, 4], [3, 4, 5]])
    stack = np.array([8, 9, 1], np.uint8).reshape(1, 3, 1, 1)
    pushed = framestack.push(stack, Frames(np.full((1, 1, 1, 1), 7, np.uint8), np.array([False])))
    np.testing.assert_array_equal(np.asarray(pushed).ravel(), [9, 1, 7])
    pushed = framestack.push(stack, Frames(np.full((1, 1, 1, 1), 7, np.uint8), np.array([True])))
    np.testing.assert_array_equal(np.asarray(pushed).ravel(), [0, 0, 7])
    np.testing.assert_array_equal(np.asarray(framestack.history(stack, 1)).ravel(), [9, 1])


@pytest.mark.parametrize("s, c", [(4, 1), (4, 3), (2, 1)])
def test_restack_equals_pushing_one_by_one_and_the_numpy_reference(s, c):
    rng = np.random.default_rng(s * 10 + c)
    t, b = 9, 3
    hist = rng.integers(1, 255, (s - 1, b, c, 2, 3), dtype=np.uint8)
    frames = rng.integers(1, 255, (t, b, c, 2, 3), dtype=np.uint8)
    restart = rng.random((t, b)) < 0.3
    restart[2, 0] = restart[3, 0] = True  # two restarts in a row
    want = reference_stacks(hist, frames, restart)
    np.testing.assert_array_equal(np.asarray(framestack.restack(hist, Frames(frames, restart))), want)
    stack = np.concatenate([np.zeros((b, c, 2, 3), np.uint8)] + list(hist), axis=1)  # oldest frame: anything
    for i in range(t):
        stack = framestack.push(stack, Frames(frames[i], restart[i]))
        np.testing.assert_array_equal(np.asarray(stack), want[i])
    np.testing.assert_array_equal(np.asarray(framestack.history(stack, c)), want[-1].reshape(b, s, c, 2, 3)[:, 1:].swapaxes(0, 1))


@pytest.mark.parametrize("task, kwargs, steps", [
    ("Pong-v5", {}, 120),
    ("Breakout-v5", {"episodic_life": True}, 700),  # life losses (the stack goes on) and game overs
    ("Breakout-v5", {"episodic_life": True, "max_episode_steps": 40}, 200),  # truncations
    ("Breakout-v5", {"gray_scale": False, "stack_num": 3}, 60),  # RGB: 3 channels a frame
])
@pytest.mark.slow(seconds=6)
def test_device_stacks_equal_ales_own(task, kwargs, steps):
    """The same seeded envs and actions, once with ALE stacking and once single frames stacked
    by Restarts + push: every observation is identical."""
    kw = dict(num_envs=3, seed=7, num_threads=1, **kwargs)
    plan = StackPlan.create(task, kw)
    rng = np.random.default_rng(0)
    restarts = Restarts(plan.episodic_life)
    continued = restarted = 0
    with envs.make(task, **kw) as stacked, envs.make(task, **plan.pool_kwargs(kw)) as single:
        want, info = stacked.reset()
        frame, info1 = single.reset()
        stack = framestack.push(plan.empty(3), Frames(frame, restarts.reset(info1["lives"])))
        np.testing.assert_array_equal(np.asarray(stack), want)
        for _ in range(steps):
            action = rng.integers(0, stacked.action_space.n, 3)
            want, *_ = stacked.step(action)
            frame, _, term, trunc, info1 = single.step(action)
            first = info1["elapsed_step"] == 0
            restart = restarts.step(first, term, trunc, info1["lives"])
            continued += int((first & ~restart).sum())
            restarted += int(restart.sum())
            stack = framestack.push(stack, Frames(frame, restart))
            np.testing.assert_array_equal(np.asarray(stack), want)
    if kwargs.get("episodic_life"):
        assert restarted > 0  # game overs or truncations happened
        assert continued > 0 or "max_episode_steps" in kwargs  # and life losses that keep the stack


def test_plan_needs_an_env_with_frames_to_stack():
    plan = StackPlan.create("Pong-v5", {"episodic_life": True})
    assert (plan.num, plan.channels, plan.obs_shape, plan.episodic_life) == (4, 1, (4, 84, 84), True)
    assert plan.pool_kwargs({"episodic_life": True}) == {"episodic_life": True, "stack_num": 1}
    with pytest.raises(ValueError, match="stack_num option"):
        StackPlan.create("CartPole-v1", {})
    with pytest.raises(ValueError, match="stack_num=1, so there is nothing to stack"):
        StackPlan.create("Pong-v5", {"stack_num": 1})
    with pytest.raises(ValueError, match="stack_on_device must be a bool"):
        sebulba.LoopConfig(stack_on_device="yes")
    with pytest.raises(ValueError, match="stack_num option"):
        sebulba.GymnasiumLoop(RandomAgent(envs.make_spec("CartPole-v1")),
                              sebulba.LoopConfig(stack_on_device=True, async_mode=False))


def _agent(kind: str, spec: envs.EnvSpec):
    """A small MLP torso over the flattened [S * c, 84, 84] stacks: what these tests check (the
    stacks, the updates on them, the replay of single frames) does not depend on the network, and a
    Nature CNN on 84 x 84 frames would double their time (its own tests are test_networks.py's)."""
    if kind == "impala":
        from sebulba.agents.impala import Impala, ImpalaConfig

        return Impala(spec, ImpalaConfig(torso="mlp", hidden_sizes=(16,)))
    from sebulba.agents.r2d2 import R2D2, R2D2Config

    return R2D2(spec, R2D2Config(torso="mlp", hidden_sizes=(16,), core_size=16, sequence_length=16, burn_in=2, n_step=2,
                                 batch_size=4, replay_capacity=16, min_replay_size=2, target_update_period=2))


def _run(kind: str, stack_on_device: bool):
    kw = dict(episodic_life=True, max_episode_steps=12, num_threads=1)
    agent = _agent(kind, envs.make_spec("Breakout-v5", **kw))
    cfg = sebulba.LoopConfig(env_id="Breakout-v5", env_kwargs=kw, num_envs=4, steps_per_cycle=8, async_mode=False,
                             inferencers_per_device=1, stack_on_device=stack_on_device,
                             log_every_s=1e3)
    trajs = []
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        initial = jax.tree.map(np.asarray, loop.learner.networks)
        loop.run(max_cycles=4, middleware=[lambda ctx: trajs.append(jax.tree.map(np.asarray, ctx.result.trajectory))])
        networks = jax.tree.map(np.asarray, loop.learner.networks)
        experience_bytes = sum(x.nbytes for x in jax.tree.leaves(loop.learner.experience)
                               if not jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended))
    assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, networks, initial)))  # it learned
    return trajs, networks, experience_bytes


@pytest.mark.slow(seconds=17)
@pytest.mark.parametrize("kind", ["impala", "r2d2"])
def test_a_loop_stacking_on_device_acts_and_learns_as_with_the_envs_stacks(kind):
    """Sync mode, so both runs are deterministic: the agent acts on the same observations (same
    actions, same episodes, restarts included), and the learner, rebuilding the stacks, makes the
    same updates (R2D2: from its replay of single frames, restacked when it samples)."""
    base_trajs, base_nets, base_bytes = _run(kind, False)
    trajs, nets, frame_bytes = _run(kind, True)
    if kind == "r2d2":  # its replay keeps single frames
        assert frame_bytes < 0.3 * base_bytes, (frame_bytes, base_bytes)
    firsts = 0
    for base, traj in zip(base_trajs, trajs, strict=True):
        assert isinstance(traj.env_step.obs, Frames) and traj.env_step.obs.frame.shape == (9, 4, 1, 84, 84)
        assert traj.obs_history.shape == (3, 4, 1, 84, 84)  # the queue carries single frames
        rebuilt = jax.tree.map(np.asarray, framestack.restacked(traj))
        jax.tree.map(np.testing.assert_array_equal, rebuilt, base)
        firsts += int(base.env_step.first[1:].sum())
    assert firsts >= 8  # each env's episodes were truncated at 12 steps within the 32
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7), nets, base_nets)


def test_the_flag_reaches_the_loop_config():
    from experiments import impala

    assert impala.make_experiment("Pong-v5", stack_on_device=True).loop.stack_on_device
    assert not impala.make_experiment("Pong-v5").loop.stack_on_device


def test_r2d2_replay_of_single_frames_takes_about_a_quarter_of_the_memory():
    """The paper-sized Pong replay (25,000 sequences of 80 steps), from shapes alone."""
    from sebulba.agents.r2d2 import R2D2, R2D2Config
    from sebulba.types import ExperienceLayout

    agent = R2D2(envs.make_spec("Pong-v5"), R2D2Config(torso="nature_cnn", replay_capacity=25_000))
    networks = jax.eval_shape(agent.init_networks, jax.random.key(0))

    def gib(frame_stack: int) -> float:
        layout = ExperienceLayout(2, 32, agent.config.cycle_length, frame_stack)
        shapes = jax.eval_shape(lambda n, k: agent.init_experience(n, layout, k), networks, jax.random.key(0))
        return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes)
                   if not jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended)) / 2**30

    stacked, frames = gib(1), gib(4)
    assert 53.0 < stacked < 54.0 and 13.5 < frames < 14.5, (stacked, frames)


@pytest.mark.slow(seconds=16)
def test_a_replay_of_single_frames_is_checkpointed_and_resumed(tmp_path):
    """R2D2 with stacking on the device saves its replay of Frames and history in a real orbax
    checkpoint; a new loop restores it exactly and learns on."""
    from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer

    kw = dict(max_episode_steps=12, num_threads=1)
    agent = _agent("r2d2", envs.make_spec("Breakout-v5", **kw))
    cfg = sebulba.LoopConfig(env_id="Breakout-v5", env_kwargs=kw, num_envs=4, steps_per_cycle=8, async_mode=False,
                             inferencers_per_device=1, stack_on_device=True, log_every_s=1e3)
    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=100, save_experience=True)
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        loop.run(max_cycles=4, checkpointer=Checkpointer(ckpt))
        saved = jax.tree.map(np.asarray, loop.learner.experience)
    assert isinstance(saved.replay.sequences.env_step.obs, Frames)
    assert saved.replay.sequences.env_step.obs.frame.shape[-3:] == (1, 84, 84) and saved.replay.size.min() > 0
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        loop.restore(Checkpointer(ckpt))
        jax.tree.map(np.testing.assert_array_equal, saved, jax.tree.map(np.asarray, loop.learner.experience))
        ctx = loop.run(max_cycles=6, checkpointer=Checkpointer(ckpt), resume=True)
        assert ctx.learner_steps == 6


@pytest.mark.slow(seconds=12)
def test_async_loop_splits_the_frame_history_over_learner_devices_and_minibatches():
    """Inferencer threads, two learner devices and two minibatches: the history travels split
    along its env axis like the frames, and the learner's updates run on the rebuilt stacks."""
    from sebulba.agents.impala import Impala, ImpalaConfig

    kw = dict(episodic_life=True, num_threads=1)
    agent = Impala(envs.make_spec("Breakout-v5", **kw),
                   ImpalaConfig(torso="mlp", hidden_sizes=(16,), num_minibatches=2))
    cfg = sebulba.LoopConfig(env_id="Breakout-v5", env_kwargs=kw, num_envs=4, steps_per_cycle=5, learner_devices=(1, 2),
                             inferencers_per_device=2, async_mode=True, stack_on_device=True, log_every_s=1e3)
    specs = []
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        ctx = loop.run(max_cycles=4, middleware=[lambda ctx: specs.append(
            (ctx.result.trajectory.obs_history.sharding.spec, ctx.result.trajectory.env_step.obs.frame.sharding.spec))])
        assert ctx.learner_steps == 4 and loop.learner.version == 4
        assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(loop.learner.networks))
    assert len(specs) == 4 and all(h == f == jax.sharding.PartitionSpec(None, "learner") for h, f in specs), specs
