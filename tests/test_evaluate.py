"""Using what was trained: evaluation episodes, `python -m experiments.evaluate RUN_DIR`, and
`sebulba.load_policy` for IMPALA, PPO and R2D2, on real runs and real orbax checkpoints."""

import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents.impala import Impala, ImpalaConfig
from sebulba.agents.ppo import PPO
from sebulba.agents.r2d2 import R2D2
from sebulba.experiment.trained import build_agent, open_run, restore_networks
from sebulba.loop.evaluator import Evaluator
from tests.support.cli import run_experiment
from tests.support.learner_runs import assert_policy_acts_as_evaluation
from tests.support.mujoco_models import cheap_hopper

RUNS = {  # a short real run of each agent, written with its checkpoint
    "impala": ["--total_env_steps=3000"],
    "ppo": ["--total_env_steps=2048"],
    "r2d2": ["--total_env_steps=3000", "--min_replay_size=10"],
}


# The tests of the `runs` fixture share a worker (built once, ~20 s): slow, whatever their own time.
TRAINED = pytest.mark.xdist_group("trained_runs")
TRAINED_SLOW = pytest.mark.slow(seconds=20)


@pytest.fixture(scope="session")  # session: a module fixture is rebuilt whenever xdist interleaves another module's test
def runs(tmp_path_factory):
    out = {}
    for agent, args in RUNS.items():
        logdir = tmp_path_factory.mktemp(agent)
        done = run_experiment(f"experiments.{agent}", *args, f"--logdir={logdir}", "--noprogress")
        assert done.returncode == 0, done.stderr[-3000:]
        (out[agent],) = logdir.iterdir()
    return out


@pytest.mark.slow(seconds=23)
@TRAINED
@pytest.mark.parametrize("agent", sorted(RUNS))
def test_load_policy_acts_as_the_evaluation_policy_in_the_loop(runs, agent):
    """Same inputs, same actions: the loaded policy against the agent's evaluation_step with the
    networks of the checkpoint, over a few steps of a real pool (R2D2's recurrent state carried)."""
    policy = sebulba.load_policy(runs[agent])
    run, record = open_run(runs[agent])
    rebuilt = build_agent(record)
    assert type(rebuilt) is {"impala": Impala, "ppo": PPO, "r2d2": R2D2}[agent]
    _, networks = restore_networks(run, rebuilt)
    assert_policy_acts_as_evaluation(policy, rebuilt, networks)


@TRAINED_SLOW
@TRAINED
def test_evaluate_cli_writes_eval_json(runs):
    out = run_experiment("experiments.evaluate", str(runs["ppo"]), "--episodes=6", "--num_envs=4")
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((runs["ppo"] / "eval.json").read_text())
    assert report["episodes"] == 6 and len(report["returns"]) == 6 and len(report["lengths"]) == 6
    assert report["eval_return_mean"] == pytest.approx(np.mean(report["returns"]))
    assert report["returns"] == report["lengths"]  # CartPole: +1 per step
    assert "return" in out.stdout and "eval.json" in out.stdout


@TRAINED_SLOW
@TRAINED
def test_evaluation_episodes_end_at_truncation_and_are_shared_by_the_envs(runs):
    """CartPole cut at 15 steps: every episode counts, truncated, and 7 episodes over 3 envs are
    2 + 2 + 3 (SB3's split, not the first 7 to finish)."""
    run, record = open_run(runs["impala"])
    agent = build_agent(record)
    _, networks = restore_networks(run, agent)
    with Evaluator(agent, "CartPole-v1", {"max_episode_steps": 15}, num_envs=3, seed=2) as ev:
        result = ev.run(networks, 7, jax.random.key(0))
    assert len(result.returns) == 7 and (result.lengths <= 15).all()
    s = result.summary()
    assert s["eval_episodes"] == 7 and s["eval_return_min"] <= s["eval_return_mean"] <= s["eval_return_max"]


