"""dm_control's suite on the native MuJoCo pool: exact to the real dm_control, step for step.

Env i of a pool seeded s is `dm_control.suite.load(domain, task, task_kwargs={"random": s + i})`:
the same episode starts (its RandomState's draws), the same observations, rewards, discounts and
step types under the same actions, through the time limit's last step and the next episode's
start (auto-reset draws from the same RandomState as dm_control's next reset); lqr, endless in
dm_control, ends at EnvPool's 1,000 steps."""

from __future__ import annotations

import dm_env
import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.mujoco.dmc.ids import DMC_IDS, dmc_id
from envs.mujoco.dmc.tasks import served
from envs.registry import host_envs
from tests.support.pool_checks import assert_async_matches_sync

pytest.importorskip("dm_control")
pytest.importorskip("mujoco")

from tests.support.dm_control_suite import load  # noqa: E402

SERVED = sorted(served())


def compare(task_id: str, steps: int, num_envs: int = 2, seed: int = 3) -> None:
    domain, task = DMC_IDS[task_id]
    refs = [load(domain, task, seed + i) for i in range(num_envs)]
    rng = np.random.default_rng(0)
    with envs.make_dm(task_id, num_envs=num_envs, seed=seed) as pool:
        spec = refs[0].action_spec()
        assert pool.action_spec().shape == spec.shape
        np.testing.assert_array_equal(pool.action_spec().minimum, spec.minimum)
        np.testing.assert_array_equal(pool.action_spec().maximum, spec.maximum)
        keys = list(refs[0].observation_spec())
        assert [k for k in pool.observation_spec()._fields if k in keys] == keys
        low, high = np.maximum(spec.minimum, -1), np.minimum(spec.maximum, 1)  # lqr's motors are unbounded
        # dm_control's lqr has no time limit; EnvPool's ids (and ours) end it at 1,000 steps, where
        # dm_control's next step is a MID: compared up to there
        endless = np.isinf(served()[task_id].time_limit)
        steps = min(steps, 1000) if endless else steps
        ts = pool.reset()
        want = [r.reset() for r in refs]
        kept = []  # each step's observations as returned, and copies: no later step may change what one returned
        ours, theirs = [], []  # each step's (step types, observations, rewards, discounts): compared at the end
        for t in range(steps + 1):
            kept.append((ts.observation, {k: np.array(getattr(ts.observation, k)) for k in keys}))
            ours.append((np.asarray(ts.step_type), kept[-1][1], np.array(ts.reward), np.array(ts.discount)))
            theirs.append(([dm_env.StepType.LAST if endless and t == 1000 else w.step_type for w in want],
                           {k: [w.observation[k] for w in want] for k in keys},
                           [np.nan if w.step_type == dm_env.StepType.FIRST else w.reward for w in want],
                           [np.nan if w.step_type == dm_env.StepType.FIRST else w.discount for w in want]))
            action = rng.uniform(low, high, (num_envs, *spec.shape))
            ts = pool.step(action)
            want = [r.step(a) for r, a in zip(refs, action)]
    assert_same_steps(task_id, keys, ours, theirs)
    for t, (returned, copies) in enumerate(kept):
        for k in keys:
            np.testing.assert_array_equal(getattr(returned, k), copies[k], err_msg=f"{task_id} step {t} {k}: changed later")


