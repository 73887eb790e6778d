"""The pools are the types their users check, with the specs and render EnvPool's users rely on.

EnvPool 1.2's gym/gymnasium pools are `gymnasium.vector.VectorEnv`s and `gymnasium.Env`s, its dm
pools `dm_env.Environment`s with specs whose structure is the TimeStep's observation; its
`render(env_ids)` returns a batch of frames. Each test states the contract and the case.
"""

from __future__ import annotations

import dm_env
import gymnasium as gym
import jax
import numpy as np
import pytest

import envs

CASES = [
    pytest.param("CartPole-v1", {}, id="native"),
    pytest.param("CartPole-v1", {"backend": "process", "num_threads": 1}, id="process"),
    pytest.param("Pong-v5", {}, id="atari"),
]


@pytest.mark.parametrize("task, kw", CASES)
@pytest.mark.parametrize("env_type", ["gym", "gymnasium"])
def test_gym_pools_are_gymnasium_vector_envs(task, kw, env_type):
    with envs.make(task, env_type=env_type, num_envs=2, **kw) as pool:
        assert isinstance(pool, gym.Env) and isinstance(pool, gym.vector.VectorEnv)
        assert pool.is_vector_env is True
        assert pool.single_observation_space == pool.observation_space == pool.spec.observation_space
        assert pool.single_action_space == pool.action_space == pool.spec.action_space
        assert pool.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        assert pool.unwrapped is pool and pool.spec.id == task
        assert str(pool) == repr(pool) and task in str(pool)
        obs, info = pool.reset()
        assert pool.observation_space.contains(obs[0])


@pytest.mark.parametrize("task, kw", CASES)
def test_dm_pools_are_dm_environments_with_specs(task, kw):
    with envs.make_dm(task, num_envs=2, **kw) as pool:
        assert isinstance(pool, dm_env.Environment)
        assert pool.action_spec() == envs.make_spec(task, **kw).action_spec()
        assert pool.reward_spec().dtype == np.float32 and pool.discount_spec().maximum == 1.0
        ts = pool.reset()
        spec = pool.observation_spec()
        # The spec has the TimeStep observation's structure: same type, same fields.
        assert type(spec) is type(ts.observation) and spec._fields == ts.observation._fields
        leaves, observed = jax.tree.leaves(spec), jax.tree.leaves(ts.observation)
        assert len(leaves) == len(observed) and ts.observation.players.env_id.tolist() == [0, 1]
        for leaf, got in zip(leaves, observed):
            for i in range(2):  # the spec describes one env: each row of the batch conforms
                leaf.validate(got[i])
        ts = pool.step(np.zeros(2, np.int64))
        for i in range(2):
            spec.obs.validate(ts.observation.obs[i])
            pool.reward_spec().validate(ts.reward[i])
            pool.discount_spec().validate(ts.discount[i])
            pool.action_spec().validate(np.int64(0))


def test_make_spec_observation_spec_describes_what_step_returns():
    spec = envs.make_spec("Pong-v5", num_envs=4)
    obs_spec = spec.observation_spec()
    assert obs_spec._fields == ("obs", "env_id", "elapsed_step", "lives", "reward", "terminated", "players")
    assert obs_spec.players.env_id.maximum == 3
    assert obs_spec.obs.shape == (4, 84, 84) and obs_spec.obs.dtype == np.uint8
    assert (obs_spec.obs.minimum, obs_spec.obs.maximum) == (0, 255)
    assert obs_spec.env_id.maximum == 3 and obs_spec.lives.dtype == np.int32
    cartpole = envs.make_spec("CartPole-v1").observation_spec()
    assert cartpole._fields == ("obs", "env_id", "elapsed_step", "players") and cartpole.obs.shape == (4,)


