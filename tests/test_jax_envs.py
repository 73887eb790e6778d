"""JAX-native envs (envs/jax): each suite's adapter against the suite's own API, step for step,
the contract (next-step auto-reset, terminated vs the time limit), and the ids' errors."""

import importlib.util
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs.jax.registry import SUITES, is_jax_id, make_jax_env, make_raw
from tests.support.jax_envs import compare, episode_keys, reference, run

gymnax = pytest.importorskip("gymnax")


def _gymnax_reference(name, key, actions, **params):
    """gymnax's own reset_env/step_env, with the adapter's keys; the time limit is gymnax's
    is_truncated (its state.time)."""
    env, default = gymnax.make(name)
    params = default.replace(**params)

    @jax.jit
    def new_episode(now):
        k, r = jax.random.split(now)
        obs, state = env.reset_env(r, params)
        return (state, k), obs

    @jax.jit
    def step(state, a):
        state, k = state
        k, now = jax.random.split(k)
        obs, state, reward, term, _ = env.step_env(now, state, a, params)
        return (state, k), obs, reward, term, env.is_truncated(state, params)

    return reference(new_episode, step, key, actions)


def _chw(obs):
    return np.asarray(obs).transpose(2, 0, 1)


@pytest.mark.parametrize(
    "name, actions, params, image",
    [
        ("CartPole-v1", [1] * 30, {}, False),  # terminates (~10 steps), then resets
        ("Pendulum-v1", [np.array([0.5], np.float32)] * 8, {"max_steps_in_episode": 3}, False),
        ("Breakout-MinAtar", [0, 1, 2] * 10, {}, True),
    ],
)
def test_gymnax_equals_its_own_api_step_for_step(name, actions, params, image):
    key = jax.random.key(7)
    ours = run(make_jax_env(f"gymnax/{name}", **params), key, actions)
    compare(ours, _gymnax_reference(name, key, actions, **params), _chw if image else np.asarray)
    if "max_steps_in_episode" in params:
        assert any(s.truncated for s in ours) and not any(s.terminated and s.truncated for s in ours)


def test_gymnax_terminal_on_the_limits_step_is_terminated_only():
    """DeepSea ends every episode on its limit's step (size 8, 8 steps): gymnax's own step says
    terminated and truncated; ours terminated only, and the reference agrees."""
    key, actions = jax.random.key(1), [1] * 20
    ours = run(make_jax_env("gymnax/DeepSea-bsuite"), key, actions)
    compare(ours, _gymnax_reference("DeepSea-bsuite", key, actions))
    ends = [t for t, s in enumerate(ours) if s.terminated]
    assert ends[:2] == [8, 17] and not any(s.truncated for s in ours)


def test_gymnax_spaces_and_kwargs():
    breakout = make_raw("gymnax/Breakout-MinAtar")  # gymnax's layout; the JaxEnv's (the pool's) channel-first
    assert breakout.observation_space.shape == (10, 10, 4) and breakout.observation_space.dtype == np.float32
    assert breakout.channel_last and make_jax_env("gymnax/Breakout-MinAtar").observation_space.shape == (4, 10, 10)
    catch = make_raw("gymnax/Catch-bsuite")  # gymnax's space says int32; the env returns float32
    assert catch.observation_space.dtype == np.float32
    rooms = make_raw("gymnax/FourRooms-misc")  # ... and the other way round
    assert rooms.observation_space.dtype == np.int32
    lake = make_raw("gymnax/FrozenLake-misc")
    assert lake.observation_space.n == 16 and lake.action_space.n == 4
    assert make_raw("gymnax/DeepSea-bsuite", size=5).observation_space.shape == (5, 5)  # a constructor arg
    env = make_jax_env("gymnax/CartPole-v1", gravity=20.0)  # a parameter
    assert env.raw.params.gravity == 20.0 and env.max_episode_steps == 500
    assert make_jax_env("gymnax/CartPole-v1", max_episode_steps=50).max_episode_steps == 50
    with pytest.raises(ValueError, match=r"unknown kwarg\(s\) \['gravty'\] for gymnax/CartPole-v1; its parameters are \[.*'gravity'"):
        make_raw("gymnax/CartPole-v1", gravty=1.0)
    with pytest.raises(ValueError, match="downloads MNIST"):
        make_raw("gymnax/MNISTBandit-bsuite")


