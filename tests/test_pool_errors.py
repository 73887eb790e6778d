"""Bad input gets a clear error naming the problem, never a hang or silent garbage."""

import numpy as np
import pytest

import envs


def test_unknown_task_suggests_close_matches():
    with pytest.raises(ValueError, match=r"unknown task id 'CartPole-v2'; did you mean CartPole-v1, CartPole-v0, .* or "):
        envs.make("CartPole-v2")
    with pytest.raises(ValueError, match="unknown task id"):
        envs.make_spec("NoSuchEnv-v0")
    with pytest.raises(ValueError, match="backend='native'"):
        envs.make("FrozenLake-v1", backend="native")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_envs": 0}, "num_envs must be >= 1"),
        ({"num_envs": 4, "batch_size": 5}, r"batch_size must be in \[1, num_envs=4\]"),
        ({"num_envs": 4, "batch_size": 0}, "batch_size must be in"),
        ({"num_envs": 2.5}, "num_envs must be an int"),
        ({"seed": -1}, "seed must be >= 0"),
        ({"max_episode_steps": 0}, "max_episode_steps must be >= 1"),
        ({"max_num_players": 2}, "max_num_players must be 1"),
        ({"thread_affinity_offset": -3}, "thread_affinity_offset"),
        ({"num_envs": 2, "render_env_id": 2}, r"render_env_id must be an env id in \[0, num_envs=2\), got 2"),
        ({"render_env_id": "0"}, "render_env_id must be an int"),
        ({"frame_skip": 4}, r"unknown kwarg\(s\) \['frame_skip'\]"),
        ({"backend": "gpu"}, "backend must be"),
    ],
)
def test_bad_make_kwargs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        envs.make("CartPole-v1", **kwargs)


def test_bad_env_type_and_unknown_gymnasium_kwarg():
    with pytest.raises(ValueError, match="env_type must be one of"):
        envs.make("CartPole-v1", env_type="jax")
    with pytest.raises(ValueError, match="bad kwarg for task 'FrozenLake-v1'"):
        envs.make("FrozenLake-v1", no_such_option=1)


@pytest.fixture(params=["native", "process"])
def pool(request):
    kw = {"num_threads": 2} if request.param == "process" else {}
    with envs.make("CartPole-v1", backend=request.param, num_envs=4, batch_size=2, **kw) as p:
        yield p


def test_bad_actions(pool):
    pool.async_reset()
    ids = pool.recv()[4]["env_id"]
    with pytest.raises(ValueError, match=r"action must have shape \(2,\)"):
        pool.send(np.zeros(3, int), ids)
    with pytest.raises(ValueError, match="expects integer actions, got dtype float"):
        pool.send(np.zeros(2), ids)
    with pytest.raises(ValueError, match="action out of range"):
        pool.send(np.array([0, 2]), ids)
    with pytest.raises(ValueError, match="action out of range"):
        pool.send(np.array([-1, 0]), ids)
    with pytest.raises(ValueError, match="action dict needs the key 'action'"):
        pool.send({"act": np.zeros(2, int), "env_id": ids})
    with pytest.raises(ValueError, match="not both"):
        pool.send({"action": np.zeros(2, int)}, ids)
    pool.send(np.zeros(2, int), ids)  # nothing above changed the pool's state


def test_bad_env_ids(pool):
    pool.async_reset()
    ids = pool.recv()[4]["env_id"]
    with pytest.raises(ValueError, match=r"env_id out of range \[0, 4\): \[7\]"):
        pool.send(np.zeros(2, int), np.array([0, 7]))
    with pytest.raises(ValueError, match=r"env_id out of range.*\[-1\]"):
        pool.send(np.zeros(2, int), np.array([-1, 0]))
    with pytest.raises(ValueError, match=r"duplicates: \[" + str(ids[0])):
        pool.send(np.zeros(2, int), np.array([ids[0], ids[0]]))
    with pytest.raises(ValueError, match="integer env ids"):
        pool.send(np.zeros(2, int), np.array([0.0, 1.0]))
    not_ready = sorted(set(range(4)) - set(ids.tolist()))
    with pytest.raises(ValueError, match="not ready"):
        pool.send(np.zeros(2, int), np.array(not_ready))
    pool.send(np.zeros(2, int), ids)
    with pytest.raises(ValueError, match="not ready"):
        pool.send(np.zeros(2, int), ids)  # sent twice without a recv


def test_recv_with_nothing_or_too_little_in_flight(pool):
    with pytest.raises(RuntimeError, match="nothing in flight"):
        pool.recv()
    pool.async_reset()
    pool.recv()
    ids = pool.recv()[4]["env_id"]
    pool.send(np.zeros(1, int), ids[:1])
    with pytest.raises(RuntimeError, match=r"needs batch_size=2 envs but only 1 are in flight"):
        pool.recv()


def test_async_send_without_env_id_before_any_recv():
    with envs.make("CartPole-v1", num_envs=4, batch_size=2) as pool:
        with pytest.raises(ValueError, match="pass env_id explicitly"):
            pool.send(np.zeros(2, int))


def test_calls_after_close_raise(pool):
    pool.close()
    pool.close()  # idempotent
    for call in (pool.reset, pool.async_reset, pool.recv, lambda: pool.send(np.zeros(2, int)), lambda: pool.step(np.zeros(2, int))):
        with pytest.raises(RuntimeError, match="closed EnvPool"):
            call()


def test_continuous_actions_reject_nan():
    with envs.make("Pendulum-v1", backend="process", num_envs=2, num_threads=1) as pool:
        pool.reset()
        with pytest.raises(ValueError, match="NaN or Inf"):
            pool.step(np.array([[np.nan], [0.0]]))
        with pytest.raises(ValueError, match=r"shape \(2, 1\)"):
            pool.step(np.zeros(2))
        with pytest.raises(ValueError, match="NaN or Inf"):
            pool.step(np.array([[np.inf], [-np.inf]]))  # their sum is NaN
        obs, rew, *_ = pool.step(np.array([[5.0], [-5.0]]))  # out of bounds: clipped, as Gymnasium does
        assert obs.shape == (2, 3)
        big = np.finfo(np.float32).max
        obs, *_ = pool.step(np.array([[big], [big]], np.float32))  # finite, though their sum overflows to Inf
        assert np.isfinite(obs).all()
