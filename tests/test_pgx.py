"""pgx's games as a JAX suite (envs/jax/pgx.py): seats as rows (player_0 opens), the mover's
legal moves in its row's action_mask, each seat's pgx reward, pgx's own boards, an illegal move
lost, and the pool's API over them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pgx", reason="the pgx extra is not installed: pip install -e '.[pgx]'")

import envs  # noqa: E402
from envs.jax.registry import make_jax_env, make_raw, served_ids  # noqa: E402


def random_legal(key, mask):
    """One uniformly random legal move per row (rows with none: 0)."""
    return jnp.argmax(jnp.where(mask > 0, jax.random.uniform(key, mask.shape), -1.0), axis=-1)


def test_the_suite_lists_pgx_games_and_refuses_what_cannot_run():
    ids = served_ids("pgx")
    assert {"pgx/connect_four", "pgx/tic_tac_toe", "pgx/go_9x9", "pgx/chess", "pgx/2048"} <= set(ids)
    assert "pgx/sparrow_mahjong" not in ids
    with pytest.raises(ValueError, match="pgx/sparrow_mahjong is not supported: it has three players"):
        make_raw("pgx/sparrow_mahjong")
    with pytest.raises(ValueError, match="pgx/connect_four takes no parameters here, got size"):
        make_raw("pgx/connect_four", size=5)
    with pytest.raises(ValueError, match="did you mean pgx/connect_four"):
        make_raw("pgx/connect_fuor")


def test_rows_are_seats_and_follow_pgx_boards_rewards_and_turns():
    """Random legal games on 16 envs: player_0's row holds the move at every reset (whichever
    pgx player id opens), the mover's row shows pgx's own observation of the state, the other
    row's mask is empty, each seat's reward is its pgx player's, and games end in pgx's terminal."""
    env = make_jax_env("pgx/connect_four")
    raw = env.raw
    assert env.player_names == ("player_0", "player_1") and env.observation_space["observation"].shape == (2, 6, 7)
    lanes, step = env.reset(jax.random.key(0), 16)
    openers = np.asarray(lanes.state.opener)
    assert 0 < openers.sum() < 16  # pgx drew both of its player ids to open
    step_fn = jax.jit(env.step)
    key, ends, checked = jax.random.key(1), 0, 0
    for t in range(120):
        mask = np.asarray(step.obs["action_mask"]).reshape(16, 2, 7)
        game = lanes.state.game
        to_play = np.asarray(jax.vmap(raw.to_play)(lanes.state))
        live = ~np.asarray(game.terminated)
        np.testing.assert_array_equal(mask[np.arange(16), 1 - to_play][live], 0)
        np.testing.assert_array_equal(mask[np.arange(16), to_play][live], np.asarray(game.legal_action_mask)[live])
        first = np.asarray(step.first).reshape(16, 2)[:, 0]
        assert (to_play[first] == 0).all()  # player_0 opens every game
        boards = np.asarray(step.obs["observation"]).reshape(16, 2, 2, 6, 7)[np.arange(16), to_play]
        np.testing.assert_array_equal(boards[live], np.moveaxis(np.asarray(game.observation), -1, 1)[live])
        key, k = jax.random.split(key)
        lanes, step = step_fn(lanes, random_legal(k, step.obs["action_mask"]))
        reward = np.asarray(step.reward).reshape(16, 2)
        seat_ids = (np.asarray(lanes.state.opener)[:, None] + np.arange(2)) % 2
        pgx_reward = np.take_along_axis(np.asarray(lanes.state.game.rewards), seat_ids, 1)
        done = np.asarray(step.terminated).reshape(16, 2)
        np.testing.assert_array_equal(reward[done[:, 0]], pgx_reward[done[:, 0]])
        assert (reward.sum(1) == 0).all() and (np.abs(reward[done[:, 0]]).sum(1) % 2 == 0).all()
        ends += done[:, 0].sum()
        checked += live.sum()
    assert ends >= 16 and checked >= 1000


def test_an_illegal_move_loses_the_game():
    """Column 0 filled (six moves), player_0 plays it again: it loses at once (pgx's rule)."""
    env = make_jax_env("pgx/connect_four")
    lanes, step = env.reset(jax.random.key(0), 1)
    for _ in range(6):
        lanes, step = env.step(lanes, jnp.zeros(2, jnp.int32))
    assert np.asarray(step.obs["action_mask"])[0, 0] == 0 and not bool(step.terminated[0])
    lanes, step = env.step(lanes, jnp.zeros(2, jnp.int32))
    np.testing.assert_array_equal(np.asarray(step.reward), [-1.0, 1.0])
    assert np.asarray(step.terminated).all()
    np.testing.assert_array_equal(np.asarray(step.obs["action_mask"]), 0)  # no legal move in a finished game


def test_the_pool_serves_a_pgx_game_with_envpools_api():
    pool = envs.make("pgx/tic_tac_toe", num_envs=3, seed=5)
    try:
        assert pool.spec.player_names == ("player_0", "player_1") and pool.num_players == 2
        obs, info = pool.reset()
        assert obs["observation"].shape == (6, 2, 3, 3) and obs["action_mask"].dtype == np.int8
        np.testing.assert_array_equal(obs["action_mask"][0::2], 1)  # player_0 moves first, anywhere
        np.testing.assert_array_equal(obs["action_mask"][1::2], 0)
        obs, reward, terminated, truncated, info = pool.step(np.zeros(6, np.int64))
        np.testing.assert_array_equal(obs["action_mask"][1::2, 0], 0)  # the corner is taken; player_1 to move
        np.testing.assert_array_equal(obs["action_mask"][1::2, 1:], 1)
        np.testing.assert_array_equal(info["players"]["id"], np.tile([0, 1], 3))
    finally:
        pool.close()


@pytest.mark.slow(seconds=8)
def test_one_player_games_have_one_row():
    env = make_jax_env("pgx/2048")
    assert env.num_players == 1 and env.player_names == ()
    lanes, step = env.reset(jax.random.key(0), 2)
    assert step.obs["action_mask"].shape == (2, 4) and step.obs["observation"].shape == (2, 31, 4, 4)
    lanes, step = env.step(lanes, random_legal(jax.random.key(1), step.obs["action_mask"]))
    assert step.reward.shape == (2,)


def test_a_board_is_drawn_from_player_0s_view():
    """connect four after player_0 plays column 3 and player_1 column 2: a red disc at the bottom of
    column 3, a yellow one at the bottom of column 2, the rest empty; chess draws no frames."""
    from envs.jax.pgx import CELL, COLORS

    pool = envs.make("pgx/connect_four", num_envs=1, render_mode="rgb_array")
    try:
        pool.reset()
        pool.step(np.array([3, 3]))
        pool.step(np.array([2, 2]))
        frame = pool.render(0)[0]
    finally:
        pool.close()
    assert frame.shape == (6 * CELL, 7 * CELL, 3) and frame.dtype == np.uint8
    centre = lambda i, j: tuple(frame[i * CELL + CELL // 2, j * CELL + CELL // 2])  # noqa: E731
    assert centre(5, 3) == tuple(COLORS[1]) and centre(5, 2) == tuple(COLORS[2])
    assert all(centre(i, j) == tuple(COLORS[0]) for i in range(6) for j in range(7) if (i, j) not in ((5, 3), (5, 2)))
    with pytest.raises(ValueError, match="pgx/chess draws no frames in the pool"):
        envs.make("pgx/chess", num_envs=1, render_mode="rgb_array")
