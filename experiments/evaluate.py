"""Evaluate a trained run: its agent and latest checkpoint, K complete episodes with the agent's
evaluation policy on envs of its own.

    python -m experiments.evaluate runs/<run dir>                       # 10 episodes, greedy
    python -m experiments.evaluate runs/<run dir> --episodes 100 --num_envs 16 --checkpoint 196
    python -m experiments.evaluate runs/<run dir> --nogreedy --env_kwargs repeat_action_probability=0.25
    python -m experiments.evaluate runs/<run dir> --video cartpole.mp4    # or .gif (pip install -e ".[video]")
    python -m experiments.evaluate runs/<a tictactoe self-play run> --opponent random --episodes 100
    python -m experiments.evaluate runs/<an AlphaZero connect-four run> --opponent mcts --mcts_simulations 200

Prints the mean, standard deviation, min and max return and the episode lengths, and writes them
to RUN_DIR/eval.json; then records the video, if asked, with a progress line (a video that fails is
one line, exit status 1, and leaves the evaluation written). A multi-player run's evaluation adds
each player's and each team's mean return and each team's win rate (sebulba.loop.opponents: the
team whose return is strictly the highest wins; ties are draws). `--opponent random` plays each
team in turn, `--episodes` episodes each, against players acting uniformly at random over their
legal moves, and reports the trained team's win rate in each (eval.json's "vs_random");
`--opponent mcts` does the same against a pure Monte-Carlo tree search of `--mcts_simulations`
simulations per move (a turn-based JAX game: pgx's; eval.json's "vs_mcts").
"""

from __future__ import annotations

import dataclasses
import json
import sys

import jax
import numpy as np
from absl import flags

from sebulba.experiment import cli
from sebulba.experiment.env_kwargs import parse_env_kwargs
from sebulba.experiment.errors import user_input
from sebulba.experiment.flags import SHARED_FLAGS, Flag, define_flags
from sebulba.experiment.trained import build_agent, open_run, restore_networks, run_replicas
from sebulba.experiment.video import check_video_path
from sebulba.experiment.video import record as record_video
from sebulba.loop.evaluator import EvalResult, Evaluator
from sebulba.loop.memory import check_evaluation_fits
from sebulba.loop.opponents import OPPONENTS

# Its own flags, and four of the training entry points' (their type, default and bound) in an
# evaluation's words.
define_flags({
    "checkpoint": Flag(int, "Learner step of the checkpoint to evaluate (default: the latest)."),
    "replica": Flag(int, "Of a run trained with --num_seeds N: which replica (0..N-1; replica r trained with seed "
                    "--seed + r).", lower_bound=0, default=0),
    "episodes": Flag(int, "Complete episodes to play.", lower_bound=1, default=10),
    "num_envs": dataclasses.replace(SHARED_FLAGS["num_envs"], help="Envs playing them side by side, at most --episodes "
                                    "(default: min(episodes, 8))."),
    "seed": dataclasses.replace(SHARED_FLAGS["seed"], help="Seed of the evaluation envs and the policy's RNG."),
    "env_kwargs": dataclasses.replace(SHARED_FLAGS["env_kwargs"], help="The task's kwargs over the run's own, "
                                      "comma-separated key=value with Python literals, e.g. "
                                      "repeat_action_probability=0.25."),
    "greedy": Flag(bool, "The agent's evaluation policy (greedy; R2D2: epsilon 0.001); --nogreedy: the behaviour "
                   "policy it trained with.", default=True),
    "video": Flag(str, "Also write a video of one episode here (MP4, or GIF when the name ends in .gif), frames "
                  "annotated with the step and the return so far (each player's in a multi-player env); needs pip "
                  "install -e '.[video]'."),
    "opponent": Flag(str, "Multi-player runs: who the trained policy plays: self (every player acts with it), random "
                     "(each team in turn acts with it, the other players uniformly at random over their legal "
                     "actions; --episodes episodes per team) or mcts (the same against a pure Monte-Carlo tree "
                     "search; a turn-based JAX game). A --video stays self-play.", default="self"),
    "mcts_simulations": Flag(int, "--opponent mcts: the pure-MCTS player's simulations per move.", lower_bound=1,
                             default=200),
    "video_fps": Flag(int, "Frames per second of the video.", lower_bound=1, default=30),
    "debug": dataclasses.replace(SHARED_FLAGS["debug"], help="Show the whole traceback of a mistake in the input."),
})
FLAGS = flags.FLAGS


