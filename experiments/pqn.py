"""PQN (Gallici et al. 2024): Q-learning on the rollouts of many parallel envs, no replay and no
target network, in the Sebulba loop (host envs) or the Anakin loop (JAX envs).

    python -m experiments.pqn                              # CartPole-v1 on the CPU
    python -m experiments.pqn --env gymnax/CartPole-v1     # the same, env and learner in one program
    python -m experiments.pqn --help

Every run writes a directory under --logdir with flags.json, metrics.csv, TensorBoard events and
learning_curve.png.
"""

from __future__ import annotations

import dataclasses

from sebulba.agents.pqn import PQN, PQNConfig
from sebulba.experiment.env_kind import env_kind, require_discrete_actions
from sebulba.experiment.flags import CORE_FLAGS, Flag
from sebulba.experiment.presets import Preset
from sebulba.experiment.recipe import Algorithm, check_minibatches
from sebulba.networks import TORSO_KINDS

# ---------------------------------------------------------------- presets
# CartPole (and other vector or tabular tasks with discrete actions): CleanRL's pqn.py (4 envs x 128
# steps, 4 epochs of 4 minibatches, lambda 0.65, gamma 0.99, gradient clip 10, RAdam 2.5e-4 decayed
# linearly, epsilon 1 -> 0.05 over the first half of the run, 120-84 MLP with LayerNorm and
# orthogonal init, 500k env steps; CleanRL reports 495.1 +- 6.9 on CartPole-v1) with purejaxql's
# CartPole reward scale, 0.1: seed 0 without it reached 500 at 225k and fell to 295 by the end
# (its Q-values at 100, 1 / (1 - gamma)); with it, 500 from 260k to the end (2026-11-29).
CARTPOLE = Preset(
    total_env_steps=500_000, num_envs=4, steps_per_cycle=128, async_mode=False, inferencers_per_device=1,
    log_every_s=1.0,
    agent=PQNConfig(hidden_sizes=(120, 84), learning_rate=2.5e-4, num_epochs=4, num_minibatches=4, q_lambda=0.65,
                    epsilon_finish=0.05, exploration_fraction=0.5, reward_scale=0.1),
)

# MountainCar-v0: CARTPOLE's preset found the flag late (seeds 0-2 at -131, -118, -150 after 1M env
# steps; -140 at its 500k). 16 envs x 16 steps (PPO's MountainCar layout: twice the updates per env
# step, each on half the samples), RAdam 1e-3 decayed, epsilon 1 -> 0.01 over the first half, 1M env
# steps, the rest as CARTPOLE: seeds 0-4 ended at -103.8, -100.7, -104.2, -104.6, -101.2 (2026-11-30, ~45 s a run;
# with epsilon to 0.05: -104.8, -110.1, -117.2, -108.0, -113.2; 4 x 128 with gamma 0.98 and 1e-3:
# -111.7 on seed 0; without the reward scale, or lambda 0.9: -200).
MOUNTAIN_CAR = CARTPOLE.replace(
    total_env_steps=1_000_000, num_envs=16, steps_per_cycle=16,
    agent=dataclasses.replace(CARTPOLE.agent, learning_rate=1e-3, epsilon_finish=0.01),
)
TASKS = {"MountainCar-v0": MOUNTAIN_CAR, "gymnax/MountainCar-v0": MOUNTAIN_CAR}  # tuned for the task, by env id

# MinAtar (gymnax's four games, the Anakin loop): purejaxql's pqn_minatar.yaml (128 envs x 32 steps,
# 2 epochs of 32 minibatches, RAdam 5e-4 decayed linearly, gradient clip 10, gamma 0.99, lambda
# 0.65, epsilon 1 -> 0.05 over the first 10%, 1e7 env steps; the config's defaults) on MinAtar's
# reference CNN with a LayerNorm after the conv and the dense layer, as purejaxql's network.
MINATAR = Preset(
    total_env_steps=10_000_000, num_envs=128, steps_per_cycle=32, async_mode=False, inferencers_per_device=1,
    log_every_s=10.0, agent=PQNConfig(torso="minatar"),
)

