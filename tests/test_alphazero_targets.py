"""AlphaZero's pure parts: the outcome targets read off a cycle's rows (against hand numbers and a
plain numpy reference) and the replay of positions (sebulba.replay.positions)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba.agents.alphazero.targets import outcomes
from sebulba.replay import positions as rp


def reference(reward, terminated, truncated):
    """Each step t < T: walk forward from t + 1, summing the row's rewards to its episode's end;
    known only where that end is a termination within the cycle and step t is no episode end."""
    T1, R = reward.shape
    value, known = np.zeros((T1 - 1, R), np.float32), np.zeros((T1 - 1, R), bool)
    for r in range(R):
        for t in range(T1 - 1):
            total = 0.0
            for u in range(t + 1, T1):
                total += reward[u, r]
                if terminated[u, r] or truncated[u, r]:
                    known[t, r] = bool(terminated[u, r]) and not (terminated[t, r] or truncated[t, r])
                    break
            value[t, r] = total
    return value, known


def test_outcomes_by_hand():
    """Two seats; player 1 wins at step 3 (rewards -1, +1), a new game starts at step 4 and runs
    past the cycle's end (step 5)."""
    reward = np.array([[0, 0], [0, 0], [0, 0], [-1, 1], [0, 0], [0, 0]], np.float32)
    terminated = np.zeros((6, 2), bool)
    terminated[3] = True
    out = outcomes(jnp.asarray(reward), jnp.asarray(terminated), jnp.zeros((6, 2), bool))
    np.testing.assert_array_equal(np.asarray(out.value)[:3], [[-1, 1]] * 3)
    np.testing.assert_array_equal(np.asarray(out.known), [[1, 1], [1, 1], [1, 1], [0, 0], [0, 0]])


def test_a_truncated_game_has_no_known_outcome():
    reward = np.zeros((4, 1), np.float32)
    truncated = np.array([[0], [0], [1], [0]], bool)
    out = outcomes(jnp.asarray(reward), jnp.zeros((4, 1), bool), jnp.asarray(truncated))
    assert not np.asarray(out.known).any()


def test_outcomes_match_the_reference_on_random_cycles():
    rng = np.random.default_rng(0)
    for _ in range(20):
        T1, R = rng.integers(2, 30), rng.integers(1, 5)
        reward = rng.normal(size=(T1, R)).astype(np.float32)
        ends = rng.random((T1, R)) < 0.2
        terminated = ends & (rng.random((T1, R)) < 0.7)
        truncated = ends & ~terminated
        out = outcomes(jnp.asarray(reward), jnp.asarray(terminated), jnp.asarray(truncated))
        value, known = reference(reward, terminated, truncated)
        np.testing.assert_array_equal(np.asarray(out.known), known)
        np.testing.assert_allclose(np.asarray(out.value)[known], value[known], rtol=1e-5, atol=1e-6)


def test_positions_keep_what_is_marked_oldest_out():
    replay = rp.init(5, {"x": jax.ShapeDtypeStruct((), jnp.int32)})
    replay = rp.add(replay, {"x": jnp.arange(4)}, jnp.array([True, False, True, False]))
    assert (int(replay.count), int(replay.cursor), int(replay.written)) == (2, 2, 4)
    np.testing.assert_array_equal(np.asarray(replay.items["x"])[np.asarray(replay.valid)], [0, 2])
    replay = rp.add(replay, {"x": jnp.arange(10, 14)}, jnp.array([True, True, True, False]))
    # written at slots 2, 3, 4, 0: 10, 11, 12 kept (slots 2-4), slot 0 (the oldest, 0) freed
    assert (int(replay.count), int(replay.cursor), int(replay.written)) == (4, 0, 5)
    assert sorted(np.asarray(replay.items["x"])[np.asarray(replay.valid)].tolist()) == [2, 10, 11, 12]
    items, valid = rp.sample(replay, jax.random.key(0), 1000)
    drawn = np.asarray(items["x"])[np.asarray(valid)]
    assert set(drawn.tolist()) == {2, 10, 11, 12} and 0.7 < np.asarray(valid).mean() < 0.9  # 4 of 5 slots


def test_a_replay_smaller_than_a_cycle_is_refused():
    replay = rp.init(3, {"x": jax.ShapeDtypeStruct((), jnp.int32)})
    with pytest.raises(ValueError, match="a replay of 3 positions cannot take 4 candidates"):
        rp.add(replay, {"x": jnp.arange(4)}, jnp.ones(4, bool))
