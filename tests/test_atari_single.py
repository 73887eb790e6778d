"""Atari on one ALEInterface per env (envs/atari/single.py): chosen for mode, difficulty and
render_mode, and equal to the vector-env backend bit for bit where both can run."""

import numpy as np
import pytest

import envs
from tests.support.pool_checks import assert_async_matches_sync

ale_py = pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[atari]'")
from envs.atari import task as atari_task

BREAKOUT_MODES = [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44]


def make_single(task="Pong-v5", **kw):
    """A pool on the single-ALE backend: render_mode selects it without changing the game."""
    return envs.make(task, render_mode="rgb_array", **kw)


def make_vector(task="Pong-v5", **kw):
    return envs.make(task, num_threads=2, **kw)


def rollout(pool, actions):
    """Every output of reset and of one step per row of actions, as arrays."""
    obs, info = pool.reset()
    zeros = np.zeros(len(obs))
    out = [(obs, zeros, zeros.astype(bool), zeros.astype(bool), info["lives"], info["elapsed_step"], info["reward"],
            info["terminated"])]
    for a in actions:
        obs, rew, term, trunc, info = pool.step(a)
        out.append((obs, rew, term, trunc, info["lives"], info["elapsed_step"], info["reward"], info["terminated"]))
    return [np.stack(field) for field in zip(*out)]


def assert_same_as_vector(task, steps, **kw):
    num_envs = kw.pop("num_envs", 2)
    n = envs.make_spec(task).action_space.n
    actions = np.random.default_rng(0).integers(0, n, (steps, num_envs))
    with make_vector(task, num_envs=num_envs, seed=5, **kw) as vec:
        want = rollout(vec, actions)
    with make_single(task, num_envs=num_envs, seed=5, **kw) as single:
        got = rollout(single, actions)
    names = ("obs", "reward", "terminated", "truncated", "lives", "elapsed_step", "raw reward", "game over")
    for name, w, g in zip(names, want, got):
        assert w.dtype == g.dtype, name
        np.testing.assert_array_equal(g, w, err_msg=name)
    return want


@pytest.mark.slow(seconds=3)
@pytest.mark.parametrize("task", ["Pong-v5", "Breakout-v5"])
@pytest.mark.parametrize("gray_scale", [True, False])
def test_identical_to_the_vector_backend_through_auto_resets(task, gray_scale):
    """Observations (area resize included), rewards, flags, lives and elapsed steps equal the
    vector env's, over truncations every 60 steps and the auto-resets after them."""
    want = assert_same_as_vector(task, 200, noop_max=0, repeat_action_probability=0.0, stack_num=4,
                                 gray_scale=gray_scale, max_episode_steps=60)
    obs, truncated, elapsed = want[0], want[3], want[5]
    assert obs.shape[2] == (4 if gray_scale else 12)
    assert truncated.sum() == 2 * 3 and (elapsed[61] == 0).all()  # 3 truncations per env, each followed by a reset


@pytest.mark.slow(seconds=3)
def test_identical_with_noop_starts_sticky_actions_and_life_losses():
    """ALE's noop counts (std::mt19937 + libstdc++'s uniform_int_distribution, reproduced),
    its sticky-action stream and EnvPool's episodic_life also match."""
    want = assert_same_as_vector("Breakout-v5", 300, num_envs=3, noop_max=30, repeat_action_probability=0.25,
                                 episodic_life=True, reward_clip=True, max_episode_steps=100)
    assert want[2].any() and want[3].any()  # life losses terminated, the limit truncated


@pytest.mark.slow(seconds=4)
@pytest.mark.parametrize("episodic_life", [False, True])
def test_info_terminated_is_the_game_over(episodic_life):
    """EnvPool's info["terminated"]: 1 where the game is over. This backend reads ALE's
    game_over(); the vector backend, which cannot, derives it from termination and lives (a life
    loss that leaves lives ends an episode, not the game): the two agree step for step, through
    whole Breakout games (5 lives each) and their resets."""
    want = assert_same_as_vector("Breakout-v5", 450, num_envs=2, noop_max=0, repeat_action_probability=0.0,
                                 episodic_life=episodic_life)
    terminated, lives, over = want[2], want[4], want[7]
    assert over.dtype == np.int32 and set(np.unique(over)) == {0, 1}
    assert (over <= terminated).all()  # a game over ends the episode
    if episodic_life:
        assert (terminated & (over == 0)).sum() >= 8  # the life losses: episodes ended, games not
        assert ((over == 1) == (terminated & (lives == 0))).all()  # Breakout's game ends with its last life
    else:
        assert (over == terminated).all()


@pytest.mark.parametrize("size, gray_scale", [((105, 80), False), ((70, 80), False), ((210, 80), True),
                                              ((64, 48), True), ((210, 160), True)])
def test_every_resize_path_matches_ales_opencv(size, gray_scale):
    """OpenCV's INTER_AREA paths, ported: 2x2 blocks (rounding half up), other integer blocks
    (float32, half to even), fractional taps, and the same size (a copy)."""
    assert_same_as_vector("Pong-v5", 60, img_height=size[0], img_width=size[1], gray_scale=gray_scale)


