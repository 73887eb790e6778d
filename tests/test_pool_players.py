"""EnvPool's multi-player contract (max_num_players = P > 1) on real PettingZoo envs in worker
processes: (env, player) rows in and out, gymnasium and dm formats, sync and async batches of
whole envs, auto-reset and truncation per env, agents that leave mid-episode, a turn-based game,
every error path, and equality with PettingZoo's own envs stepped by hand."""

import importlib.util
import os
import signal
import warnings

import dm_env
import numpy as np
import pytest

import envs

pytest.importorskip("mpe2")
from mpe2 import simple_spread_v3, simple_tag_v3  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # PettingZoo 1.27 on its `<family>.<env>` modules
    from pettingzoo.classic import tictactoe_v3  # noqa: E402

pytestmark = pytest.mark.timeout(120)

SPREAD = "pettingzoo/mpe2/simple_spread_v3"
DYING = "pettingzoo/tests.support/dying_agents"  # tests/support/dying_agents.py: agent i leaves on step i + 1
TICTACTOE = "pettingzoo/classic/tictactoe_v3"


class HandSpread:
    """PettingZoo's own simple_spread_v3 env g of a pool with seed s, stepped by hand under the
    pool's auto-reset rule: first reset with seed s + g, later resets unseeded, an ended episode's
    next step is a reset (its action discarded)."""

    def __init__(self, seed: int):
        self.env = simple_spread_v3.parallel_env()
        self.agents = self.env.possible_agents
        obs, _ = self.env.reset(seed=seed)
        self.obs, self.done = np.stack([obs[a] for a in self.agents]), False

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        if self.done:
            obs, _ = self.env.reset()
            self.obs, self.done = np.stack([obs[a] for a in self.agents]), False
            return self.obs, np.zeros(3, np.float32), False
        obs, rew, term, trunc, _ = self.env.step({a: int(x) for a, x in zip(self.agents, actions)})
        self.obs = np.stack([obs[a] for a in self.agents])
        self.done = not self.env.agents
        return self.obs, np.array([rew[a] for a in self.agents], np.float32), all(trunc.values())


def test_spread_rows_spec_and_equality_with_pettingzoo_by_hand():
    rng = np.random.default_rng(0)
    with envs.make(SPREAD, num_envs=2, seed=5, num_threads=1) as pool:
        assert pool.config.max_num_players == 3
        assert pool.observation_space.shape == (18,) and pool.action_space.n == 5  # one player's spaces
        hands = [HandSpread(5), HandSpread(6)]
        obs, info = pool.reset()
        assert obs.shape == (6, 18)
        assert info["env_id"].tolist() == info["players"]["env_id"].tolist() == [0, 0, 0, 1, 1, 1]
        assert info["players"]["id"].tolist() == [0, 1, 2, 0, 1, 2] and info["players"]["alive"].all()
        np.testing.assert_array_equal(obs, np.concatenate([h.obs for h in hands]))
        for t in range(1, 28):  # past the end of the 25-cycle episode and its auto-reset
            action = rng.integers(0, 5, 6)
            obs, rew, term, trunc, info = pool.step(action)
            want = [h.step(action[3 * g : 3 * g + 3]) for g, h in enumerate(hands)]
            np.testing.assert_array_equal(obs, np.concatenate([w[0] for w in want]))
            np.testing.assert_array_equal(rew, np.concatenate([w[1] for w in want]))
            assert trunc.tolist() == [w[2] for w in want for _ in range(3)] == [t == 25] * 6
            assert not term.any() and info["elapsed_step"].tolist() == [t % 26] * 6


def test_spread_make_spec_and_max_num_players():
    spec = envs.make_spec(SPREAD, num_envs=4)
    assert spec.config.max_num_players == 3 and spec.observation_space.shape == (18,)
    players = spec.observation_spec().players
    assert players.id.maximum == 2 and players.env_id.maximum == 3
    with pytest.raises(ValueError, match=r"max_num_players=2: 'pettingzoo/mpe2/simple_spread_v3' has 3 players"):
        envs.make_spec(SPREAD, max_num_players=2)


