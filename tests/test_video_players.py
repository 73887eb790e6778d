"""Videos of multi-player envs (sebulba/experiment/video.py): one episode of every player acting,
a frame per env step from the pool's render, each player's (or team's) return in the label;
`python -m experiments.evaluate RUN_DIR --video` on a real IPPO run; real decoded files."""

import json

import jax
import numpy as np
import pytest

import envs
from envs.registry import multi_agent_ale_available
from sebulba.agents.impala import Impala, ImpalaConfig
from sebulba.experiment import video
from tests.support.cli import run_experiment

pytest.importorskip("mpe2")
pytest.importorskip("imageio_ffmpeg")

SPREAD = "pettingzoo/mpe2/simple_spread_v3"


def decode(path):
    import imageio.v3 as iio

    return iio.imread(path)


def any_policy(env_id, **kwargs):
    agent = Impala(envs.make_spec(env_id, **kwargs), ImpalaConfig(torso="mlp", hidden_sizes=(8,)))
    return agent, agent.init_networks(jax.random.key(0))


def label_rows(frame):
    """The rows of the label's black box (its left edge, column 3)."""
    return int(np.count_nonzero(frame[:, 3].max(axis=-1) == 0))


def test_labels_name_each_player_or_team():
    assert video.labels(np.array([2.0])) == ["return 2.0"]
    assert video.labels(np.array([-1.25, -2.0, 0.0]), ("agent_0", "agent_1", "agent_2")) == [
        "agent_0: -1.2", "agent_1: -2.0", "agent_2: 0.0"]
    assert video.labels(np.array([1.0, -1.0]), ("0", "1")) == ["player 0: 1.0", "player 1: -1.0"]  # Atari's players
    assert video.labels(np.array([3.0, 4.0, 5.0, -9.0]), ("adversary_0", "adversary_1", "adversary_2", "agent_0")) == [
        "adversary x3: 4.0", "agent_0: -9.0"]  # teams (simple_tag): each one's mean
    white = np.full((100, 200, 3), 255, np.uint8)
    one, three = video.annotate(white, 5, np.array([1.0])), video.annotate(white, 5, np.zeros(3), ("a", "b", "c"))
    assert label_rows(three) > 3 * label_rows(one) > 0  # 'step 5', then a line per player


@pytest.mark.slow(seconds=5)
def test_video_of_a_pettingzoo_env(tmp_path):
    """simple_spread cut at 6 steps (max_cycles): the reset frame and one per step, 700 x 700 as
    MPE draws them, the world moving; the return is the players' mean."""
    agent, networks = any_policy(SPREAD)
    path = tmp_path / "spread.gif"
    ret, length = video.record(path, agent, networks, SPREAD, {"max_cycles": 6, "num_threads": 1}, seed=0)
    frames = decode(path)
    assert length == 6 and frames.shape == (7, 700, 700, 3), frames.shape
    assert not np.array_equal(frames[0, 100:], frames[-1, 100:])  # below the label: the agents moved
    assert label_rows(frames[0]) > 30  # four lines: the step, then each of the 3 players
    assert ret < 0  # spread's rewards are negative distances


@pytest.mark.skipif(not multi_agent_ale_available(), reason="needs the atari-multiplayer extra")
def test_video_of_a_multi_player_atari_game(tmp_path):
    agent, networks = any_policy("Combat-v5", max_episode_steps=6)
    path = tmp_path / "combat.mp4"
    ret, length = video.record(path, agent, networks, "Combat-v5", {"max_episode_steps": 6, "num_threads": 1}, seed=0)
    frames = decode(path)
    assert length == 6 and frames.shape == (7, 256, 160, 3), frames.shape  # Combat's raw screen
    assert frames[:, 60:].std() > 10 and not all(np.array_equal(frames[0], f) for f in frames[1:])


@pytest.mark.slow(seconds=30)
def test_evaluate_writes_a_video_of_an_ippo_run(tmp_path):
    """A real IPPO run (`experiments.ppo`'s multi-player preset, one update) evaluated with
    --video: eval.json has the players' episodes and the video's return and length; the MP4 has
    a frame per step of the episode plus the reset's."""
    logdir = tmp_path / "runs"
    out = run_experiment("experiments.ppo", f"--env={SPREAD}", "--total_env_steps=2048", f"--logdir={logdir}",
                         "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    (run,) = logdir.iterdir()
    path = tmp_path / "spread.mp4"
    out = run_experiment("experiments.evaluate", str(run), "--episodes=3", "--env_kwargs=max_cycles=10",
                         f"--video={path}")
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((run / "eval.json").read_text())
    assert report["episodes"] == 3 and report["video_length"] == 10 and report["video"] == str(path)
    assert out.stdout.strip().splitlines()[-1] == f"video of one episode (return {report['video_return']:.1f}, 10 steps): {path}"
    frames = decode(path)
    assert frames.shape == (11, 700, 700, 3) and not np.array_equal(frames[0, 100:], frames[-1, 100:])
