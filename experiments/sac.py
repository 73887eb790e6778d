"""SAC (twin soft-Q critics, squashed Gaussian policy, learned temperature) on the shared
transition replay, in the Sebulba loop (host envs, native MuJoCo included) or the Anakin loop
(JAX envs).

    python -m experiments.sac                               # Pendulum-v1 on the CPU
    python -m experiments.sac --env HalfCheetah-v5          # MuJoCo: CleanRL's settings
    python -m experiments.sac --env gymnax/Pendulum-v1      # env and learner in one program
    python -m experiments.sac --help

Every run writes a directory under --logdir with flags.json, metrics.csv, TensorBoard events and
learning_curve.png.
"""

from __future__ import annotations

from sebulba.agents.sac import SAC, SACConfig
from sebulba.experiment.flags import CONTINUOUS_FLAGS, REPLAY_FLAGS, Flag
from sebulba.experiment.off_policy_recipe import (CONTROL_LOOP, MUJOCO_LOOP, check_replay_ratio, continuous_preset,
                                                  optimizer_steps_per_update)
from sebulba.experiment.presets import Preset
from sebulba.experiment.recipe import Algorithm

# ---------------------------------------------------------------- presets
# Built-in continuous tasks (Pendulum-v1): 20k env steps, bar >= -250 over the last 20 episodes.
# 64-64 MLPs and batch 128 (256-256 x 256 costs ~10 ms an update on 2 cores: 20k updates would take
# minutes), Adam 1e-3 (SB3 zoo's Pendulum value), 1,000 random steps, one update per env step, actor and
# temperature every step (policy_frequency 1, SB3's). Seed 0 ended at -121.0 in about 25 s of training.
CONTROL = Preset(
    **CONTROL_LOOP,
    agent=SACConfig(hidden_sizes=(64, 64), batch_size=128, learning_starts=1_000, replay_capacity=20_000, policy_lr=1e-3,
                    q_lr=1e-3, policy_frequency=1),
)
# MuJoCo (Gymnasium's, on the native pool): CleanRL's sac_continuous_action.py (256-256 MLPs,
# Adam 3e-4 actor / 1e-3 critics and temperature, tau 0.005, batch 256, 5,000 random steps, one
# update per env step) over 4 envs x 8 steps a cycle, 1M env steps.
MUJOCO = Preset(**MUJOCO_LOOP, agent=SACConfig())


preset = continuous_preset("SAC", CONTROL, MUJOCO)


# ---------------------------------------------------------------- the recipe (sebulba.experiment.recipe)
ALGORITHM = Algorithm(
    "sac", SAC, preset,
    presets={"built-in control": CONTROL, "MuJoCo": MUJOCO},
    flags={
        **REPLAY_FLAGS, **CONTINUOUS_FLAGS,
        "policy_lr": Flag(float, "The actor's Adam learning rate."),
        "q_lr": Flag(float, "The critics' and the temperature's Adam learning rate."),
        "policy_frequency": Flag(int, "Actor and temperature: one step (at k x their learning rate) every k critic "
                                 "steps.", lower_bound=1),
        "autotune": Flag(bool, "Learn the temperature towards the target entropy (else fixed at --alpha)."),
        "alpha": Flag(float, "The temperature when not autotuned."),
    },
    optimizer_steps_per_update=optimizer_steps_per_update,
    check=check_replay_ratio,
    default_env="Pendulum-v1",
)
ALGORITHM.define_flags()
make_experiment = ALGORITHM.make_experiment

if __name__ == "__main__":
    ALGORITHM.main()