def test_env_kwargs_set_the_player_count():
    spec = envs.make_spec(SPREAD, N=2)  # MPE's N: the number of agents
    assert spec.config.max_num_players == 2 and spec.config.N == 2


def test_async_batches_hold_whole_envs_and_take_dict_rows_in_any_order():
    rng = np.random.default_rng(1)
    with envs.make(SPREAD, num_envs=3, batch_size=1, seed=9, num_threads=1) as pool, \
            envs.make(SPREAD, num_envs=3, seed=9, num_threads=1) as sync:  # fmt: skip
        hands = [HandSpread(9 + g) for g in range(3)]
        pool.async_reset()
        seen = []
        for _ in range(12):
            obs, rew, term, trunc, info = pool.recv()
            (g,) = set(info["env_id"].tolist())  # one env per batch: all its players
            assert info["players"]["id"].tolist() == [0, 1, 2] and obs.shape == (3, 18)
            seen.append(g)
            action = rng.integers(0, 5, 3)
            order = rng.permutation(3)  # rows in any order
            pool.send({"action": action[order], "env_id": np.full(3, g), "players": {"id": order}})
        assert set(seen) == {0, 1, 2}
        # sync: the dict form with every row, shuffled across envs, equals the array form
        sync.reset()
        action = rng.integers(0, 5, 9)
        env_id, pid = np.repeat(np.arange(3), 3), np.tile(np.arange(3), 3)
        order = rng.permutation(9)
        a = sync.step({"action": action[order], "env_id": env_id[order], "players.id": pid[order]})
        want = [h.step(action[3 * g : 3 * g + 3]) for g, h in enumerate(hands)]
        np.testing.assert_array_equal(a[0], np.concatenate([w[0] for w in want]))
        np.testing.assert_array_equal(a[1], np.concatenate([w[1] for w in want]))


def test_async_results_equal_pettingzoo_by_hand_per_env():
    rng = np.random.default_rng(2)
    with envs.make(SPREAD, num_envs=3, batch_size=2, seed=11, num_threads=2) as pool:
        hands = [HandSpread(11 + g) for g in range(3)]
        pool.async_reset()
        last = {g: (h.obs, np.zeros(3, np.float32)) for g, h in enumerate(hands)}
        ended = set()
        for _ in range(60):
            obs, rew, term, trunc, info = pool.recv()
            ids = info["env_id"][::3]
            assert len(ids) == 2 and (info["env_id"] == np.repeat(ids, 3)).all()
            for k, g in enumerate(ids.tolist()):
                np.testing.assert_array_equal(obs[3 * k : 3 * k + 3], last[g][0])
                np.testing.assert_array_equal(rew[3 * k : 3 * k + 3], last[g][1])
                if trunc[3 * k]:  # its episode ended: its own next step resets it, the others go on
                    ended.add(g)
                    assert (info["elapsed_step"][3 * k : 3 * k + 3] == 25).all()
            action = rng.integers(0, 5, 6)
            pool.send(action, ids)  # array form: every player of each env, in player order
            for k, g in enumerate(ids.tolist()):
                last[g] = hands[g].step(action[3 * k : 3 * k + 3])[:2]
        assert ended == {0, 1, 2}


def test_players_of_differing_observation_sizes_padded_on_request():
    rng = np.random.default_rng(3)
    hand = simple_tag_v3.parallel_env()
    agents = hand.possible_agents  # 3 adversaries (16 numbers), then the good agent (14)
    with envs.make("pettingzoo/mpe2/simple_tag_v3", pad_observations=True, seed=7, num_threads=1) as pool:
        assert pool.config.max_num_players == 4 and pool.observation_space.shape == (16,)
        obs, _ = pool.reset()
        want, _ = hand.reset(seed=7)
        for t in range(4):
            for i, a in enumerate(agents):
                np.testing.assert_array_equal(obs[i, : len(want[a])], want[a])
            assert (obs[3, 14:] == 0).all()
            action = rng.integers(0, 5, 4)
            obs, rew, *_ = pool.step(action)
            want, rewards, *_ = hand.step(dict(zip(agents, action.tolist())))
            assert rew.tolist() == [np.float32(rewards[a]) for a in agents]
    with pytest.raises(ValueError, match="pad_observations must be True or False"):
        envs.make_spec("pettingzoo/mpe2/simple_tag_v3", pad_observations="yes")
    with pytest.raises(ValueError, match="pad_observations=True: .*tictactoe_v3.* needs every player's observation to be a 1-D Box"):
        envs.make_spec(TICTACTOE, pad_observations=True)