def assert_same_steps(task_id: str, keys: list[str], ours: list, theirs: list) -> None:
    """Every step's step types equal, observations within 1e-6 (rtol 1e-7), rewards within 1e-7
    (rtol 1e-6) and discounts equal where dm_control's step is not FIRST (NaN there), checked
    over the whole run at once; the first step and env that differ are named, in step order."""
    num_envs = len(theirs[0][0])

    def first_bad(ok):  # ok: [steps, envs] bool -> the first (t, i) that is not, or None
        bad = np.argwhere(~ok)
        return None if not len(bad) else tuple(bad[0])

    fails = []  # (t, i, check)
    types = np.array([o[0] for o in ours]), np.array([[int(x) for x in w[0]] for w in theirs])
    if (where := first_bad(types[0] == types[1])) is not None:
        fails.append((*where, "step type"))
    for k in keys:
        got = np.stack([o[1][k] for o in ours]).astype(np.float64)
        want = np.array([w[1][k] for w in theirs], np.float64).reshape(got.shape)
        close = np.isclose(got, want, rtol=1e-7, atol=1e-6, equal_nan=True).reshape(len(ours), num_envs, -1).all(-1)
        if (where := first_bad(close)) is not None:
            fails.append((*where, k))
    rewards = np.array([w[2] for w in theirs], np.float64)
    scored = ~np.isnan(rewards)
    got = np.array([o[2] for o in ours], np.float64)
    if (where := first_bad(~scored | np.isclose(got, rewards, rtol=1e-6, atol=1e-7))) is not None:
        fails.append((*where, "reward"))
    if (where := first_bad(~scored | (np.array([o[3] for o in ours], np.float64) == np.array([w[3] for w in theirs])))
            ) is not None:
        fails.append((*where, "discount"))
    if fails:
        t, i, what = min(fails, key=lambda f: f[:2])

        def value(side):  # side[t][i]'s value of the check that failed
            step_types, obs, rewards, discounts = side[t]
            return {"step type": step_types, "reward": rewards, "discount": discounts}.get(what, obs.get(what))[i]

        raise AssertionError(f"{task_id} env {i} step {t} {what}: ours {value(ours)!r}, dm_control's {value(theirs)!r}")


@pytest.mark.parametrize("task_id", SERVED)
def test_short_episodes_are_dm_controls(task_id):
    compare(task_id, 40)


@pytest.mark.slow
@pytest.mark.parametrize("task_id", SERVED)
def test_a_whole_episode_and_the_next_start_are_dm_controls(task_id):
    compare(task_id, 1002, num_envs=1)


def test_ids_are_envpools_and_all_are_served():
    assert dmc_id("ball_in_cup", "catch") == "BallInCupCatch-v1"
    assert dmc_id("humanoid_CMU", "run") == "HumanoidCMURun-v1"
    assert dmc_id("lqr", "lqr_2_1") == "LqrLqr21-v1"
    assert len(DMC_IDS) == 51 and set(SERVED) == set(DMC_IDS)
    assert set(SERVED) <= set(host_envs())  # in list_all_envs


def test_the_gymnasium_pool_truncates_at_the_time_limit_and_auto_resets():
    with envs.make_gymnasium("CartpoleBalance-v1", num_envs=2, seed=0) as pool:
        assert isinstance(pool.observation_space, gym.spaces.Dict)
        assert list(pool.observation_space.spaces) == ["position", "velocity"]
        assert pool.action_space.dtype == np.float64 and pool.spec.config["max_episode_steps"] == 1000
        obs, info = pool.reset()
        assert obs["position"].shape == (2, 3) and info["qpos0"].shape == (2, 2)
        first = obs["position"].copy()
        for t in range(1, 1001):
            obs, reward, terminated, truncated, info = pool.step(np.zeros((2, 1)))
            assert not terminated.any() and truncated.all() == (t == 1000) and (info["elapsed_step"] == t).all()
        obs, reward, terminated, truncated, info = pool.step(np.zeros((2, 1)))  # EnvPool's auto-reset
        assert (info["elapsed_step"] == 0).all() and (reward == 0).all()
        assert not np.allclose(obs["position"], first)  # the next episode's own draws


def test_manipulators_random_info_is_envpools_with_the_start_velocity_a_rejected_draw_left():
    """EnvPool's `random_info` (target x, z, angle; how the object was placed, 1 in the target, 2 in
    the hand, 3 uniformly; its x, z, angle; its x velocity). dm_control's start loop (and EnvPool's)
    sets the object's velocity only when it places it uniformly and never clears it, so a draw that
    penetration rejected leaves its velocity to an object then placed in the target or the hand:
    the last entry is the velocity the episode starts with, in every case."""
    kinds = []
    with envs.make_dm("ManipulatorBringBall-v1", num_envs=1, seed=0) as pool:
        for _ in range(6):
            ts = pool.reset()
            info, vel = ts.observation.random_info[0], ts.observation.object_vel[0]
            kind = int(info[3])
            assert kind in (1, 2, 3)
            assert info[7] == vel[0] and vel[1] == vel[2] == 0
            if kind == 1:
                np.testing.assert_array_equal(info[4:7], info[0:3])
            kinds.append((kind, info[7] != 0))
    assert (3, True) in kinds and any(k != 3 and moving for k, moving in kinds), kinds


