"""PPO on the Sebulba loop, for discrete and continuous actions.

    python -m experiments.ppo                            # CartPole-v1 on the CPU, about 15 s
    python -m experiments.ppo --env Pendulum-v1          # continuous actions (a Gaussian policy)
    python -m experiments.ppo --env HalfCheetah-v5       # MuJoCo (pip install -e ".[mujoco]")
    python -m experiments.ppo --env Pong-v5              # Cleanba's PPO settings (a GPU host)
    python -m experiments.ppo --help

Every run writes a directory under --logdir with flags.json, metrics.csv, TensorBoard events and
learning_curve.png.
"""

from __future__ import annotations

import dataclasses

from absl import flags

from sebulba.agents.ppo import PPO, PPOConfig
from sebulba.distributions import check_action_space
from sebulba.experiment import cli
from sebulba.experiment.cli import Experiment, build, define_loop_flags, overrides_from_flags, train
from sebulba.experiment.env_kind import env_kind

# ---------------------------------------------------------------- presets
# CartPole (and other vector or tabular tasks with discrete actions): CleanRL's ppo.py (4 epochs
# of 4 minibatches, clip 0.2, GAE 0.95, Adam eps 1e-5, clip 0.5, tanh MLPs 64-64, orthogonal init)
# with 8 envs x 128 steps and a 10x larger learning rate (2.5e-3, decayed linearly): seeds 0-2 hold
# 500 from 155-165k env steps on (BENCHMARKS.md); CleanRL's 2.5e-4 was at 316 after 100k. Sync
# mode: bit-reproducible, so the learning bar is tested, not sampled.
CARTPOLE = dict(
    total_env_steps=200_000, num_envs=8, steps_per_cycle=128, async_mode=False, inferencers_per_device=1,
    log_every_s=0.5, agent=PPOConfig(learning_rate=2.5e-3),
)
# Gymnasium's continuous tasks (MuJoCo): CleanRL's ppo_continuous_action.py: 2048 steps per
# update (here 8 envs x 256), 32 minibatches of 64, 10 epochs, Adam 3e-4 decayed, no entropy bonus,
# observations normalised and rewards scaled by the discounted return's spread, 1M env steps.
MUJOCO = dict(
    total_env_steps=1_000_000, num_envs=8, steps_per_cycle=256, async_mode=False, inferencers_per_device=1,
    log_every_s=5.0,
    agent=PPOConfig(learning_rate=3e-4, entropy_cost=0.0, num_epochs=10, num_minibatches=32,
                    normalize_observations=True, scale_rewards=True),
)
# Built-in continuous tasks (Pendulum-v1): the MuJoCo settings over 200k env steps. In a sweep
# (BENCHMARKS.md) they ended Pendulum at -134, -146 and -154 (seeds 0-2), ahead of SB3's tuned
# Pendulum values (gamma 0.9, 10 epochs of 8 minibatches, 1e-3: -226) and with no task-specific
# discount.
CONTROL = dict(MUJOCO, total_env_steps=200_000, log_every_s=0.5)
# Atari: Cleanba's PPO settings (128 steps, 4 epochs of 4 minibatches, clip 0.1, entropy 0.01,
# Adam 2.5e-4 decayed, gradient clip 0.5, IMPALA ResNet shared by policy and value) on the paper
# preprocessing (84x84 gray, 4 frames, reward clip, life loss as episode end), 2 inferencers x 64
# envs per actor device, async. For a GPU host; not measured yet (BENCHMARKS.md).
ATARI = dict(
    total_env_steps=50_000_000, num_envs=64, steps_per_cycle=128, async_mode=True, inferencers_per_device=2,
    log_every_s=10.0, env_kwargs=dict(reward_clip=True, episodic_life=True),
    agent=PPOConfig(torso="impala_resnet", separate_critic=False, activation="relu", learning_rate=2.5e-4,
                    clip_coef=0.1, entropy_cost=0.01, num_epochs=4, num_minibatches=4),
)


def preset(env_id: str, env_kwargs: dict | None = None) -> dict:
    """The preset for the env's kind (sebulba.experiment.env_kind): Atari games get ATARI; other
    discrete-action tasks CARTPOLE; continuous actions CONTROL for the built-in tasks and MUJOCO
    for Gymnasium's. An action space PPO cannot take is refused here, before anything is built."""
    kind = env_kind(env_id, env_kwargs)
    check_action_space(kind.action_space, f"PPO ({env_id})")
    if kind.observations == "atari":
        return ATARI
    if kind.actions == "continuous":
        return CONTROL if kind.native else MUJOCO
    return CARTPOLE