def test_player_id_one_hot_appended_on_request():
    """add_player_id=True: each row ends with its player's one-hot, after the env's own numbers
    (and after the padding of pad_observations), on every step and after every reset."""
    hand = simple_spread_v3.parallel_env()
    agents = hand.possible_agents
    with envs.make(SPREAD, add_player_id=True, num_envs=2, seed=5, max_episode_steps=2, num_threads=1) as pool:
        space = pool.observation_space
        assert space.shape == (21,) and (space.low[18:] == 0).all() and (space.high[18:] == 1).all()
        obs, _ = pool.reset()
        want, _ = hand.reset(seed=5)
        np.testing.assert_array_equal(obs[:3, :18], np.stack([want[a] for a in agents]))
        for _ in range(4):  # through an auto-reset
            np.testing.assert_array_equal(obs[:, 18:], np.tile(np.eye(3, dtype=np.float32), (2, 1)))
            obs, *_ = pool.step(np.zeros(6, int))
    with envs.make("pettingzoo/mpe2/simple_tag_v3", pad_observations=True, add_player_id=True, num_threads=1) as pool:
        obs, _ = pool.reset()
        assert obs.shape == (4, 20) and (obs[3, 14:16] == 0).all()
        np.testing.assert_array_equal(obs[:, 16:], np.eye(4, dtype=np.float32))
    with pytest.raises(ValueError, match="add_player_id must be True or False, got 1"):
        envs.make_spec(SPREAD, add_player_id=1)
    with pytest.raises(ValueError, match="add_player_id=True: .*tictactoe_v3.* needs 1-D Box observations"):
        envs.make_spec(TICTACTOE, add_player_id=True)


def test_global_state_next_to_each_players_observation_on_request():
    """global_state=True: a Dict observation {"obs": the player's, "state": PettingZoo's state()},
    the env's state in each of its players' rows."""
    hand = simple_spread_v3.parallel_env()
    agents = hand.possible_agents
    with envs.make(SPREAD, global_state=True, num_envs=2, seed=5, num_threads=1) as pool:
        assert set(pool.observation_space.spaces) == {"obs", "state"} and pool.observation_space["state"].shape == (54,)
        obs, _ = pool.reset()
        want, _ = hand.reset(seed=5)
        for _ in range(3):
            np.testing.assert_array_equal(obs["obs"][:3], np.stack([want[a] for a in agents]))
            np.testing.assert_array_equal(obs["state"][:3], np.tile(hand.state(), (3, 1)))
            action = np.array([1, 2, 3, 0, 0, 0])
            obs, *_ = pool.step(action)
            want, *_ = hand.step(dict(zip(agents, action[:3].tolist())))
    with pytest.raises(ValueError, match="global_state must be True or False"):
        envs.make_spec(SPREAD, global_state="yes")


def test_a_one_player_pettingzoo_env_is_a_single_player_pool():
    """MPE spread with N=1: max_num_players 1, no player axis (it used to fail on its first step)."""
    hand = simple_spread_v3.parallel_env(N=1)
    with envs.make(SPREAD, N=1, num_envs=2, seed=3, num_threads=1) as pool:
        assert pool.num_players == 1 and pool.observation_space.shape == (6,)
        obs, info = pool.reset()
        want, _ = hand.reset(seed=3)
        assert obs.shape == (2, 6) and set(info["players"]) == {"env_id"}
        for _ in range(3):
            np.testing.assert_array_equal(obs[0], want["agent_0"])
            obs, reward, *_ = pool.step(np.array([1, 2]))
            want, rewards, *_ = hand.step({"agent_0": 1})
            assert reward[0] == np.float32(rewards["agent_0"])