def main(argv: list[str]) -> None:
    cli.quiet_terminal()  # orbax's INFO lines stay off the terminal
    with user_input():
        if len(argv) != 2:
            raise ValueError("give one run directory: python -m experiments.evaluate RUN_DIR [flags]")
        if FLAGS.opponent not in OPPONENTS:  # before anything is loaded
            raise ValueError(f"--opponent must be one of {', '.join(OPPONENTS)}, got {FLAGS.opponent!r}")
        video = None if FLAGS.video is None else check_video_path(FLAGS.video)  # before anything runs
        run, record = open_run(argv[1])
        agent = build_agent(record, parse_env_kwargs(FLAGS.env_kwargs), run)
        step, networks = restore_networks(run, agent, FLAGS.checkpoint, FLAGS.replica)
        num_envs = FLAGS.num_envs or min(FLAGS.episodes, 8)
        if num_envs > FLAGS.episodes:
            raise ValueError(f"--num_envs {num_envs:,} is more than --episodes {FLAGS.episodes:,}: the envs beyond "
                             "them would play no episode")
        check_evaluation_fits(agent.env_spec, num_envs, FLAGS.episodes)
        loop = record["loop"]
        env_kwargs = {**loop.get("env_kwargs", {}), **parse_env_kwargs(FLAGS.env_kwargs)}
        evaluator = Evaluator(agent, loop["env_id"], env_kwargs, num_envs, FLAGS.seed, FLAGS.greedy,
                              opponent=FLAGS.opponent, mcts_simulations=FLAGS.mcts_simulations)
    out = {"run_dir": str(run.path), "checkpoint": step, "replica": FLAGS.replica, "env_id": loop["env_id"], "env_kwargs": env_kwargs,
           "episodes": FLAGS.episodes, "num_envs": num_envs, "seed": FLAGS.seed, "greedy": FLAGS.greedy,
           "opponent": FLAGS.opponent, **({"mcts_simulations": FLAGS.mcts_simulations} if FLAGS.opponent == "mcts" else {})}
    eval_json = run.path / "eval.json"
    head = f"{loop['env_id']}, checkpoint {step}{' (replica %d)' % FLAGS.replica if run_replicas(run) > 1 else ''}"
    policy = "greedy" if FLAGS.greedy else "behaviour"
    with evaluator:
        if FLAGS.opponent != "self":
            matches = {team: evaluator.run(networks, FLAGS.episodes, jax.random.key(FLAGS.seed), team=team)
                       for team in evaluator.team_names}
        else:
            result = evaluator.run(networks, FLAGS.episodes, jax.random.key(FLAGS.seed))
    if FLAGS.opponent != "self":
        against = "random players" if FLAGS.opponent == "random" else f"a {FLAGS.mcts_simulations}-simulation pure MCTS"
        out[f"vs_{FLAGS.opponent}"] = {team: _match(r, team) for team, r in matches.items()}
        eval_json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"{head}, {FLAGS.episodes} episodes per team ({policy} policy) against {against}:", flush=True)
        for team, m in out[f"vs_{FLAGS.opponent}"].items():
            print(f"  {team} trained: wins {m['win_rate']:.1%}, draws {m['eval_draw_rate']:.1%}, "
                  f"its return {m[f'eval_return_mean_{team}']:.2f}", flush=True)
        print(f"written to {eval_json}", flush=True)
    else:
        summary = result.summary()
        out.update(summary, returns=result.returns.tolist(), lengths=result.lengths.tolist())
        if result.episode_returns is not None:
            out["episode_returns"] = result.episode_returns.tolist()
        eval_json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"{head}, {FLAGS.episodes} episodes ({policy}"
              f" policy): return {summary['eval_return_mean']:.1f} +- {summary['eval_return_std']:.1f} "
              f"(min {summary['eval_return_min']:.1f}, max {summary['eval_return_max']:.1f}), length mean "
              f"{summary['eval_length_mean']:.1f} (min {int(np.min(result.lengths))}, max {int(np.max(result.lengths))}); "
              f"written to {eval_json}", flush=True)
        if result.episode_returns is not None and result.cooperative:  # one shared goal: nobody wins
            print("  " + ", ".join(f"{team}: return {summary[f'eval_return_mean_{team}']:.2f}"
                                   for team in result.team_names) + " (a cooperative task)", flush=True)
        elif result.episode_returns is not None:
            print("  " + ", ".join(f"{team}: return {summary[f'eval_return_mean_{team}']:.2f}, wins "
                                   f"{summary[f'eval_win_rate_{team}']:.1%}" for team in result.team_names)
                  + f", draws {summary['eval_draw_rate']:.1%}", flush=True)
    if video is None:
        return
    # The evaluation is printed and written: a video that fails costs only the video.
    try:
        video_return, video_length = record_video(video, agent, networks, loop["env_id"], env_kwargs, FLAGS.seed,
                                                  FLAGS.greedy, FLAGS.video_fps)
    except Exception as e:  # noqa: BLE001 - whatever stops the video, the evaluation stands
        if FLAGS.debug:
            raise
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        print(f"error: no video written ({lines[0] if lines else type(e).__name__}); the evaluation is in {eval_json} "
              "(--debug shows the traceback)", file=sys.stderr)
        raise SystemExit(1) from None
    out.update(video=str(video), video_return=video_return, video_length=video_length)
    eval_json.write_text(json.dumps(out, indent=1) + "\n")
    print(f"video of one episode (return {video_return:.1f}, {video_length} steps): {video}")


def _match(result: EvalResult, team: str) -> dict:
    """eval.json's record of `team` (trained) against the opponents: the summary, its win rate
    (`win_rate`) and every player's return in each episode."""
    summary = result.summary()
    return {"win_rate": summary[f"eval_win_rate_{team}"], **summary, "episode_returns": result.episode_returns.tolist()}


if __name__ == "__main__":
    cli.run_main(main)
