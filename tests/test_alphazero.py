"""AlphaZero in the Anakin loop (sebulba/agents/alphazero): its config's rules, what is refused
(envs without turns, the Sebulba loop, a policy asked to act without the env's states), the replay
of positions its self-play fills, no retrace once warm on one and four learner devices, and the
connect-four bar at a small budget with the evaluations against random and pure-MCTS players and
an exact resume (the full bars, seeds 0-2: benchmarks/bench_alphazero.py)."""

import json
import signal
import subprocess
import sys

import jax
import numpy as np
import pytest

pytest.importorskip("pgx", reason="the pgx extra is not installed: pip install -e '.[pgx]'")
pytest.importorskip("mctx", reason="the planning extra is not installed: pip install -e '.[planning]'")

import envs  # noqa: E402
import sebulba  # noqa: E402
from sebulba.agents.alphazero import AlphaZero, AlphaZeroConfig  # noqa: E402
from sebulba.experiment.trained import Policy  # noqa: E402
from sebulba.loop.anakin import AnakinLoop  # noqa: E402
from sebulba.loop.state_pool import StatePool  # noqa: E402
from tests.support.cli import ROOT, child_env, last_metrics, run_experiment  # noqa: E402
from tests.test_anakin import compiles  # noqa: E402, F401 - the fixture
from tests.test_off_policy_resume import TIMING  # noqa: E402
from tests.test_resume_drills import WAIT_S, final_row, wait_for_checkpoint  # noqa: E402

GAME = "pgx/connect_four"
SPEC = envs.make_spec(GAME)
SMALL = AlphaZeroConfig(hidden_sizes=(16,), num_simulations=4, batch_size=16, optims_per_cycle=2, replay_capacity=1024,
                        min_replay_size=16)


@pytest.mark.parametrize("kwargs, match", [
    ({"num_simulations": 0}, "num_simulations must be >= 1"),
    ({"eval_simulations": 0}, "eval_simulations must be >= 1 or None"),
    ({"min_replay_size": 10, "replay_capacity": 5}, "min_replay_size must be <= replay_capacity=5"),
    ({"batch_size": 0}, "batch_size must be > 0"),
    ({"value_loss_weight": -1.0}, "value_loss_weight must be >= 0"),
])
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AlphaZeroConfig(**kwargs)
    with pytest.raises(TypeError):
        AlphaZeroConfig(num_simualtions=4)  # a misspelled key is an error


def test_what_it_cannot_plan_with_is_refused():
    with pytest.raises(ValueError, match="CartPole-v1 is not a turn-based JAX env"):
        AlphaZero(envs.make_spec("CartPole-v1"), SMALL)
    with pytest.raises(ValueError, match="AlphaZero plans with the env's true model .* in the Anakin loop"):
        sebulba.GymnasiumLoop(AlphaZero(SPEC, SMALL), sebulba.LoopConfig(env_id=GAME, loop="sebulba", num_envs=2))
    with pytest.raises(ValueError, match="replay_capacity=1,024 positions cannot hold a cycle's 2,048"):
        AnakinLoop(AlphaZero(SPEC, SMALL), sebulba.LoopConfig(env_id=GAME, num_envs=16, steps_per_cycle=64))


def test_the_pure_mcts_opponent_needs_a_jax_game():
    pytest.importorskip("pettingzoo")
    from sebulba.loop.evaluator import Evaluator

    with pytest.raises(ValueError, match="pettingzoo/classic/connect_four_v3 is not a turn-based JAX env"):
        Evaluator(AlphaZero(SPEC, SMALL), "pettingzoo/classic/connect_four_v3", opponent="mcts")


def test_a_run_on_an_env_without_turns_is_refused_in_one_line(tmp_path):
    out = run_experiment("experiments.alphazero", "--env=CartPole-v1", f"--logdir={tmp_path}")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("error: CartPole-v1 is not a turn-based JAX env"), out.stderr
    assert not any(tmp_path.iterdir())  # a refused run leaves no directory


@pytest.mark.slow(seconds=15)
@pytest.mark.parametrize("devices", [1, 4])
def test_self_play_fills_the_replay_with_no_retrace_once_warm(devices, compiles):
    """Each mover's position reaches the replay with the search's policy (a distribution over
    its legal moves) and its game's outcome (+1, 0 or -1), the learner learns, and after the first
    call the program never compiles again."""
    cfg = sebulba.LoopConfig(env_id=GAME, num_envs=8, steps_per_cycle=16, learner_devices=tuple(range(devices)),
                             log_every_s=1e3)
    with AnakinLoop(AlphaZero(SPEC, SMALL), cfg, updates_per_call=2) as loop:
        for updates in (2, 2, 2, 1):
            metrics, result = loop.call(updates)
            assert compiles() == (1 if loop.version == 2 else 0)
            assert all(np.isfinite(v) for v in metrics.values()), metrics
        replay = loop.carry.experience.replay
        valid = np.asarray(replay.valid)
        policy = np.asarray(replay.items["policy"])[valid]
        legal = np.asarray(replay.items["obs"]["action_mask"])[valid] > 0
        value = np.asarray(replay.items["value"])[valid]
    assert valid.sum() >= 8 * devices and metrics["learning"] == 1.0
    np.testing.assert_allclose(policy.sum(-1), 1.0, rtol=1e-5)
    assert (policy[~legal] == 0).all() and legal.any(-1).all()
    assert set(np.unique(value).tolist()) <= {-1.0, 0.0, 1.0} and (value != 0).any()