@TRAINED_SLOW
@TRAINED
def test_a_random_opponent_for_a_single_player_run_is_one_line(runs):
    """`--opponent random` needs players to play against: on a CartPole run, one line, exit 2."""
    out = run_experiment("experiments.evaluate", str(runs["ppo"]), "--opponent=random", "--episodes=2")
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-2000:]
    assert lines[0].startswith("error: opponent='random' needs a multi-player env (the trained team against random "
                               "players); 'CartPole-v1' has one player")


@TRAINED_SLOW
@TRAINED
def test_a_bad_run_directory_is_named(runs, tmp_path):
    """Each mistake raises before anything runs, naming the problem and the path."""
    with pytest.raises(FileNotFoundError, match=f"run directory {tmp_path / 'nope'} does not exist"):
        open_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'empty'} is not a run directory"):
        open_run(tmp_path / "empty")
    target = tmp_path / "run"
    shutil.copytree(runs["ppo"], target)
    run, record = open_run(target)
    agent = build_agent(record, run=run)
    with pytest.raises(FileNotFoundError, match=f"{target} has no checkpoint at learner step 5; it has"):
        restore_networks(run, agent, 5)
    other = json.loads(json.dumps(record))
    other["agent"]["class"] = "my_lab.agents.FancyAgent"  # e.g. a user's agent not importable here
    with pytest.raises(ValueError, match=f"{target}: the run's agent my_lab.agents.FancyAgent cannot be imported here"):
        build_agent(other, run=run)
    record["agent"]["config"]["hidden_sizes"] = [32]  # config and checkpoint disagree
    with pytest.raises(ValueError, match=f"checkpoint .* of {target} does not match the run's agent"):
        restore_networks(run, build_agent(record, run=run))
    shutil.rmtree(target / "checkpoints")
    with pytest.raises(FileNotFoundError, match=f"{target} has no complete checkpoint"):
        restore_networks(run, agent)


@TRAINED_SLOW
@TRAINED
@pytest.mark.parametrize("case", ["mismatch", "video-dir", "idle-envs", "no-memory"])
def test_a_bad_run_directory_is_one_line_on_the_cli(runs, tmp_path, case):
    target = tmp_path / "run"
    shutil.copytree(runs["ppo"], target)
    if case == "mismatch":
        record = json.loads((target / "config.json").read_text())
        record["agent"]["config"]["hidden_sizes"] = [32]
        (target / "config.json").write_text(json.dumps(record))
        extra, names, named = [], "does not match the run's agent", str(target)
    elif case == "video-dir":
        extra, names, named = [f"--video={tmp_path / 'nowhere' / 'a.mp4'}"], "does not exist", str(tmp_path / "nowhere")
    elif case == "idle-envs":
        extra, names, named = ["--episodes=4", "--num_envs=8"], "--num_envs 8 is more than --episodes 4", "no episode"
    else:  # the pool and the episodes' records could not fit: refused before the pool is built
        extra, names, named = ["--episodes=1e9", "--num_envs=1e8"], "this evaluation needs at least", "--episodes"
    out = run_experiment("experiments.evaluate", str(target), *extra)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and names in lines[0] and named in lines[0], out.stderr[-2000:]