# ---------------------------------------------------------------- flags
define_loop_flags("CartPole-v1")
flags.adopt_module_key_flags(cli)  # list the shared flags in --help
flags.DEFINE_integer("steps_per_cycle", None, "Steps per env in each rollout (PPO's num_steps).", lower_bound=1)
flags.DEFINE_float("learning_rate", None, "Adam learning rate (decays linearly to 0 over the run).")
flags.DEFINE_integer("num_epochs", None, "Passes over each rollout (update_epochs).", lower_bound=1)
flags.DEFINE_integer("num_minibatches", None, "Minibatches per epoch; each takes steps_per_cycle / num_minibatches "
                     "of every env's steps, so it must divide steps_per_cycle.", lower_bound=1)
flags.DEFINE_float("clip_coef", None, "The surrogate's ratio clip epsilon (> 0).")
flags.DEFINE_bool("clip_value_loss", None, "Clip the value's change around its value before the update.")
flags.DEFINE_float("entropy_cost", None, "Weight of the entropy bonus.")
flags.DEFINE_float("value_cost", None, "Weight of the value loss.")
flags.DEFINE_float("discount", None, "Discount gamma.")
flags.DEFINE_float("gae_lambda", None, "GAE lambda.")
flags.DEFINE_float("max_grad_norm", None, "Global gradient-norm clip.")
flags.DEFINE_bool("normalize_advantages", None, "Normalise advantages per minibatch (over all learner devices).")
flags.DEFINE_bool("normalize_observations", None, "Normalise observations by running mean and variance.")
flags.DEFINE_bool("scale_rewards", None, "Divide rewards by the running std of the discounted return.")
flags.DEFINE_enum("torso", None, ["auto", "mlp", "nature_cnn", "impala_resnet"], "Network torso.")
flags.DEFINE_list("hidden_sizes", None, "MLP torso layer sizes, e.g. 64,64.")
FLAGS = flags.FLAGS
AGENT_FLAGS = {"learning_rate": "learning_rate", "num_epochs": "num_epochs", "num_minibatches": "num_minibatches",
               "clip_coef": "clip_coef", "clip_value_loss": "clip_value_loss", "entropy_cost": "entropy_cost",
               "value_cost": "value_cost", "discount": "discount", "gae_lambda": "gae_lambda",
               "max_grad_norm": "max_grad_norm", "normalize_advantages": "normalize_advantages",
               "normalize_observations": "normalize_observations", "scale_rewards": "scale_rewards",
               "torso": "torso", "hidden_sizes": "hidden_sizes"}
cli.describe_presets({"discrete": CARTPOLE, "built-in continuous": CONTROL, "MuJoCo": MUJOCO, "Atari": ATARI},
                     AGENT_FLAGS)


def make_experiment(env: str, seed: int = 0, **overrides) -> Experiment:
    """The preset for env with overrides (None values are ignored); what the flags map onto."""
    p = preset(env, overrides.get("env_kwargs"))
    T = overrides.get("steps_per_cycle") or p["steps_per_cycle"]
    exp = build(env, seed, p, overrides, lambda agent: T, minibatches_of_envs=False)
    agent = exp.agent
    if T % agent.num_minibatches:
        raise ValueError(f"--num_minibatches={agent.num_minibatches} must divide --steps_per_cycle={T}: each "
                         "minibatch takes an equal share of every env's steps")
    optimizer_steps = cli.learner_updates(exp) * agent.num_epochs * agent.num_minibatches
    return dataclasses.replace(exp, agent=dataclasses.replace(agent, lr_decay_steps=optimizer_steps))


def main(argv: list[str]) -> None:
    del argv
    cli.start_distributed()
    with cli.user_input():
        cli.adopt_resumed_flags()
        overrides = overrides_from_flags(AGENT_FLAGS)
        exp = make_experiment(FLAGS.env, FLAGS.seed, steps_per_cycle=FLAGS.steps_per_cycle, **overrides)
    train("ppo", exp, PPO)


if __name__ == "__main__":
    cli.run_main(main)