def test_every_gymnax_id_builds_and_its_reset_fits_its_space():
    from envs.jax.gymnax import UNSUPPORTED, ids

    for name in set(ids()) - set(UNSUPPORTED):
        raw = make_raw(f"gymnax/{name}")
        _, obs = jax.eval_shape(raw.reset, jax.random.key(0))
        space = raw.observation_space
        assert (obs.shape, obs.dtype) == (space.shape, space.dtype), name


def test_ids_and_errors():
    assert is_jax_id("gymnax/CartPole-v1") and is_jax_id("brax/ant") and not is_jax_id("CartPole-v1")
    assert not is_jax_id("ALE/Pong-v5") and not is_jax_id(3)
    assert {"gymnax", "jumanji", "craftax", "xminigrid", "navix", "brax", "playground", "jaxmarl"} <= set(SUITES)
    with pytest.raises(ValueError, match=r"^unknown gymnax id 'gymnax/CartPol-v1'; did you mean gymnax/CartPole-v1"):
        make_raw("gymnax/CartPol-v1")
    for suite in ("craftax", "xminigrid", "navix", "brax", "playground", "jaxmarl"):
        if importlib.util.find_spec(SUITES[suite].module) is None:
            with pytest.raises(ImportError, match=rf'pip install -e "\.\[{suite}\]"') as e:
                make_raw(f"{suite}/anything")
            assert "\n" not in str(e.value)


# ---------------------------------------------------------------- jumanji

def _jumanji_reference(name, key, actions, **kwargs):
    """jumanji's own reset/step with the adapter's keys: (obs, reward, LAST, discount, first)."""
    jumanji = pytest.importorskip("jumanji")
    from envs.jax.jumanji import as_dict

    env = jumanji.make(name, **kwargs)
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    now, later = episode_keys(jax.random.key_data(jax.random.fold_in(key, 0)))
    state, ts = reset(jax.random.key_data(now))
    out = [(as_dict(ts.observation), 0.0, False, 1.0, True)]
    done = False
    for a in actions:
        if done:
            now, later = episode_keys(later)
            state, ts = reset(jax.random.key_data(now))
            out.append((as_dict(ts.observation), 0.0, False, 1.0, True))
            done = False
            continue
        state, ts = step(state, jnp.asarray(a, jnp.int32))
        last = bool(ts.last())
        out.append((as_dict(ts.observation), float(ts.reward), last, float(ts.discount), False))
        done = last
    return out


def test_jumanji_equals_its_own_api_and_maps_last_steps():
    """Snake on a 6x6 grid with a time limit of 6, against jumanji's own env with that limit:
    moving up hits the wall (LAST, discount 0: terminated); moving left and right lasts until the
    limit, where jumanji says LAST with discount 0 too, and ours truncated (its limit is lifted
    and ours truncates at the same step); everything else equal."""
    pytest.importorskip("jumanji")
    kwargs = {"num_rows": 6, "num_cols": 6, "time_limit": 6}
    key = jax.random.key(3)
    actions = [0] * 8 + [1, 3] * 6  # 0 up, 1 right, 3 left
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = make_jax_env("jumanji/Snake-v1", **kwargs)
        assert env.max_episode_steps == 6
        ours = run(env, key, actions)
        ref = _jumanji_reference("Snake-v1", key, actions, **kwargs)
    assert len(ours) == len(ref)
    for t, (s, (obs, reward, last, discount, first)) in enumerate(zip(ours, ref)):
        for k in obs:
            np.testing.assert_array_equal(s.obs[k], np.asarray(obs[k]), err_msg=f"step {t} {k}")
        at_limit = last and int(obs["step_count"]) == 6
        assert (float(s.reward), bool(s.first)) == (reward, first), f"step {t}"
        assert (bool(s.terminated), bool(s.truncated)) == (last and not at_limit, at_limit), f"step {t}"
        assert not last or discount == 0  # jumanji's own: every end is a termination
    assert any(s.terminated for s in ours) and sum(bool(s.truncated) for s in ours) == 2


