"""Multi-player rows (envs/players.py): EnvPool's (env, player) action rows to envs and back, and
max_num_players on single-player tasks. The pool's contract on real PettingZoo envs:
tests/test_pool_players.py."""

import numpy as np
import pytest

import envs
from envs.players import array_to_envs, envs_to_rows, rows_to_envs
from envs.ready import Batch


def test_dict_rows_in_any_order_become_envs_in_first_seen_order():
    rows = {"action": np.array([7, 1, 6, 0, 2]), "env_id": np.array([3, 0, 3, 0, 0]), "players": {"id": np.array([1, 1, 0, 0, 2])}}
    # env 3 has players 0, 1 of 3: refused (missing) unless every player acts
    with pytest.raises(ValueError, match=r"missing actions for \(env, player\) rows \[\(3, 2\)\]"):
        rows_to_envs(rows, num_envs=4, num_players=3)
    rows = {"action": np.array([7, 1, 6, 0, 2, 8]), "env_id": np.array([3, 0, 3, 0, 0, 3]),
            "players.id": np.array([1, 1, 0, 0, 2, 2])}  # fmt: skip
    action, ids = rows_to_envs(rows, num_envs=4, num_players=3)
    assert ids.tolist() == [3, 0] and ids.dtype == np.int32
    assert action.tolist() == [[6, 7, 8], [0, 1, 2]]


@pytest.mark.parametrize(
    "rows, message",
    [
        ({"action": [0, 1], "env_id": [0, 0], "players.id": [1, 1]}, r"given twice: \[\(0, 1\)\]"),
        ({"action": [0, 1], "env_id": [0, 0], "players.id": [0, 2]}, r"unknown player id\(s\) in \(env, player\) rows \[\(0, 2\)\]"),
        ({"action": [0, 1], "env_id": [0, 0], "players.id": [0, -1]}, r"unknown player id\(s\).*\[\(0, -1\)\]"),
        ({"action": [0, 1], "env_id": [0, 5], "players.id": [0, 1]}, r"env_id out of range \[0, 2\): \[5\]"),
        ({"action": [0, 1], "env_id": [0, 0]}, r"needs exactly the keys \['action', 'env_id', 'players.id'\]"),
        ({"action": [0, 1], "env_id": [0, 0], "players.id": [0, 1], "x": 1}, "needs exactly the keys"),
        ({"action": [0, 1, 1], "env_id": [0, 0], "players.id": [0, 1]}, "one entry per row"),
        ({"action": [0, 1], "env_id": [0.0, 0.0], "players.id": [0, 1]}, "env_id must be a 1-D array of integers"),
        ({"action": [0], "env_id": [1], "players.id": [0]}, r"missing actions for \(env, player\) rows \[\(1, 1\)\]"),
    ],
)
def test_bad_rows_are_refused_by_name(rows, message):
    with pytest.raises(ValueError, match=message):
        rows_to_envs(rows, num_envs=2, num_players=2)


def test_array_rows_need_every_player_of_each_env():
    assert array_to_envs(np.arange(6), 3, 0).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert array_to_envs(np.zeros((4, 2)), 2, 1).shape == (2, 2, 2)
    with pytest.raises(ValueError, match="3 rows per env"):
        array_to_envs(np.arange(4), 3, 0)


def test_envs_become_rows_with_player_ids():
    n, p = 2, 3
    b = Batch(np.array([4, 1], np.int32), np.arange(n * p * 2).reshape(n, p, 2), np.ones((n, p), np.float32),
              np.zeros((n, p), bool), np.ones((n, p), bool), np.array([5, 0], np.int32),
              {"score": np.arange(n * p).reshape(n, p), "players": {"alive": np.array([[1, 0, 1], [1, 1, 1]], bool)}})  # fmt: skip
    r = envs_to_rows(b, p)
    assert r.obs.shape == (6, 2) and r.obs[4].tolist() == [8, 9]
    assert r.env_id.tolist() == [4, 4, 4, 1, 1, 1] and r.elapsed.tolist() == [5, 5, 5, 0, 0, 0]
    assert r.extra["players"]["id"].tolist() == [0, 1, 2, 0, 1, 2]
    assert r.extra["players"]["env_id"].tolist() == r.env_id.tolist()
    assert r.extra["players"]["alive"].tolist() == [True, False, True, True, True, True]
    assert r.extra["score"].tolist() == list(range(6)) and r.truncated.shape == (6,)


def test_single_player_task_refuses_more_players():
    with pytest.raises(ValueError, match="max_num_players must be 1: 'CartPole-v1' is single-player, got 2"):
        envs.make("CartPole-v1", backend="process", max_num_players=2)
    with pytest.raises(ValueError, match="max_num_players must be 1"):
        envs.make_spec("CartPole-v1", max_num_players=3)