def test_reset_by_env_id_and_reset_seed_replay():
    with envs.make(SPREAD, num_envs=3, seed=4, num_threads=1) as pool:
        first, _ = pool.reset()
        pool.step(np.zeros(9, int))
        obs, info = pool.reset(np.array([2, 0]))
        assert info["env_id"].tolist() == [2, 2, 2, 0, 0, 0] and info["players"]["id"].tolist() == [0, 1, 2] * 2
        obs, _ = pool.reset(seed=4)  # the episodes of a pool made with seed=4
        np.testing.assert_array_equal(obs, first)
        np.testing.assert_array_equal(obs[:3], HandSpread(4).obs)


def test_killed_worker_truncates_its_envs_players():
    with envs.make(DYING, num_envs=2, num_threads=2) as pool:
        pool.reset()
        pool.step(np.zeros(6, int))  # agent 0 of each env terminates
        pid = pool._backend._workers[1].pid  # env 1
        os.kill(pid, signal.SIGKILL)
        with pytest.warns(RuntimeWarning, match=r"(?s)env worker 1 .*died with exit code -9.*respawning"):
            obs, rew, term, trunc, info = pool.step(np.zeros(6, int))
        assert term[3:].tolist() == [True, False, False] and trunc[3:].tolist() == [False, True, True]
        assert not rew[3:].any() and term[:3].tolist() == [True, True, False] and not trunc[:3].any()
        obs, rew, term, trunc, info = pool.step(np.zeros(6, int))  # env 1: the reset step
        assert info["elapsed_step"].tolist() == [3, 3, 3, 0, 0, 0] and not term[3:].any() and not trunc[3:].any()


def test_dm_format_has_players_field_and_step_types_per_row():
    with envs.make_dm(SPREAD, num_envs=2, seed=0, max_episode_steps=2, num_threads=1) as pool:
        ts = pool.reset()
        assert isinstance(ts, dm_env.TimeStep) and (ts.step_type == dm_env.StepType.FIRST).all()
        assert ts.observation.obs.shape == (6, 18) and ts.observation.env_id.tolist() == [0, 0, 0, 1, 1, 1]
        assert ts.observation.players.id.tolist() == [0, 1, 2, 0, 1, 2]
        assert ts.observation._fields == pool.observation_spec()._fields
        ts = pool.step(np.zeros(6, int))
        assert (ts.step_type == dm_env.StepType.MID).all() and ts.reward.shape == (6,)
        ts = pool.step({"action": np.zeros(6, int), "env_id": np.repeat([1, 0], 3), "players.id": np.tile([2, 0, 1], 2)})
        assert (ts.step_type == dm_env.StepType.LAST).all() and (ts.discount == 1).all()  # truncated at 2 steps
        ts = pool.step(np.zeros(6, int))
        assert (ts.step_type == dm_env.StepType.FIRST).all()  # auto-reset, per env


def test_agents_that_leave_keep_their_rows_until_the_env_resets():
    with envs.make(DYING, num_envs=2, num_threads=1) as pool:
        assert pool.config.max_num_players == 3
        obs, info = pool.reset()
        rows = []
        for _ in range(4):
            rows.append(pool.step(np.tile([0, 1, 2], 2)))
        (o1, r1, te1, _, i1), (o2, r2, te2, _, i2), (o3, r3, te3, _, i3), (o4, r4, te4, tr4, i4) = rows
        # step 1: agent 0 terminates (its action counted: alive), the others go on
        assert te1[:3].tolist() == [True, False, False] and i1["players"]["alive"][:3].all()
        assert r1[:3].tolist() == [1, 11, 21]
        # step 2: agent 0 is gone: last observation, reward 0, still terminated, not alive
        assert o2[0].tolist() == [1, 0] and r2[:3].tolist() == [0, 12, 22]
        assert te2[:3].tolist() == [True, True, False] and i2["players"]["alive"][:3].tolist() == [False, True, True]
        assert i2["action"][:3].tolist() == [0, 1, 2] and i2["_action"][:3].tolist() == [False, True, True]  # per-row info
        # step 3: the last agent leaves: the episode is over
        assert o3[:3, 0].tolist() == [1, 2, 3] and te3[:3].all() and i3["players"]["alive"][:3].tolist() == [False, False, True]
        # step 4: the next step resets the env: every player back, not done
        assert i4["elapsed_step"].tolist() == [0] * 6 and not te4.any() and not tr4.any()
        assert i4["players"]["alive"].all() and (o4[:3, 0] == 0).all() and not r4.any()


