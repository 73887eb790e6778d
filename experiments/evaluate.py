"""Evaluate a trained run: its agent and latest checkpoint, K complete episodes with the agent's
evaluation policy on envs of its own.

    python -m experiments.evaluate runs/<run dir>                       # 10 episodes, greedy
    python -m experiments.evaluate runs/<run dir> --episodes 100 --num_envs 16 --checkpoint 196
    python -m experiments.evaluate runs/<run dir> --nogreedy --env_kwargs repeat_action_probability=0.25
    python -m experiments.evaluate runs/<run dir> --video cartpole.mp4    # or .gif (pip install -e ".[video]")

Prints the mean, standard deviation, min and max return and the episode lengths, and writes them
to RUN_DIR/eval.json; then records the video, if asked, with a progress line (a video that fails is
one line, exit status 1, and leaves the evaluation written).
"""

from __future__ import annotations

import json
import sys

import jax
import numpy as np
from absl import flags

from sebulba.experiment import cli
from sebulba.experiment.env_kwargs import parse_env_kwargs
from sebulba.experiment.errors import user_input
from sebulba.experiment.flag_types import define_integer
from sebulba.experiment.trained import build_agent, open_run, restore_networks, run_replicas
from sebulba.experiment.video import check_video_path
from sebulba.experiment.video import record as record_video
from sebulba.loop.evaluator import Evaluator

define_integer("checkpoint", None, "Learner step of the checkpoint to evaluate (default: the latest).")
define_integer("replica", 0, "Of a run trained with --num_seeds N: which replica (0..N-1; replica r trained with seed "
               "--seed + r).", lower_bound=0)
define_integer("episodes", 10, "Complete episodes to play.", lower_bound=1)
define_integer("num_envs", None, "Envs playing them side by side (default: min(episodes, 8)).", lower_bound=1)
define_integer("seed", 0, "Seed of the evaluation envs and the policy's RNG.")
flags.DEFINE_string("env_kwargs", None, "The task's kwargs over the run's own, comma-separated key=value with Python "
                    "literals, e.g. repeat_action_probability=0.25.")
flags.DEFINE_bool("greedy", True, "The agent's evaluation policy (greedy; R2D2: epsilon 0.001); --nogreedy: the "
                  "behaviour policy it trained with.")
flags.DEFINE_string("video", None, "Also write a video of one episode here (MP4, or GIF when the name ends in .gif), "
                    "frames annotated with the step and the return so far (each player's in a multi-player env); needs pip "
                    "install -e '.[video]'.")
define_integer("video_fps", 30, "Frames per second of the video.", lower_bound=1)
flags.DEFINE_bool("debug", False, "Show the whole traceback of a mistake in the input.")
FLAGS = flags.FLAGS


def main(argv: list[str]) -> None:
    cli.quiet_terminal()  # orbax's INFO lines stay off the terminal
    with user_input():
        if len(argv) != 2:
            raise ValueError("give one run directory: python -m experiments.evaluate RUN_DIR [flags]")
        video = None if FLAGS.video is None else check_video_path(FLAGS.video)  # before anything runs
        run, record = open_run(argv[1])
        agent = build_agent(record, parse_env_kwargs(FLAGS.env_kwargs), run)
        step, networks = restore_networks(run, agent, FLAGS.checkpoint, FLAGS.replica)
        num_envs = FLAGS.num_envs or min(FLAGS.episodes, 8)
        loop = record["loop"]
        env_kwargs = {**loop.get("env_kwargs", {}), **parse_env_kwargs(FLAGS.env_kwargs)}
        evaluator = Evaluator(agent, loop["env_id"], env_kwargs, num_envs, FLAGS.seed, FLAGS.greedy)
    with evaluator:
        result = evaluator.run(networks, FLAGS.episodes, jax.random.key(FLAGS.seed))
    summary = result.summary()
    out = {"run_dir": str(run.path), "checkpoint": step, "replica": FLAGS.replica, "env_id": loop["env_id"], "env_kwargs": env_kwargs,
           "episodes": FLAGS.episodes, "num_envs": num_envs, "seed": FLAGS.seed, "greedy": FLAGS.greedy,
           **summary, "returns": result.returns.tolist(), "lengths": result.lengths.tolist()}
    eval_json = run.path / "eval.json"
    eval_json.write_text(json.dumps(out, indent=1) + "\n")
    replica = f" (replica {FLAGS.replica})" if run_replicas(run) > 1 else ""
    print(f"{loop['env_id']}, checkpoint {step}{replica}, {FLAGS.episodes} episodes ({'greedy' if FLAGS.greedy else 'behaviour'}"
          f" policy): return {summary['eval_return_mean']:.1f} +- {summary['eval_return_std']:.1f} "
          f"(min {summary['eval_return_min']:.1f}, max {summary['eval_return_max']:.1f}), length mean "
          f"{summary['eval_length_mean']:.1f} (min {int(np.min(result.lengths))}, max {int(np.max(result.lengths))}); "
          f"written to {eval_json}", flush=True)
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


if __name__ == "__main__":
    cli.run_main(main)