def test_its_policy_needs_the_envs_states(tmp_path):
    """load_policy's act plans from the states a StatePool (or a JaxEnv's lanes) holds, and says so
    when they are missing."""
    agent = AlphaZero(SPEC, SMALL)
    policy = Policy(agent, agent.init_networks(jax.random.key(0)))
    pool = StatePool(GAME, {}, num_envs=3, seed=0)
    obs, _ = pool.reset()
    with pytest.raises(ValueError, match="AlphaZero plans with the env's true model: act\\(obs, env_state=...\\)"):
        policy.act(obs)
    action, _ = policy.act(obs, env_state=pool.state)
    assert action.shape == (6,) and (action[0::2] == action[1::2]).all()  # a game's rows: its mover's move


def test_a_video_of_a_self_play_game(tmp_path):
    """One tic-tac-toe game of an untrained network's search, recorded as a GIF and decoded: the
    reset frame and one per move, the empty board first, red and yellow stones by the end."""
    pytest.importorskip("imageio_ffmpeg")
    import imageio.v3 as iio

    from envs.jax.pgx import CELL, COLORS
    from sebulba.experiment import video

    spec = envs.make_spec("pgx/tic_tac_toe")
    agent = AlphaZero(spec, SMALL)
    path = tmp_path / "game.gif"
    ret, length = video.record(path, agent, agent.init_networks(jax.random.key(0)), "pgx/tic_tac_toe", {}, seed=0)
    frames = iio.imread(path)
    assert 5 <= length <= 9 and frames.shape == (length + 1, 3 * CELL, 3 * CELL, 3), frames.shape

    def stones(frame, color):  # cells below the label (rows 1-2) whose centre has the color
        return sum(np.abs(frame[i * CELL + CELL // 2, j * CELL + CELL // 2].astype(int) - color).max() <= 12
                   for i in (1, 2) for j in range(3))

    assert stones(frames[0], COLORS[0]) == 6  # the empty board
    assert stones(frames[-1], COLORS[0]) < 6 and stones(frames[-1], COLORS[1]) + stones(frames[-1], COLORS[2]) >= 1


@pytest.mark.slow(seconds=90)
@pytest.mark.timeout(900)
def test_connect_four_bar_at_a_small_budget_and_an_exact_resume(tmp_path):
    """The preset on pgx/connect_four (seed 0) cut at 200k env steps: its greedy search beats a
    random player in >= 90% of 100 games as either seat (measured 100% and 96%, 2026-11-30; the
    full bars are the benchmark's), and plays a 50-simulation pure MCTS; the same run stopped by
    SIGTERM after a checkpoint and resumed ends in the straight run's last metrics row."""
    args = ("--seed=0", "--total_env_steps=200000", "--noprogress")
    out = run_experiment("experiments.alphazero", *args, f"--logdir={tmp_path / 'straight'}")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path / "straight")
    out = run_experiment("experiments.evaluate", str(run_dir), "--opponent=random", "--episodes=100",
                         "--num_envs=50")
    assert out.returncode == 0, out.stderr[-3000:]
    record = json.loads((run_dir / "eval.json").read_text())
    rates = {team: m["win_rate"] for team, m in record["vs_random"].items()}
    assert min(rates.values()) >= 0.9, rates
    out = run_experiment("experiments.evaluate", str(run_dir), "--opponent=mcts", "--mcts_simulations=50",
                         "--episodes=10", "--num_envs=10")
    assert out.returncode == 0, out.stderr[-3000:]
    record = json.loads((run_dir / "eval.json").read_text())
    assert record["mcts_simulations"] == 50 and set(record["vs_mcts"]) == {"player_0", "player_1"}
    for m in record["vs_mcts"].values():
        assert m["eval_episodes"] == 10 and 0.0 <= m["win_rate"] <= 1.0

    logdir = tmp_path / "stopped"
    proc = subprocess.Popen([sys.executable, "-m", "experiments.alphazero", *args, "--checkpoint_every=10",
                             f"--logdir={logdir}"], cwd=ROOT, env=child_env(XLA_FLAGS=""), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stopped = wait_for_checkpoint(proc, logdir, at_least=10)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 143, stderr[-3000:]
    assert int(final_row(stopped)["learner_steps"]) < int(last["learner_steps"])
    out = run_experiment("experiments.alphazero", "--resume", str(stopped), "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    final = final_row(stopped)
    differ = {k: (final[k], last[k]) for k in last if k not in TIMING and final[k] != last[k]}
    assert not differ, differ