def test_frame_stack_and_frame_skip_as_envpools():
    with envs.make_dm("WalkerWalk-v1", num_envs=2, seed=0) as plain, \
            envs.make_dm("WalkerWalk-v1", num_envs=2, seed=0, frame_stack=3) as stacked:
        assert stacked.observation_spec().orientations.shape == (3, 14)
        assert stacked.observation_spec().height.shape == (3,)
        history = [plain.reset().observation.velocity]
        ts = stacked.reset()
        np.testing.assert_array_equal(ts.observation.velocity, np.repeat(history[0][:, None], 3, axis=1))
        rng = np.random.default_rng(1)
        for _ in range(4):
            action = rng.uniform(-1, 1, (2, 6))
            history.append(plain.step(action).observation.velocity)
            ts = stacked.step(action)
        np.testing.assert_array_equal(ts.observation.velocity, np.stack(history[-3:], axis=1))
    with envs.make_dm("CheetahRun-v1", num_envs=1, seed=0, frame_skip=2) as skipped:
        spec = envs.make_spec("CheetahRun-v1")
        assert spec.config["frame_skip"] == 1 and skipped.config["frame_skip"] == 2
        skipped.reset()
        ref = load("cheetah", "run", 0)
        ref.reset()
        action = np.full(6, 0.3)
        got = skipped.step(action[None]).observation.position[0]
        ref.physics.set_control(action)
        ref.physics.step(2)  # two physics steps per env step
        np.testing.assert_allclose(got, ref.physics.data.qpos[1:], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("kwargs, message", [
    ({"frame_stack": 0}, "frame_stack must be an int >= 1"),
    ({"frame_skip": 1.5}, "frame_skip must be an int >= 1"),
    ({"time_limit": 5}, "unknown kwarg(s) ['time_limit']"),
    ({"render_mode": "rgb_array", "render_camera_id": 7}, "render_camera_id must be -1 (dm_control's free camera)"),
    ({"render_mode": "rgb_array", "render_width": 0}, "render_width must be an int >= 1"),
    ({"from_pixels": 1}, "from_pixels must be a bool"),
    ({"backend": "process"}, "runs on backend='mujoco' (native) only"),
])
def test_bad_kwargs_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError) as e:
        envs.make_dm("CheetahRun-v1", **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_misspelt_id_names_the_close_ones():
    with pytest.raises(ValueError, match=r"unknown task id 'CheetaRun-v1'.*did you mean CheetahRun-v1"):
        envs.make_dm("CheetaRun-v1")


def test_snapshot_and_restore_carry_the_targets_and_the_stacks():
    with envs.make_dm("ReacherHard-v1", num_envs=2, seed=4, frame_stack=2) as pool:
        pool.reset()
        rng = np.random.default_rng(0)
        for _ in range(3):
            pool.step(rng.uniform(-1, 1, (2, 2)))
        state = pool._backend.snapshot()
        actions = rng.uniform(-1, 1, (5, 2, 2))
        first = [pool.step(a) for a in actions]
        pool.reset()  # new targets drawn: the snapshot's are restored below
        pool._backend.restore(state)
        again = [pool.step(a) for a in actions]
        for a, b in zip(first, again):
            np.testing.assert_array_equal(a.reward, b.reward)
            np.testing.assert_array_equal(a.observation.to_target, b.observation.to_target)


def test_only_tasks_that_move_their_targets_copy_the_model():
    """A suite model with its textures is ~11 MiB: 256 copies of it would take ~3 GiB."""
    with envs.make("CheetahRun-v1", num_envs=3) as shared, envs.make("ReacherEasy-v1", num_envs=3) as own:
        assert len({id(m) for m in shared._backend._models}) == 1
        models = own._backend._models
        assert len({id(m) for m in models}) == 3 and all(m.ntex == 0 for m in models)


@pytest.mark.parametrize("task_id, camera", [("CartpoleSwingup-v1", -1), ("WalkerWalk-v1", 0), ("ReacherHard-v1", -1),
                                             ("QuadrupedEscape-v1", 1)])
def test_frames_are_dm_controls_for_the_same_state_and_camera(task_id, camera):
    """Each env drawn with its own targets and terrain (reacher's target, quadruped's bowl),
    pixel for pixel what dm_control's physics.render draws."""
    domain, task = DMC_IDS[task_id]
    with envs.make_dm(task_id, num_envs=2, seed=5, render_mode="rgb_array", render_width=64, render_height=48,
                      render_camera_id=camera) as pool:
        refs = [load(domain, task, 5 + i) for i in range(2)]
        pool.reset()
        for r in refs:
            r.reset()
        action = np.full((2, *refs[0].action_spec().shape), 0.2)
        for _ in range(3):
            pool.step(action)
            for r, a in zip(refs, action):
                r.step(a)
        frames = pool.render([0, 1])
        assert frames.shape == (2, 48, 64, 3) and frames.dtype == np.uint8
        for frame, r in zip(frames, refs):
            np.testing.assert_array_equal(frame, r.physics.render(height=48, width=64, camera_id=camera))
        assert (frames[0] != frames[1]).any()


def test_pixel_observations_are_the_frames_channel_first_stacked_on_channels():
    """EnvPool's from_pixels: dm_control's frame of each env (its physics.render), (3, H, W) uint8;
    frame_stack k puts the last k frames on the channel axis, oldest first."""
    with envs.make_gymnasium("ReacherEasy-v1", num_envs=2, seed=1, from_pixels=True, frame_stack=2, render_width=32,
                             render_height=24) as pool:
        assert pool.observation_space == gym.spaces.Box(0, 255, (6, 24, 32), np.uint8)
        refs = [load("reacher", "easy", 1 + i) for i in range(2)]
        obs, _ = pool.reset()
        for r in refs:
            r.reset()
        np.testing.assert_array_equal(obs[:, :3], obs[:, 3:])  # a reset fills the stack
        for _ in range(2):
            previous = obs
            action = np.full((2, 2), 0.5)
            obs, *_ = pool.step(action)
            for r, a in zip(refs, action):
                r.step(a)
            np.testing.assert_array_equal(obs[:, :3], previous[:, 3:])
            for row, r in zip(obs, refs):
                np.testing.assert_array_equal(row[3:], r.physics.render(height=24, width=32, camera_id=-1).transpose(2, 0, 1))
    with envs.make_dm("ReacherEasy-v1", num_envs=1, from_pixels=True) as pool:
        assert pool.observation_spec().pixels.shape == (3, 84, 84) and pool.observation_spec().pixels.dtype == np.uint8
        assert pool.reset().observation.pixels.shape == (1, 3, 84, 84)


def test_async_batches_follow_each_envs_own_trajectory():
    """Async batching changes which envs come back together, never an env's own trajectory
    (through auto-resets: episodes of 12 steps here)."""
    actions = np.random.default_rng(3).uniform(-1, 1, (4, 31, 1))
    assert_async_matches_sync(lambda **kw: envs.make("CartpoleSwingup-v1", max_episode_steps=12, **kw), actions,
                              shuffle=np.random.default_rng(0), pick=lambda obs: obs["position"])


def test_the_xla_interface_carries_the_dm_fields():
    """xla() on a DMC pool: its TimeSteps have the pool's fields (a field per key) and values."""
    import jax

    with envs.make_dm("CartpoleSwingup-v1", num_envs=2, seed=0) as pool, \
            envs.make_dm("CartpoleSwingup-v1", num_envs=2, seed=0) as ref:
        handle, recv, send, step = pool.xla()
        pool.async_reset()
        ref.reset()
        handle, out = jax.jit(recv)(handle)
        action = np.full((2, 1), 0.3)
        handle, out = jax.jit(step)(handle, action)
        want = ref.step(action)
        assert out.observation._fields == want.observation._fields
        for name in ("position", "velocity", "qpos0"):
            np.testing.assert_allclose(np.asarray(getattr(out.observation, name)), getattr(want.observation, name),
                                       rtol=1e-6)
        np.testing.assert_allclose(np.asarray(out.reward), want.reward, rtol=1e-6)


@pytest.mark.parametrize("kind", ["gaussian", "hyperbolic", "long_tail", "reciprocal", "cosine", "linear", "quadratic",
                                  "tanh_squared"])
def test_tolerance_is_dm_controls_bit_for_bit(kind: str) -> None:
    """The batched tolerance (its point-target path without a select, fmax for quadratic) gives
    exactly what dm_control's tolerance gives on the same array, at the bounds, past them, NaN and
    inf (on an array: numpy's vector loops for exp and friends may differ from its scalar ones in
    the last bit, and a pool's batch is an array)."""
    from dm_control.utils import rewards as dm_rewards

    from envs.mujoco.dmc.rewards import tolerance

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 2, 200), [0.0, -0.0, 1.5, -.25, .25, 1.0, .995, np.nextafter(1.0, 0), np.nan, np.inf,
                                                -np.inf]])
    for value in (0.1, 0.0 if kind in ("linear", "quadratic") else 0.5):
        for bounds in ((0.0, 0.0), (1.5, 1.5), (-.25, .25), (.995, 1.0)):
            for margin in (0.0, 0.3, 2.0):
                with np.errstate(all="ignore"):
                    got = tolerance(x, bounds, margin, kind, value)
                    want = dm_rewards.tolerance(x, bounds, margin, kind, value)
                np.testing.assert_array_equal(got, want, err_msg=f"{kind} value {value} bounds {bounds} margin {margin}")