def test_time_limit_truncates_only_the_players_still_in_the_episode():
    with envs.make(DYING, num_envs=1, max_episode_steps=2, num_threads=1) as pool:
        pool.reset()
        _, _, te, tr, _ = pool.step(np.zeros(3, int))
        assert te.tolist() == [True, False, False] and not tr.any()
        _, _, te, tr, info = pool.step(np.zeros(3, int))
        # agent 0 gone (terminated), agent 1 terminates on the limit's step (stays terminated), agent 2 truncated
        assert te.tolist() == [True, True, False] and tr.tolist() == [False, False, True]
        _, _, te, tr, info = pool.step(np.zeros(3, int))
        assert info["elapsed_step"].tolist() == [0, 0, 0] and not te.any() and not tr.any()


class HandTicTacToe:
    def __init__(self, seed: int):
        self.env = tictactoe_v3.env()
        self.env.reset(seed=seed)

    def observe(self) -> np.ndarray:
        return np.stack([self.env.observe(a)["observation"] for a in self.env.possible_agents])


def test_turn_based_game_takes_the_movers_action_only():
    # X (player 1) plays 0, 1, 2 and wins on its third move; O plays 3, 4. The idle player's
    # action (the other column) is ignored, even an illegal one.
    moves = [0, 3, 1, 4, 2]
    hand = HandTicTacToe(0)
    with envs.make(TICTACTOE, num_envs=1, seed=0, num_threads=1) as pool:
        assert pool.config.max_num_players == 2 and pool.action_space.n == 9
        obs, info = pool.reset()
        assert obs["action_mask"].sum(axis=1).tolist() == [9, 0]  # player 1 to move
        for t, move in enumerate(moves):
            mover = t % 2
            action = np.array([move, 8]) if mover == 0 else np.array([8, move])
            obs, rew, te, tr, info = pool.step(action)
            hand.env.step(move)
            np.testing.assert_array_equal(obs["observation"], hand.observe())
            if t < len(moves) - 1:
                assert obs["action_mask"][1 - mover].any() and not obs["action_mask"][mover].any()  # turns alternate
                assert not te.any() and not rew.any()
        assert rew.tolist() == [1.0, -1.0] and te.tolist() == [True, True]
        assert rew.tolist() == [hand.env.rewards[a] for a in hand.env.possible_agents]
        obs, rew, te, tr, info = pool.step(np.array([0, 0]))
        assert info["elapsed_step"].tolist() == [0, 0] and not obs["observation"].any()  # auto-reset