def test_jumanji_spaces_and_errors(monkeypatch):
    pytest.importorskip("jumanji")
    import gymnasium as gym

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        maze = make_raw("jumanji/Maze-v0")
        assert isinstance(maze.observation_space, gym.spaces.Dict)
        assert isinstance(maze.observation_space["agent_position"], gym.spaces.Dict)  # a nested NamedTuple
        assert maze.observation_space["action_mask"].dtype == np.bool_
        tetris = make_raw("jumanji/Tetris-v0")
        assert isinstance(tetris.action_space, gym.spaces.MultiDiscrete) and tetris.action_space.nvec.tolist() == [4, 10]
        _, obs = jax.eval_shape(tetris.reset, jax.random.key(0))
        assert {k: (v.shape, v.dtype) for k, v in obs.items()} == {
            k: (s.shape, s.dtype) for k, s in tetris.observation_space.spaces.items()
        }
        with pytest.raises(ValueError, match=r"^jumanji/LevelBasedForaging-v0 is not supported: it gives one reward per"):
            make_raw("jumanji/LevelBasedForaging-v0")  # by name
        from envs.jax import jumanji as adapter

        with monkeypatch.context() as m:  # an env with a reward per agent not named: refused when built
            m.delitem(adapter.UNSUPPORTED, "LevelBasedForaging-v0")
            with pytest.raises(ValueError, match=r"one reward per agent \(shape \(2,\)\)"):
                make_raw("jumanji/LevelBasedForaging-v0")
        with pytest.raises(ValueError, match=r"unknown kwarg\(s\) \['rows'\] for jumanji/Snake-v1; its parameters are"):
            make_raw("jumanji/Snake-v1", rows=3)
        with pytest.raises(ValueError, match="downloads its levels"):
            make_raw("jumanji/Sokoban-v0")


# ---------------------------------------------------------------- channel-last suites


class _GridPlayers:
    """A raw env with channel-last grids in a Dict, two players: obs [P, ...] per env, the grid
    leaf [H, W, C] = [4, 5, 3] holding (row, column, channel) codes, a vector leaf beside it."""

    task_id, max_episode_steps, channel_last, num_players = "toy/grid", None, True, 2

    def _obs(self):
        h, w, c = np.meshgrid(np.arange(4), np.arange(5), np.arange(3), indexing="ij")
        grid = jnp.asarray(100 * h + 10 * w + c, jnp.int32)
        return {"grid": jnp.stack([grid, grid + 1000]), "vec": jnp.zeros((2, 3, 4, 5), jnp.float32)}

    def reset(self, key):
        return jnp.zeros(()), self._obs()

    def step(self, state, action):
        return state, self._obs(), jnp.zeros(2), jnp.bool_(False), jnp.bool_(False)


def test_a_channel_last_suite_is_presented_channel_first():
    """JaxEnv moves every rank-3 leaf of a `channel_last` raw env to [C, H, W], space and
    observations (reset and step, per player row); other leaves as they are."""
    import gymnasium as gym

    from envs.jax.core import JaxEnv

    raw = _GridPlayers()
    raw.observation_space = gym.spaces.Dict({
        "grid": gym.spaces.Box(0, 2000, (4, 5, 3), np.int32),
        "vec": gym.spaces.Box(0, 1, (3, 4, 5), np.float32),  # rank 3 too: in a channel_last env, [H, W, C]
    })
    raw.action_space = gym.spaces.Discrete(2)
    env = JaxEnv(raw)
    assert env.observation_space["grid"].shape == (3, 4, 5) and env.observation_space["vec"].shape == (5, 3, 4)
    assert env.observation_space["grid"].dtype == np.int32
    lanes, first = env.reset(jax.random.key(0), 2)
    _, nxt = env.step(lanes, jnp.zeros(4, jnp.int32))
    for step in (first, nxt):
        grid = np.asarray(step.obs["grid"])
        assert grid.shape == (4, 3, 4, 5) and step.obs["vec"].shape == (4, 5, 3, 4)  # rows (env, player)
        assert grid[1, 2, 3, 4] == 1000 + 100 * 3 + 10 * 4 + 2  # env 0, player 1: channel 2 at (3, 4)
        assert all(env.observation_space["grid"].contains(g) for g in grid)