def test_tolerance_refuses_an_unknown_sigmoid() -> None:
    from envs.mujoco.dmc.rewards import tolerance

    with pytest.raises(ValueError, match="unknown sigmoid 'cubic'"):
        tolerance(np.ones(2), margin=1.0, kind="cubic")


# ---------------------------------------------------------------- the compiled tasks
COMPILED = [t for t in SERVED if served()[t].compiled is not None]


def _rollout(task_id: str, steps: int = 120) -> tuple[list, np.ndarray, np.ndarray]:
    """Observations, rewards and ends of `steps` async steps of 6 envs in batches of 3, with
    episodes of 40 steps so that auto-resets come in mid-batch."""
    pool = envs.make(task_id, env_type="gymnasium", num_envs=6, batch_size=3, seed=7, max_episode_steps=40)
    rng = np.random.default_rng(0)
    low, high = np.maximum(pool.action_space.low, -1), np.minimum(pool.action_space.high, 1)
    obs, rewards, ends = [], [], []
    pool.async_reset()
    for _ in range(steps):
        o, r, term, trunc, info = pool.recv()
        obs.append(o), rewards.append(r), ends.append(term | trunc)
        pool.send(rng.uniform(low, high, (3, *pool.action_space.shape)), info["env_id"])
    pool.close()
    return obs, np.array(rewards), np.array(ends)