def test_bad_rows_and_ids_are_refused_by_name():
    with envs.make(SPREAD, num_envs=2, batch_size=1, num_threads=1) as pool:
        pool.async_reset()
        _, _, _, _, info = pool.recv()
        g = int(info["env_id"][0])
        other = 1 - g
        with pytest.raises(ValueError, match=r"given twice: \[\(%d, 1\)\]" % g):
            pool.send({"action": np.zeros(3, int), "env_id": np.full(3, g), "players.id": np.array([0, 1, 1])})
        with pytest.raises(ValueError, match=r"unknown player id\(s\) in \(env, player\) rows \[\(%d, 3\)\]" % g):
            pool.send({"action": np.zeros(3, int), "env_id": np.full(3, g), "players.id": np.array([0, 1, 3])})
        with pytest.raises(ValueError, match=r"missing actions for \(env, player\) rows \[\(%d, 2\)\]" % g):
            pool.send({"action": np.zeros(2, int), "env_id": np.full(2, g), "players.id": np.array([0, 1])})
        with pytest.raises(ValueError, match=r"envs \[%d\] are not ready" % other):  # a player of an env in flight
            pool.send({"action": np.zeros(3, int), "env_id": np.full(3, other), "players.id": np.arange(3)})
        with pytest.raises(ValueError, match=r"env_id names envs, one per env \(1 for 3 rows\), got one per row"):
            pool.send(np.zeros(3, int), np.full(3, g))
        with pytest.raises(ValueError, match="3 rows per env"):
            pool.send(np.zeros(4, int), np.array([g]))
        with pytest.raises(ValueError, match=r"action must have 3 rows \(1 envs x 3 players\)"):
            pool.send(np.zeros(6, int), np.array([g]))
        with pytest.raises(ValueError, match="action out of range"):
            pool.send(np.array([0, 5, 0]), np.array([g]))
        with pytest.raises(ValueError, match="xla\\(\\): .* is multi-player"):
            pool.xla()
        pool.send(np.zeros(3, int))  # still usable: the last batch's env, every player
        assert set(pool.recv()[-1]["env_id"].tolist()) in ({0}, {1})
    with envs.make(SPREAD, num_envs=2, num_threads=1) as pool:
        pool.reset()
        with pytest.raises(ValueError, match="reset_mask.*single-player"):
            pool.reset(options={"reset_mask": np.array([True, False])})
    with pytest.raises(ValueError, match="is multi-player \\(3 rows per env\\): Gymnasium's vector API"):
        envs.make_vector_env(SPREAD, num_envs=2, num_threads=1)


@pytest.mark.parametrize(
    "task_id, kwargs, error, message",
    [
        ("pettingzoo/mpe2/simple_tag_v3", {}, ValueError,
         r"players' observation spaces differ \(adversary_0, adversary_1, adversary_2: Box.*\(16,\).*agent_0: Box.*\(14,\)"),
        ("pettingzoo/mpe2/no_such_env_v0", {}, ValueError, "unknown PettingZoo env 'pettingzoo/mpe2/no_such_env_v0'"),
        ("pettingzoo/simple_spread_v3", {}, ValueError, "PettingZoo ids look like 'pettingzoo/<module>/<env>'"),
        (SPREAD, {"backend": "native"}, ValueError, "is a PettingZoo env: it runs on backend='process'"),
        (SPREAD, {"no_such_kwarg": 1}, ValueError, "bad kwarg for task"),
    ],
)
def test_bad_tasks_are_refused_by_name(task_id, kwargs, error, message):
    with pytest.raises(error, match=message):
        envs.make(task_id, **kwargs)


@pytest.mark.skipif(importlib.util.find_spec("chess") is not None, reason="needs an install without the chess package")
def test_env_whose_package_is_missing_says_so():
    with pytest.raises(ImportError, match="'pettingzoo/classic/chess_v6' cannot be built on this install: No module named 'chess'"):
        envs.make_spec("pettingzoo/classic/chess_v6")


def test_workers_drop_pettingzoo_check_only_wrappers_and_keep_the_others():
    """The pool steps envs less OrderEnforcing and (discrete actions) AssertOutOfBounds, whose checks it
    makes itself (the equality tests above compare with PettingZoo's fully wrapped envs); wrappers that
    change what the env does stay."""
    from pettingzoo.classic import tictactoe_v3
    from pettingzoo.utils.wrappers import BaseWrapper

    from envs.process.pettingzoo_task import _unchecked

    def chain(env):
        env, names = getattr(env, "aec_env", env), []
        while isinstance(env, BaseWrapper):
            names.append(type(env).__name__)
            env = env.env
        return names

    assert chain(simple_spread_v3.parallel_env()) == ["OrderEnforcingWrapper", "AssertOutOfBoundsWrapper"]
    assert chain(_unchecked(simple_spread_v3.parallel_env())) == []
    assert chain(_unchecked(simple_spread_v3.parallel_env(continuous_actions=True))) == ["ClipOutOfBoundsWrapper"]
    assert chain(_unchecked(tictactoe_v3.env())) == ["TerminateIllegalWrapper"]