# Atari (the host pool): purejaxql's pqn_atari.yaml (128 envs x 32 steps, 2 epochs of 32
# minibatches, RAdam 2.5e-4 constant, gradient clip 10, gamma 0.99, lambda 0.65, epsilon 1 -> 0.001
# over the first 10%, 5e7 env steps = 200M frames) on EnvPool's preprocessing with episodic lives,
# clipped rewards and no sticky actions, its Nature CNN with a LayerNorm after every layer.
ATARI = Preset(
    total_env_steps=50_000_000, num_envs=128, steps_per_cycle=32, async_mode=False, inferencers_per_device=1,
    log_every_s=10.0, lr_decay=False,
    env_kwargs=dict(episodic_life=True, reward_clip=True, repeat_action_probability=0.0),
    agent=PQNConfig(torso="nature_cnn", learning_rate=2.5e-4, epsilon_finish=0.001),
)


def preset(env_id: str, env_kwargs: dict | None = None) -> Preset:
    """ATARI for Atari games, MINATAR for gymnax's MinAtar games, the tasks tuned one by one (TASKS)
    theirs, CARTPOLE for every other Discrete-action env; PQN needs Discrete actions: any other env is refused here, in one line,
    before anything is built."""
    kind = env_kind(env_id, env_kwargs)
    require_discrete_actions("PQN", kind)
    if env_id in TASKS:
        return TASKS[env_id]
    return {"atari": ATARI, "minatar": MINATAR}.get(kind.observations, CARTPOLE)


def epsilon_over_the_run(config: PQNConfig, updates: int) -> PQNConfig:
    """Epsilon decays over exploration_fraction of the run's learner updates."""
    return dataclasses.replace(config, epsilon_decay_updates=max(1, round(config.exploration_fraction * updates)))


# ---------------------------------------------------------------- the recipe (sebulba.experiment.recipe)
ALGORITHM = Algorithm(
    "pqn", PQN, preset,
    presets={"discrete": CARTPOLE, "MountainCar": MOUNTAIN_CAR, "MinAtar": MINATAR, "Atari": ATARI},
    flags={
        "steps_per_cycle": Flag(int, "Steps per env in each rollout.", lower_bound=1),
        "learning_rate": Flag(float, "RAdam learning rate (decays linearly to 0 over the run)."),
        "num_epochs": Flag(int, "Passes over each rollout.", lower_bound=1),
        "num_minibatches": Flag(int, "Minibatches per epoch; each takes steps_per_cycle / num_minibatches of every "
                                "env's steps, so it must divide steps_per_cycle.", lower_bound=1),
        "discount": Flag(float, "Discount gamma."),
        "q_lambda": Flag(float, "The Q(lambda) targets' lambda (0: one-step Q-learning targets)."),
        "max_grad_norm": Flag(float, "Global gradient-norm clip."),
        "reward_scale": Flag(float, "Rewards are multiplied by it before the targets."),
        "epsilon_start": Flag(float, "The actors' epsilon at the start."),
        "epsilon_finish": Flag(float, "The actors' epsilon once decayed."),
        "exploration_fraction": Flag(float, "The share of the run's learner updates epsilon decays over."),
        "layer_norm": Flag(bool, "A LayerNorm after each hidden layer (what keeps PQN stable without a target "
                           "network)."),
        "torso": Flag(TORSO_KINDS, "Network torso."),
        "hidden_sizes": Flag(list, "MLP torso layer sizes, e.g. 128,128."),
        **CORE_FLAGS,
    },
    optimizer_steps_per_update=lambda exp: exp.agent.num_epochs * exp.agent.num_minibatches,
    minibatches_of_envs=lambda config: config.core != "none",  # without a core, minibatches split each env's steps
    check=check_minibatches,
    over_the_run=epsilon_over_the_run,
)
ALGORITHM.define_flags()
make_experiment = ALGORITHM.make_experiment

if __name__ == "__main__":
    ALGORITHM.main()