def test_backend_selection():
    def backend(task="Breakout-v5", **kw):
        return atari_task.configure(task, "gymnasium", kw).backend

    assert backend() == "vector"
    assert backend(mode=0, difficulty=0) == "vector"  # the ROM's defaults: the vector env plays them
    assert backend(mode=-1, difficulty=-1) == backend(mode=None, difficulty=None) == "vector"  # -1: EnvPool's "default"
    spec = envs.make_spec("Breakout-v5")
    assert (spec.config.mode, spec.config.difficulty) == (-1, -1)  # EnvPool's defaults
    assert backend(mode=4) == "single" and backend(difficulty=1) == "single"
    assert backend(render_mode="rgb_array") == "single"
    assert envs.make_spec("Breakout-v5", mode=4).config["mode"] == 4


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mode=3), r"mode must be -1 \(the ROM.s default\) or one of the ROM.s available modes \[0, 4, 8, .*44\], got 3"),
        (dict(difficulty=2), r"difficulty must be -1 \(the ROM.s default\) or one of the ROM.s available difficulties \[0, 1\], got 2"),
        (dict(mode=True), "mode must be -1 \\(the ROM.s default\\) or one of"),
        (dict(render_mode="rgb_array", img_height=250), "img_height must be <= 210 and img_width <= 160"),
    ],
)
def test_bad_mode_difficulty_and_size_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        envs.make_spec("Breakout-v5", **kwargs)


def test_mode_and_difficulty_reach_the_ale():
    with envs.make("Breakout-v5", num_envs=2, mode=4, difficulty=1) as pool:
        obs, info = pool.reset()
        obs, *_ = pool.step(np.ones(2, int))
        for ale in pool._backend._ales:  # the ALE itself reports them
            state = ale.cloneState()
            assert (state.getCurrentMode(), state.getDifficulty()) == (4, 1)
    with envs.make("Breakout-v5", num_envs=2) as default:
        default.reset()
        assert not np.array_equal(default.step(np.ones(2, int))[0], obs)  # difficulty 1: a narrower paddle


def plain_ale(seed, mode=None, difficulty=None):
    ale = ale_py.ALEInterface()
    ale.setFloat("repeat_action_probability", 0.0)
    ale.setInt("random_seed", seed)
    ale.loadROM(ale_py.roms.get_rom_path("breakout"))
    if mode is not None:
        ale.setMode(mode)
        ale.setDifficulty(difficulty)
    ale.reset_game()
    ale.act(ale_py.Action.FIRE)  # use_fire_reset; noop_max=0 adds no noops
    return ale


def test_render_returns_the_raw_screens_of_the_chosen_envs():
    actions = np.random.default_rng(1).integers(0, 4, (25, 3))
    with make_single("Breakout-v5", num_envs=3, seed=9, noop_max=0, mode=8, difficulty=1) as pool:
        pool.reset()
        for a in actions:
            pool.step(a)
        frames = pool.render(env_ids=[0, 2])
    assert frames.shape == (2, 210, 160, 3) and frames.dtype == np.uint8
    for k, env in enumerate([0, 2]):
        ale = plain_ale(9 + env, mode=8, difficulty=1)
        legal = ale.getMinimalActionSet()
        for a in actions[:, env]:
            for _ in range(4):  # frame_skip
                ale.act(legal[a])
        np.testing.assert_array_equal(frames[k], ale.getScreenRGB())


def test_async_any_subset_of_envs():
    """Not lockstep: sends may name any envs that are not in flight, one at a time too."""
    with make_single(num_envs=4, batch_size=2, seed=2) as pool:
        pool.async_reset()
        assert pool.recv()[4]["env_id"].tolist() == [0, 1]
        assert pool.recv()[4]["env_id"].tolist() == [2, 3]
        pool.send(np.array([1]), np.array([3]))
        pool.send(np.array([2]), np.array([0]))
        obs, rew, term, trunc, info = pool.recv()
        assert info["env_id"].tolist() == [3, 0] and info["elapsed_step"].tolist() == [1, 1]
        assert obs.shape == (2, 4, 84, 84)
        obs, info = pool.reset(np.array([1]))  # a single env, in async mode too
        assert info["env_id"].tolist() == [1] and info["elapsed_step"].tolist() == [0]
    assert_async_matches_sync(make_single, np.random.default_rng(3).integers(0, 6, (4, 20)))


def test_sync_partial_reset():
    with make_single(num_envs=3, seed=4) as pool:
        pool.reset()
        pool.step(np.ones(3, int))
        obs, info = pool.reset(np.array([2, 0]))
        assert info["env_id"].tolist() == [2, 0] and (info["elapsed_step"] == 0).all()
        assert obs.shape == (2, 4, 84, 84)
        info = pool.step(np.ones(3, int))[4]
        assert info["env_id"].tolist() == [0, 1, 2] and info["elapsed_step"].tolist() == [1, 2, 1]