@pytest.mark.slow(seconds=15)
def test_evaluation_policies_by_hand():
    """IMPALA and PPO act greedily (the Gaussian's mean, clipped); R2D2 with epsilon 0.001."""
    from sebulba.agents.ppo import PPOConfig

    cart, pend = envs.make_spec("CartPole-v1"), envs.make_spec("Pendulum-v1")
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(64, 4)), jnp.float32)
    es = sebulba.EnvStep(obs, jnp.zeros(64), jnp.zeros(64, bool), jnp.zeros(64, bool), jnp.ones(64, bool))
    agent = Impala(cart)
    nets = agent.init_networks(jax.random.key(0))
    logits, _, _ = agent.net.apply(nets, obs)
    np.testing.assert_array_equal(agent.evaluation_step(nets, agent.init_step_state(nets, 64, jax.random.key(1)), es)[0], jnp.argmax(logits, -1))
    agent = PPO(pend, PPOConfig(log_std_init=1.0))
    nets = agent.init_networks(jax.random.key(0))
    nets["params"] = jax.tree.map(lambda x: x * 50.0, nets["params"])  # means well outside +-2
    pes = es._replace(obs=obs[:, :3])
    policy, _, _ = agent.net.apply(nets["params"], pes.obs)
    action, _ = agent.evaluation_step(nets, agent.init_step_state(nets, 64, jax.random.key(1)), pes)
    np.testing.assert_array_equal(action, np.clip(policy.mean, -2.0, 2.0))
    r2d2 = R2D2(cart)
    nets = r2d2.init_networks(jax.random.key(0))
    state = r2d2.init_step_state(nets, 64, jax.random.key(1))
    assert float(state.epsilon.max()) > 0.3  # Ape-X's behaviour epsilons ...
    _, after = r2d2.evaluation_step(nets, state, es)
    np.testing.assert_array_equal(after.epsilon, state.epsilon)  # ... kept for the actors ...
    from sebulba.agents.r2d2 import R2D2Config

    greedy = R2D2(cart, R2D2Config(eval_epsilon=0.0))
    same = lambda policy: np.mean([  # noqa: E731
        np.mean(np.asarray(policy(nets, state._replace(key=jax.random.key(k)), es)[0])
                == np.asarray(greedy.evaluation_step(nets, state, es)[0])) for k in range(20)])
    assert same(r2d2.evaluation_step) > 0.995 and same(r2d2.step) < 0.99  # ... and 0.001 used instead


EVAL_ARGS = ["--total_env_steps=30000", "--eval_every=10000", "--eval_episodes=4", "--noprogress"]


@pytest.fixture(scope="module")
def evaluated_runs(tmp_path_factory):
    """Two identical sync runs of `python -m experiments.ppo` with evaluation every 10k env steps."""
    out = []
    for i in range(2):
        logdir = tmp_path_factory.mktemp(f"eval{i}")
        done = run_experiment("experiments.ppo", *EVAL_ARGS, f"--logdir={logdir}", learning_curve=True)
        assert done.returncode == 0, done.stderr[-3000:]
        (run_dir,) = logdir.iterdir()
        out.append(run_dir)
    return out


def eval_rows(run_dir):
    import csv

    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    return [{k: r[k] for k in ("env_steps", "eval_env_steps", "eval_return_mean", "eval_return_std",
                               "eval_length_mean")} for r in rows if r["eval_return_mean"]]


@pytest.mark.slow(seconds=18)
@pytest.mark.xdist_group("evaluated_runs")
def test_evaluation_during_training_is_logged_where_it_belongs_and_reproducible(evaluated_runs):
    from tests.test_experiment_outputs import scalars

    rows = eval_rows(evaluated_runs[0])
    steps = [int(r["eval_env_steps"]) for r in rows]
    # due at 10k, 20k, 30k: each is the first cycle boundary past it (8 envs x 128 steps = 1,024)
    assert steps == [10240, 20480, 30720], rows
    assert all(int(r["env_steps"]) >= int(r["eval_env_steps"]) for r in rows)
    # sync mode: the same evaluations, value for value (the row that reports one comes when its
    # thread is done: that env step is timing, not a result)
    values = lambda rows: [{k: v for k, v in r.items() if k != "env_steps"} for r in rows]  # noqa: E731
    assert values(rows) == values(eval_rows(evaluated_runs[1]))
    tb = scalars(evaluated_runs[0])
    assert [s for s, _ in tb["eval_return_mean"]] == steps  # TensorBoard: at the step they belong to
    assert "eval_s" in tb and (evaluated_runs[0] / "learning_curve.png").stat().st_size > 0


# ---------------------------------------------------------------- videos
def decode(path):
    import imageio.v3 as iio

    return iio.imread(path)