@pytest.mark.parametrize("task_id", COMPILED)
def test_a_compiled_task_computes_what_its_numpy_definition_does(task_id, monkeypatch):
    """A task's C observe and reward (envs/mujoco/dmc/compiled.c, run by the kernel's threads) give
    its numpy methods' values on the same steps, resets mid-batch included (to the last bits that
    libm's exp and numpy's vector exp may round apart)."""
    fast = _rollout(task_id)
    monkeypatch.setattr(served()[task_id], "compiled", None)
    plain = _rollout(task_id)
    assert plain[2].any(), "the rollout reached no episode end"
    np.testing.assert_array_equal(fast[2], plain[2])
    np.testing.assert_allclose(fast[1], plain[1], rtol=1e-12, atol=1e-15)
    for a, b in zip(fast[0], plain[0]):
        assert list(a) == list(b)
        for key in a:
            assert a[key].shape == b[key].shape and a[key].flags.c_contiguous, key
            np.testing.assert_allclose(a[key], b[key], rtol=1e-12, atol=1e-15, err_msg=key)


def test_the_benchmarked_domains_are_compiled():
    for domain in ("Cartpole", "Cheetah", "Walker", "Humanoid"):  # bench_dmc.py's tasks and their siblings
        assert [t for t in COMPILED if t.startswith(domain)] == [t for t in SERVED if t.startswith(domain)], domain