def test_the_spec_has_envpools_array_specs_and_reward_threshold():
    """EnvPool's EnvSpec attributes (its Atari api_test reads `action_array_spec["action"].maximum`
    and counts three action entries): the internal action and state entries by EnvPool's names,
    in its order, with EnvPool's per-player leading -1; the reward threshold Gymnasium registers; EnvPool's gymnasium_* names of the spaces."""
    pong = envs.make_spec("Pong-v5")
    actions = pong.action_array_spec
    assert list(actions) == ["env_id", "players.env_id", "action"]
    assert actions["action"].maximum + 1 == 6 and actions["action"].minimum == 0 and actions["action"].shape == [-1]
    assert actions["players.env_id"].shape == [-1] and actions["env_id"].shape == []
    states = pong.state_array_spec
    assert list(states) == ["info:env_id", "info:players.env_id", "elapsed_step", "done", "reward", "discount",
                            "step_type", "trunc", "obs", "info:lives", "info:reward", "info:terminated"]
    assert states["obs"].shape == [4, 84, 84] and (states["obs"].minimum, states["obs"].maximum) == (0, 255)
    assert (states["discount"].minimum, states["discount"].maximum) == (0.0, 1.0) and states["reward"].shape == [-1]
    assert states["elapsed_step"].maximum == np.iinfo(np.int32).max and states["done"].dtype == np.bool_
    pendulum = envs.make_spec("Pendulum-v1").action_array_spec["action"]
    assert pendulum.shape == [-1, 1] and (pendulum.minimum, pendulum.maximum) == (-2.0, 2.0)
    cartpole = envs.make_spec("CartPole-v1")
    np.testing.assert_array_equal(cartpole.state_array_spec["obs"].maximum, cartpole.observation_space.high)  # per element
    assert "ArraySpec(shape=[-1], dtype=int64, minimum=0, maximum=1)" == repr(cartpole.action_array_spec["action"])
    assert cartpole.reward_threshold == 475.0 and envs.make_spec("Acrobot-v1").reward_threshold == -100.0
    assert pong.reward_threshold is None and envs.make_spec("gymnax/CartPole-v1").reward_threshold is None
    # EnvPool's Gymnasium names for the spaces (its DMC pixel tests read them): the same spaces
    assert cartpole.gymnasium_observation_space is cartpole.observation_space
    assert pong.gymnasium_action_space is pong.action_space
    from envs.spec import EnvSpec

    nested = gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,)), "inner": gym.spaces.Dict({"n": gym.spaces.Discrete(3)})})
    structured = EnvSpec(cartpole.pool_config, nested, gym.spaces.Discrete(2)).state_array_spec  # EnvPool's leaf names
    assert [k for k in structured if k.startswith("obs")] == ["obs:inner.n", "obs:pos"]
    assert structured["obs:inner.n"].maximum == 2 and structured["obs:pos"].shape == [2]


@pytest.mark.parametrize("env_type", ["dm", "gymnasium"])
def test_seed_is_envpools_abandoned_no_op_that_warns(env_type):
    """EnvPool's `seed()` warns and changes nothing (its seeds are make's); its DMC tests call it."""
    with envs.make("CartPole-v1", env_type=env_type, num_envs=2, seed=3) as pool, \
            envs.make("CartPole-v1", env_type=env_type, num_envs=2, seed=3) as twin:
        with pytest.warns(UserWarning, match=r"seed\(\) does nothing here.*pass seed= to envs.make"):
            assert pool.seed(7) is None
        first, same = pool.reset(), twin.reset()
        obs = (lambda r: r.observation.obs) if env_type == "dm" else (lambda r: r[0])
        np.testing.assert_array_equal(obs(first), obs(same))


def _reference_frames(task: str, seed: int, actions: list) -> list[np.ndarray]:
    env = gym.make(task, render_mode="rgb_array").unwrapped
    env.reset(seed=seed)
    frames = [env.render()]
    for a in actions:
        env.step(a)
        frames.append(env.render())
    env.close()
    return frames


@pytest.mark.parametrize(
    "task, actions",
    [
        ("CartPole-v1", [1, 0, 1, 1, 0]),
        ("Acrobot-v1", [0, 2, 2, 1, 0]),
        ("MountainCar-v0", [2, 2, 0, 1, 2]),
        ("Pendulum-v1", [np.array([1.5], np.float32), np.array([-3.0], np.float32), np.array([0.25], np.float32)]),
    ],
)
def test_native_render_equals_gymnasiums_frames(task, actions):
    """Frames of env 1 of a native pool equal Gymnasium's render of the same seeded env."""
    seed = 7
    expected = _reference_frames(task, seed + 1, actions)
    with envs.make(task, num_envs=3, seed=seed, render_mode="rgb_array") as pool:
        pool.reset()
        got = [pool.render(env_ids=[1])[0]]
        for a in actions:
            batch = np.stack([a] * 3)
            pool.step(batch)
            got.append(pool.render(1)[0])
        both = pool.render(env_ids=np.array([2, 0]))
    assert both.shape == (2, *expected[0].shape) and both.dtype == np.uint8
    for t, (e, g) in enumerate(zip(expected, got)):
        np.testing.assert_array_equal(g, e, err_msg=f"{task}: frame {t} differs from Gymnasium's")
    assert not np.array_equal(got[0], got[-1])  # the frames follow the env


def test_render_defaults_to_env_0_and_checks_its_arguments():
    with envs.make("CartPole-v1", num_envs=2, render_mode="rgb_array") as pool:
        pool.reset()
        assert pool.render_mode == "rgb_array"
        np.testing.assert_array_equal(pool.render(), pool.render([0]))
        with pytest.raises(ValueError, match="out of range"):
            pool.render([2])
        with pytest.raises(ValueError, match="integer env ids"):
            pool.render(["a"])
    with pytest.raises(RuntimeError, match="closed"):
        pool.render()
    with envs.make("CartPole-v1", num_envs=2) as plain:
        with pytest.raises(RuntimeError, match="render_mode='rgb_array'"):
            plain.render()


@pytest.mark.parametrize("mode, match", [("ansi", "render_mode must be one of"), ("window", "render_mode must be one of")])
def test_unsupported_render_modes_are_rejected_by_name(mode, match):
    with pytest.raises(ValueError, match=match):
        envs.make("CartPole-v1", render_mode=mode)


def test_worker_process_pools_reject_render_mode():
    with pytest.raises(ValueError, match="worker processes, which do not render"):
        envs.make("CartPole-v1", backend="process", render_mode="rgb_array")