@pytest.mark.slow(seconds=5)
@TRAINED
def test_evaluate_writes_a_video_of_one_episode(runs, tmp_path):
    """MP4 through the CLI (episodes cut at 60 steps to keep it short), with nothing on stderr (no
    JAX fork warning from starting ffmpeg, no ALSA errors from pygame's audio); GIF through `record`."""
    from sebulba.experiment import video

    path = tmp_path / "episode.mp4"
    out = run_experiment("experiments.evaluate", str(runs["ppo"]), "--episodes=2", "--env_kwargs=max_episode_steps=60",
                         f"--video={path}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr.strip() == "", out.stderr[-3000:]
    report = json.loads((runs["ppo"] / "eval.json").read_text())
    frames = decode(path)
    assert frames.shape == (report["video_length"] + 1, 400, 600, 3)  # the reset frame, then one per step
    assert frames[:, 4:12, 4:40].mean() < frames[:, 100:, :].mean()  # the step/return label's dark box
    run, record = open_run(runs["ppo"])
    agent = build_agent(record)
    _, networks = restore_networks(run, agent)
    ret, length = video.record(tmp_path / "episode.gif", agent, networks, "CartPole-v1", {"max_episode_steps": 40}, 0)
    assert decode(tmp_path / "episode.gif").shape == (length + 1, 400, 600, 3) and ret == length


@pytest.mark.slow(seconds=7)
def test_video_frames_for_atari_and_worker_process_envs(tmp_path):
    """Atari: ALE's RGB screens; a Gymnasium env in worker processes: drawn by that env made here
    (MuJoCo's too, with the OpenGL backend chosen for a headless host)."""
    from sebulba.experiment import video

    for env_id, kwargs, shape in [("Pong-v5", {"max_episode_steps": 12}, (210, 160, 3)),
                                  ("Pendulum-v1", {"backend": "process", "max_episode_steps": 9}, (500, 500, 3)),
                                  ("Hopper-v5", {"backend": "process", "max_episode_steps": 9, "width": 64, "height": 48,
                                                 "xml_file": cheap_hopper(tmp_path)}, (48, 64, 3))]:
        agent = Impala(envs.make_spec(env_id, **kwargs), ImpalaConfig(torso="mlp", hidden_sizes=(8,)))  # any policy
        networks = agent.init_networks(jax.random.key(0))
        path = tmp_path / f"{env_id}.mp4"
        ret, length = video.record(path, agent, networks, env_id, kwargs, seed=0)
        frames = decode(path)
        assert frames.shape == (length + 1, *shape) and length > 0, (env_id, frames.shape, length)


@pytest.fixture(scope="session")
def hopper_run(tmp_path_factory):
    """One cycle of `python -m experiments.ppo --env Hopper-v5` (the native MuJoCo pool), checkpointed."""
    logdir = tmp_path_factory.mktemp("hopper")
    done = run_experiment("experiments.ppo", "--env=Hopper-v5", "--total_env_steps=2048", f"--logdir={logdir}",
                          "--noprogress")
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = logdir.iterdir()
    return run_dir


HOPPER = pytest.mark.xdist_group("hopper_run")
HOPPER_SLOW = pytest.mark.slow(seconds=27)  # the first of them builds the fixture (~10 s)


def long_episode(tmp_path):
    """--env_kwargs of an episode that neither falls nor ends before 120 steps (a video with a
    progress line at 100 frames), on a hopper cheap to draw without a GPU (the same physics)."""
    return f"--env_kwargs=terminate_when_unhealthy=False,max_episode_steps=120,xml_file='{cheap_hopper(tmp_path)}'"


@HOPPER_SLOW
@HOPPER
def test_evaluate_prints_and_writes_the_evaluation_then_records_a_mujoco_video(hopper_run, tmp_path):
    """The native MuJoCo pool renders itself, headless; the summary and eval.json come before the
    video, which shows its progress."""
    run = tmp_path / "run"
    shutil.copytree(hopper_run, run)
    path = tmp_path / "hopper.mp4"
    out = run_experiment("experiments.evaluate", str(run), "--episodes=2", long_episode(tmp_path), f"--video={path}")
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((run / "eval.json").read_text())
    summary, video_line = out.stdout.strip().splitlines()
    assert summary.startswith("Hopper-v5, checkpoint") and "eval.json" in summary
    assert video_line == f"video of one episode (return {report['video_return']:.1f}, 120 steps): {path}"
    assert "video: 100 frames of at most 121, return" in out.stderr, out.stderr[-2000:]
    assert report["episodes"] == 2 and report["video_length"] == 120 and report["video"] == str(path)
    frames = decode(path)
    assert frames.shape == (121, 480, 480, 3) and frames.std() > 10


@HOPPER_SLOW
@HOPPER
def test_a_video_that_fails_keeps_the_evaluation(hopper_run, tmp_path):
    """No OpenGL backend that works (MUJOCO_GL=osmesa under PyOpenGL's EGL platform): the
    evaluation is printed and written, then one line says why there is no video; exit status 1."""
    run = tmp_path / "run"
    shutil.copytree(hopper_run, run)
    path = tmp_path / "hopper.gif"
    out = run_experiment("experiments.evaluate", str(run), "--episodes=2", long_episode(tmp_path), f"--video={path}",
                         env={"MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "egl"})
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 1 and len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith("error: no video written (MuJoCo cannot render with MUJOCO_GL=osmesa (")
    assert f"the evaluation is in {run / 'eval.json'}" in lines[0]
    assert out.stdout.startswith("Hopper-v5, checkpoint") and not path.exists()
    report = json.loads((run / "eval.json").read_text())
    assert report["episodes"] == 2 and "video" not in report


def test_video_input_is_checked_before_anything_runs(tmp_path, monkeypatch):
    import sys

    from sebulba.experiment.video import check_video_path

    with pytest.raises(ValueError, match="must end in .mp4 or .gif"):
        check_video_path(tmp_path / "x.avi")
    with pytest.raises(ValueError, match=f"the directory {tmp_path / 'missing'} does not exist"):
        check_video_path(tmp_path / "missing" / "x.mp4")
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    with pytest.raises(ImportError, match=r"imageio_ffmpeg is missing\): pip install -e '.\[video\]'"):
        check_video_path(tmp_path / "x.mp4")


@pytest.mark.slow(seconds=7)
def test_evaluation_in_async_mode_never_stalls_the_run(tmp_path):
    """Async mode: evaluations run beside the actor threads; every due evaluation that started is
    reported, the last one awaited at the end of the budget."""
    out = run_experiment("experiments.ppo", "--async_mode", "--total_env_steps=30000", "--eval_every=10000",
                         "--eval_episodes=2", "--noprogress", f"--logdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = tmp_path.iterdir()
    rows = eval_rows(run_dir)
    steps = [int(r["eval_env_steps"]) for r in rows]
    assert steps and steps == sorted(steps) and steps[-1] >= 30000, rows
    assert all(float(r["eval_length_mean"]) > 0 for r in rows)


@pytest.mark.slow(seconds=6)
def test_nogreedy_plays_the_behaviour_policy():
    """--nogreedy (Evaluator and Policy with greedy=False) samples as the actors do: IMPALA's
    untrained policy then varies its action for one observation, the greedy one never does."""
    from sebulba.experiment.trained import Policy

    agent = Impala(envs.make_spec("CartPole-v1"))
    networks = agent.init_networks(jax.random.key(0))
    obs = np.zeros((64, 4), np.float32)
    sampled = Policy(agent, networks, greedy=False).act(obs)[0]
    greedy = Policy(agent, networks, greedy=True).act(obs)[0]
    assert len(set(sampled.tolist())) == 2 and len(set(greedy.tolist())) == 1
    with Evaluator(agent, "CartPole-v1", num_envs=2, seed=0, greedy=False) as ev:
        assert len(ev.run(networks, 2, jax.random.key(0)).returns) == 2


def test_evaluate_of_a_directory_that_is_not_a_run_is_one_line(tmp_path):
    """The entry point's own path, without a trained run: a user's mistake is one line, exit 2."""
    out = run_experiment("experiments.evaluate", str(tmp_path / "nope"))
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.strip().splitlines() == [f"error: run directory {tmp_path / 'nope'} does not exist (--debug shows "
                                               "the traceback)"]
