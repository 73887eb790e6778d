"""The true model a search steps (sebulba.game_model) and the pure-MCTS player
(sebulba.loop.mcts_player), on tic-tac-toe positions whose right move is known."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pgx", reason="the pgx extra is not installed: pip install -e '.[pgx]'")
pytest.importorskip("mctx", reason="the planning extra is not installed: pip install -e '.[planning]'")

from envs.jax.registry import make_jax_env  # noqa: E402
from sebulba.game_model import GameModel  # noqa: E402
from sebulba.loop.mcts_player import PureMCTS, playout  # noqa: E402

# Cells 0-8, row-major. player_0 (X) has 0 and 1, player_1 (O) has 3 and 4: X to move, 2 wins for
# X; were it O's move, 5 would win for O.
X_TO_WIN = (0, 3, 1, 4)


def position(moves, num_envs=1):
    """The states and rows' observations after `moves` (alternating, player_0 first)."""
    env = make_jax_env("pgx/tic_tac_toe")
    lanes, step = env.reset(jax.random.key(0), num_envs)
    for m in moves:
        lanes, step = env.step(lanes, jnp.full(2 * num_envs, m, jnp.int32))
    return lanes.state, step.obs


def test_a_move_gives_the_movers_reward_and_the_negamax_discount():
    model = GameModel.of("pgx/tic_tac_toe")
    states, obs = position(X_TO_WIN)
    assert model.to_play(states).tolist() == [0]
    mover = model.mover_rows(obs, model.to_play(states))
    np.testing.assert_array_equal(np.asarray(mover["action_mask"])[0], [0, 0, 1, 0, 0, 1, 1, 1, 1])
    won = model.play(states, jnp.array([2]))
    assert float(won.reward[0]) == 1.0 and float(won.discount[0]) == 0.0
    assert np.asarray(won.legal).all()  # a finished game: every move "legal", so a search has one
    on = model.play(states, jnp.array([8]))
    assert float(on.reward[0]) == 0.0 and float(on.discount[0]) == -1.0
    assert model.to_play(on.state).tolist() == [1]
    np.testing.assert_array_equal(np.asarray(on.legal)[0], [0, 0, 1, 0, 0, 1, 1, 1, 0])
    # O, now to move, sees its own two in a row first: pgx's planes are (mine, theirs)
    # (channel-first, as the pool presents it: what the network learns on)
    assert np.asarray(on.obs["observation"])[0, 0].reshape(-1).tolist() == [0, 0, 0, 1, 1, 0, 0, 0, 0]


@pytest.mark.slow(seconds=8)
def test_playouts_end_the_game_for_the_mover():
    """A finished game's playout is 0 (nothing left to play); one move from a draw, 0; from
    X_TO_WIN, random games end in every outcome for X."""
    model = GameModel.of("pgx/tic_tac_toe")
    states, _ = position(X_TO_WIN + (2,))
    assert float(playout(model, states, jnp.ones((1, 9), bool), jax.random.key(0), 100)[0]) == 0.0
    # X: 0 2 3 7, O: 1 4 5 6; X's last move, 8, draws
    states, obs = position((0, 1, 2, 4, 3, 5, 7, 6))
    legal = model.mover_rows(obs, model.to_play(states))["action_mask"] > 0
    assert np.asarray(legal).sum() == 1 and float(playout(model, states, legal, jax.random.key(0), 100)[0]) == 0.0
    states, obs = position(X_TO_WIN, num_envs=64)
    mover = model.mover_rows(obs, model.to_play(states))
    values = np.asarray(playout(model, states, jnp.asarray(mover["action_mask"]) > 0, jax.random.key(1), 100))
    assert set(np.unique(values).tolist()) == {-1.0, 0.0, 1.0}


@pytest.mark.slow(seconds=8)
def test_pure_mcts_takes_the_win_and_blocks_the_loss():
    model = GameModel.of("pgx/tic_tac_toe")
    player = PureMCTS(model, num_simulations=100)
    states, obs = position(X_TO_WIN, num_envs=8)
    np.testing.assert_array_equal(np.asarray(player(states, obs, jax.random.key(0))), 2)  # every row: the mover's move
    # O to move after X played 8 instead: O wins at 5 (and must, or X wins at 2)
    states, obs = position(X_TO_WIN + (8,), num_envs=8)
    np.testing.assert_array_equal(np.asarray(player(states, obs, jax.random.key(1))), 5)
    # X: 0, O: 4, X: 8, O: 2 -- X must block 6 (O's diagonal 2-4-6)
    states, obs = position((0, 4, 8, 2), num_envs=8)
    np.testing.assert_array_equal(np.asarray(player(states, obs, jax.random.key(2))), 6)


def test_a_game_without_turns_has_no_model():
    pytest.importorskip("gymnax")
    with pytest.raises(ValueError, match="gymnax/CartPole-v1 is not a turn-based JAX env"):
        GameModel.of("gymnax/CartPole-v1")
    with pytest.raises(ValueError, match="the pure-MCTS player's num_simulations must be a positive int"):
        PureMCTS(GameModel.of("pgx/tic_tac_toe"), num_simulations=0)
