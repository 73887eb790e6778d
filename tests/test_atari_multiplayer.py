"""The multi-player Atari games (Combat-v5, Joust-v5, MazeCraze-v5, Warlords-v5) through
multi_agent_ale_py in worker processes: EnvPool's multi-player contract (rows, info["players"],
the dm players field), equality with multi_agent_ale_py's own ALEInterface stepped by hand (sync
and async, across game over, a player leaving and auto-reset), and every refused input."""

import subprocess
import sys
from pathlib import Path

import dm_env
import numpy as np
import pytest

import envs

pytest.importorskip("ale_py")
multi_agent_ale_py = pytest.importorskip("multi_agent_ale_py", reason="the atari-multiplayer extra is not installed")
from envs.atari.multiplayer import rom_path  # noqa: E402
from envs.atari.single import AreaResizer, CppNoopSampler  # noqa: E402 - checked against ALE in test_atari_single

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[1]
PLAYER_IDS = ("Combat-v5", "Joust-v5", "MazeCraze-v5", "Warlords-v5")


class HandGame:
    """Env g of a pool with seed s, by hand on multi_agent_ale_py's public ALEInterface: ALE seeded
    s + g, the mode set after loadROM (as PettingZoo does); FIRE then noops at reset (ALE's noop
    counts for that seed); frame skip with the last two frames max-pooled (a step cut short by game
    over captures no further frame), area-resized, stacked; players leave as in PettingZoo (lives
    < 0, or game over) and act NOOP afterwards; an ended episode's next step is a reset."""

    def __init__(self, rom: str, mode: int, players: int, seed: int, rap: float, frame_skip: int = 4,
                 stack: int = 2, noop_max: int = 30, max_episode_steps: int = 27_000):  # fmt: skip
        self.ale = multi_agent_ale_py.ALEInterface()
        self.ale.setFloat("repeat_action_probability", rap)
        self.ale.setInt("random_seed", seed)
        self.ale.loadROM(rom_path(rom))
        self.ale.setMode(mode)
        assert self.ale.numPlayersActive() == players
        self.p, self.skip = players, frame_skip
        self.limit = max_episode_steps * frame_skip  # frames: a step that reaches it captures no frame after it
        self.actions = self.ale.getMinimalActionSet()
        self.noops = CppNoopSampler(seed, noop_max)
        width, height = self.ale.getScreenDims()
        self.resize = AreaResizer(height, width, 84, 84)
        self.stack = np.zeros((stack, 84, 84), np.uint8)
        self.done = True

    def screen(self) -> np.ndarray:
        return self.ale.getScreenGrayscale()[..., 0]

    def _push(self) -> np.ndarray:
        self.last = np.maximum(self.last, self.before)
        self.stack = np.concatenate([self.stack[1:], self.resize(self.last[None])])
        return np.broadcast_to(self.stack, (self.p, *self.stack.shape))

    def reset(self) -> np.ndarray:
        ale = self.ale
        ale.reset_game()
        ale.act(np.ones(self.p, np.intc))  # FIRE
        for _ in range(self.noops.draw() - 1):
            ale.act(np.zeros(self.p, np.intc))
            if ale.game_over():
                ale.reset_game()
        self.last, self.before = self.screen(), np.zeros_like(self.screen())
        self.stack[:] = 0
        self.frames = 0
        self.playing, self.done = np.ones(self.p, bool), False
        return self._push()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(obs, reward, each player's terminated flag, alive) of one step, or of the reset it is."""
        if self.done:
            return self.reset(), np.zeros(self.p, np.float32), np.zeros(self.p, bool), np.ones(self.p, bool)
        alive = self.playing.copy()
        reward = np.zeros(self.p, np.float32)
        over = False
        for k in range(self.skip):
            reward += self.ale.act(self.actions[np.where(alive, action, 0)])
            over = self.ale.game_over()
            self.frames += 1
            if over or self.frames >= self.limit:
                break
            if k == self.skip - 2:
                self.before = self.screen()
            elif k == self.skip - 1:
                self.last = self.screen()
        out = alive & (over | (self.ale.allLives() < 0))
        self.playing &= ~out
        self.done = not self.playing.any() or self.frames >= self.limit
        return self._push(), np.where(alive, reward, 0), ~self.playing, alive


def _check_rows(info: dict, env_ids: list[int], players: int) -> None:
    rows = info["players"]
    assert rows["env_id"].tolist() == [g for g in env_ids for _ in range(players)]
    assert rows["id"].tolist() == list(range(players)) * len(env_ids)
    assert info["env_id"].tolist() == rows["env_id"].tolist()


def test_rows_spaces_and_player_counts():
    for task_id, players, actions in zip(PLAYER_IDS, (2, 2, 2, 4), (18, 18, 18, 6)):
        spec = envs.make_spec(task_id)
        assert spec.config.max_num_players == players, task_id
        assert spec.observation_space.shape == (4, 84, 84) and spec.action_space.n == actions  # one player's spaces
    two = envs.make_spec("Warlords-v5", max_num_players=2)  # Warlords' 2-player modes
    assert two.config.max_num_players == 2
    with envs.make("Warlords-v5", num_envs=2, seed=3, num_threads=1, stack_num=1, img_height=42, img_width=42) as pool:
        obs, info = pool.reset()
        assert obs.shape == (8, 1, 42, 42) and obs.dtype == np.uint8
        _check_rows(info, [0, 1], 4)
        assert info["elapsed_step"].tolist() == [0] * 8 and info["players"]["alive"].all()
        obs, rew, term, trunc, info = pool.step(np.zeros(8, int))
        _check_rows(info, [0, 1], 4)
        for g in range(2):  # every player of an env sees the env's screen
            assert (obs[4 * g : 4 * g + 4] == obs[4 * g]).all()
        assert rew.dtype == np.float32 and info["lives"].shape == info["reward"].shape == (8,)
        assert info["elapsed_step"].tolist() == [1] * 8


def test_player_id_planes_follow_the_shared_frame_stack_on_request():
    """add_player_id=True: each row is the env's frame stack and then P planes, the row's player's
    255 and the others' 0 (players sharing a network see which side they play)."""
    assert envs.make_spec("Warlords-v5", add_player_id=True).observation_space.shape == (8, 84, 84)
    kw = dict(num_envs=2, seed=3, num_threads=1, stack_num=2, img_height=42, img_width=42)
    with envs.make("Warlords-v5", **kw) as plain, envs.make("Warlords-v5", add_player_id=True, **kw) as marked:
        for step in range(3):
            a = np.full(8, step % 6)
            (obs, *_), (got, *_) = (plain.reset(), marked.reset()) if step == 0 else (plain.step(a), marked.step(a))
            assert got.shape == (8, 6, 42, 42)
            assert (got[:, :2] == obs).all()  # the shared screen, unchanged
            planes = got[:, 2:].reshape(2, 4, 4, -1)  # (env, row's player, plane, pixels)
            assert (planes == 255 * np.eye(4, dtype=np.uint8)[None, :, :, None]).all()


@pytest.mark.slow(seconds=4)
def test_sync_pool_equals_multi_agent_ale_by_hand_across_a_player_leaving_game_over_and_auto_reset():
    """Joust: a player runs out of lives mid-game (its row terminated, then not alive), the game
    ends, the env auto-resets; sticky actions and the noop starts are ALE's for the same seed.
    (Seed 5: the first game ends after ~1,480 steps, one of the shortest of seeds 1..7.)"""
    seed = 5
    rng = np.random.default_rng(seed)
    with envs.make("Joust-v5", num_envs=1, seed=seed, num_threads=1, stack_num=2, repeat_action_probability=0.25) as pool:
        hand = HandGame("joust", 1, 2, seed, 0.25)
        obs, info = pool.reset()
        np.testing.assert_array_equal(obs, hand.reset())
        seen_leave = seen_end = False
        after_end = 0
        for t in range(6000):
            a = rng.integers(18, size=2)
            obs, rew, term, trunc, info = pool.step(a)
            h_obs, h_rew, h_term, h_alive = hand.step(a)
            np.testing.assert_array_equal(obs, h_obs, err_msg=f"step {t}")
            np.testing.assert_array_equal(rew, h_rew, err_msg=f"step {t}")
            assert term.tolist() == h_term.tolist() and not trunc.any(), t
            assert info["players"]["alive"].tolist() == h_alive.tolist(), t
            np.testing.assert_array_equal(info["reward"], h_rew)
            seen_leave |= bool(term.any() and not term.all())
            if term.all():
                seen_end = True
                assert hand.done
            if seen_end:
                after_end += 1  # the game's last step, its reset (elapsed 0), then the next game's steps
                if after_end == 21:
                    break
        assert seen_leave and seen_end and after_end == 21, (seen_leave, seen_end, t)
        assert info["elapsed_step"].tolist() == [19, 19] and info["players"]["alive"].all()


def test_async_pool_equals_multi_agent_ale_by_hand_per_env_across_truncation():
    """Combat, 3 envs, batches of 2 (actions sent as dict rows, players in reverse order): each
    env's rows equal its own game by hand, whatever batch it comes back in; the time limit
    truncates every player and the next step resets."""
    seed, limit = 11, 40
    rng = np.random.default_rng(0)
    with envs.make("Combat-v5", num_envs=3, batch_size=2, seed=seed, num_threads=2, stack_num=2,
                   max_episode_steps=limit) as pool:  # fmt: skip
        hands = [HandGame("combat", 1, 2, seed + g, 0.0, max_episode_steps=limit) for g in range(3)]
        expected = {g: (h.reset(), np.zeros(2), np.zeros(2, bool), 0) for g, h in enumerate(hands)}
        pool.async_reset()
        truncations = 0
        for _ in range(150):
            obs, rew, term, trunc, info = pool.recv()
            ids = info["env_id"][::2]
            assert len(ids) == 2 and (info["env_id"].reshape(2, 2) == ids[:, None]).all()
            for k, g in enumerate(ids.tolist()):
                rows = slice(2 * k, 2 * k + 2)
                e_obs, e_rew, e_term, e_elapsed = expected[g]
                np.testing.assert_array_equal(obs[rows], e_obs, err_msg=f"env {g}")
                np.testing.assert_array_equal(rew[rows], e_rew, err_msg=f"env {g}")
                assert term[rows].tolist() == e_term.tolist() and info["elapsed_step"][rows].tolist() == [e_elapsed] * 2
                assert trunc[rows].tolist() == [e_elapsed == limit] * 2
                truncations += e_elapsed == limit
            actions = rng.integers(18, size=4)
            for k, g in enumerate(ids.tolist()):
                e_elapsed = 0 if hands[g].done else expected[g][3] + 1
                expected[g] = (*hands[g].step(actions[2 * k : 2 * k + 2])[:3], e_elapsed)
            pool.send({"action": actions[[1, 0, 3, 2]], "env_id": np.repeat(ids, 2), "players.id": np.array([1, 0, 1, 0])})
        pool.recv()
        assert truncations >= 3, truncations


def test_dm_format_has_players_lives_and_reward_fields():
    with envs.make_dm("MazeCraze-v5", num_envs=2, seed=0, num_threads=1, stack_num=1) as pool:
        ts = pool.reset()
        assert ts.step_type.tolist() == [dm_env.StepType.FIRST] * 4
        assert ts.observation.players.id.tolist() == [0, 1, 0, 1]
        assert ts.observation.players.env_id.tolist() == [0, 0, 1, 1]
        ts = pool.step(np.zeros(4, int))
        assert ts.step_type.tolist() == [dm_env.StepType.MID] * 4 and ts.observation.obs.shape == (4, 1, 84, 84)
        assert ts.observation.lives.shape == ts.observation.reward.shape == (4,)
        assert ts.reward.shape == ts.discount.shape == (4,)
        spec = pool.observation_spec()  # the spec has the TimeStep's fields
        assert spec._fields == ts.observation._fields == ("obs", "env_id", "elapsed_step", "lives", "reward", "terminated", "players")
        assert ts.observation.lives.dtype == spec.lives.dtype == np.int32
        assert ts.observation.reward.dtype == spec.reward.dtype == np.float32
        assert envs.make_spec("MazeCraze-v5", env_type="dm").observation_spec()._fields == spec._fields


def test_reward_clip_keeps_each_players_raw_reward_in_info():
    """Combat's first point comes within ~600 steps of NOOP-free random play; clipped is its sign."""
    rng = np.random.default_rng(1)
    with envs.make("Combat-v5", num_envs=1, seed=1, num_threads=1, stack_num=1, reward_clip=True) as pool:
        pool.reset()
        for _ in range(3000):
            _, rew, _, _, info = pool.step(rng.integers(18, size=2))
            if info["reward"].any():
                break
        assert info["reward"].any(), "no reward in 3000 steps"
        np.testing.assert_array_equal(rew, np.sign(info["reward"]))


@pytest.mark.parametrize(
    "task_id, kwargs, message",
    [
        ("Combat-v5", {"max_num_players": 1}, r"max_num_players=1: 'Combat-v5' has modes for \[2\] players"),
        ("Warlords-v5", {"max_num_players": 3}, r"max_num_players=3: 'Warlords-v5' has modes for \[2, 4\] players"),
        ("Combat-v5", {"mode": 0}, r"mode must be -1 \(the ROM.s default\) or one of the ROM.s modes for 2 players \[1, 2,"),
        ("Joust-v5", {"difficulty": 1}, r"difficulty must be -1 \(the ROM.s default\) or one of the ROM.s difficulties \[0\], got 1"),
        ("Combat-v5", {"episodic_life": True}, "episodic_life=True is for single-player games"),
        ("Combat-v5", {"img_height": 300}, r"img_height must be <= 256 and img_width <= 160 \(the screen\), got 300 x 84"),
        ("Combat-v5", {"frame_skip": 0}, "frame_skip must be an int >= 1, got 0"),
        ("Combat-v5", {"max_episode_steps": 2**30}, r"max_episode_steps \* frame_skip = 4294967296 frames exceeds ALE's limit"),
        ("Combat-v5", {"repeat_action_probability": 1.5}, r"repeat_action_probability must be in \[0, 1\], got 1.5"),
        ("Combat-v5", {"no_such_option": 1}, r"unknown kwarg\(s\) \['no_such_option'\] for task 'Combat-v5'"),
        ("Combat-v5", {"add_player_id": 1}, "add_player_id must be a bool, got 1"),
        ("Combat-v5", {"backend": "atari"}, "is a multi-player Atari game: ALE's vector env cannot run it"),
        ("Combat-v5", {"seed": 2**31 - 1, "num_envs": 2}, "seed=2147483647 is out of range for 'Combat-v5'"),
        ("ALE/Combat-v5", {}, r"'ALE/Combat-v5' cannot run: ROM 'combat' is a multi-player ROM .* Combat-v5 plays it"),
    ],
)
def test_bad_tasks_are_refused_by_name(task_id, kwargs, message):
    with pytest.raises(ValueError, match=message):
        envs.make_spec(task_id, **kwargs)


def test_bad_rows_actions_and_reset_options_are_refused_by_name():
    with envs.make("Warlords-v5", num_envs=2, batch_size=1, seed=0, num_threads=1, stack_num=1) as pool:
        pool.async_reset()
        g = int(pool.recv()[-1]["env_id"][0])
        with pytest.raises(ValueError, match=r"given twice: \[\(%d, 1\)\]" % g):
            pool.send({"action": np.zeros(4, int), "env_id": np.full(4, g), "players.id": np.array([0, 1, 1, 2])})
        with pytest.raises(ValueError, match=r"unknown player id\(s\) in \(env, player\) rows \[\(%d, 4\)\]" % g):
            pool.send({"action": np.zeros(4, int), "env_id": np.full(4, g), "players.id": np.array([0, 1, 2, 4])})
        with pytest.raises(ValueError, match=r"missing actions for \(env, player\) rows \[\(%d, 3\)\]" % g):
            pool.send({"action": np.zeros(3, int), "env_id": np.full(3, g), "players.id": np.arange(3)})
        with pytest.raises(ValueError, match=r"envs \[%d\] are not ready" % (1 - g)):  # an env in flight
            pool.send({"action": np.zeros(4, int), "env_id": np.full(4, 1 - g), "players.id": np.arange(4)})
        with pytest.raises(ValueError, match=r"action out of range for Discrete\(6\): \[6\]"):
            pool.send(np.array([0, 6, 0, 0]), np.array([g]))
        pool.send(np.zeros(4, int), np.array([g]))  # still usable
        assert pool.recv()[-1]["env_id"].tolist() in ([0] * 4, [1] * 4)
    with envs.make("Combat-v5", num_envs=1, seed=0, num_threads=1, stack_num=1) as pool:
        with pytest.raises(ValueError, match=r"reset options \['difficulty'\]: Combat-v5 runs on the process backend, "
                                             r"whose envs take no reset options"):  # fmt: skip
            pool.reset(options={"difficulty": 1})


def test_listed_here_and_without_the_extra_not_listed_and_make_names_the_extra():
    assert set(PLAYER_IDS) <= set(envs.list_all_envs())
    code = (
        "import sys\n"
        "sys.modules['multi_agent_ale_py'] = None  # as if not installed\n"
        "import envs\n"
        f"ids = set(envs.list_all_envs())\n"
        f"print(bool(ids & set({list(PLAYER_IDS)!r})), 'Pong-v5' in ids)\n"
        "try:\n"
        "    envs.make_spec('Combat-v5')\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    first, message = out.stdout.splitlines()
    assert first == "False True"  # not listed; the single-player games are
    assert "need the extra `atari-multiplayer`" in message and "multi-agent-ale-py" in message


def test_rgb_full_screens_and_reset_seed_replay():
    """RGB, channel-first, unresized (Combat's screen is 256 x 160), frame skip 1, no noop or FIRE
    start: each row is ALE's RGB screen by hand; reset(seed=s) replays a pool made with seed s."""
    kw = dict(num_envs=1, num_threads=1, gray_scale=False, stack_num=1, img_height=256, img_width=160, frame_skip=1,
              noop_max=0, use_fire_reset=False, full_action_space=True)  # fmt: skip
    ale = multi_agent_ale_py.ALEInterface()
    ale.setFloat("repeat_action_probability", 0.0)
    ale.setInt("random_seed", 4)
    ale.loadROM(rom_path("combat"))
    ale.setMode(1)
    ale.reset_game()
    actions = np.random.default_rng(4).integers(18, size=(30, 2))
    with envs.make("Combat-v5", seed=4, **kw) as pool:
        assert pool.observation_space.shape == (3, 256, 160) and pool.action_space.n == 18
        obs, _ = pool.reset()
        np.testing.assert_array_equal(obs, np.broadcast_to(ale.getScreenRGB().transpose(2, 0, 1), (2, 3, 256, 160)))
        first = [obs]
        for a in actions:
            obs, rew, *_ = pool.step(a)
            first.append(obs)
            np.testing.assert_array_equal(rew, ale.act(a.astype(np.intc)))
            np.testing.assert_array_equal(obs[1], ale.getScreenRGB().transpose(2, 0, 1))
    with envs.make("Combat-v5", seed=9, **kw) as pool:
        again = [pool.reset(seed=4)[0]] + [pool.step(a)[0] for a in actions]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
