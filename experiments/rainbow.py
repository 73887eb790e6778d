"""Rainbow (Hessel et al. 2018): DQN with C51's distributional head, n-step targets, prioritized
replay, a dueling head and double Q-learning (NoisyNet layers with --noisy), in the Sebulba loop
(host envs) or the Anakin loop (JAX envs). The agent is DQN's (sebulba.agents.dqn); this entry
point is its Rainbow presets.

    python -m experiments.rainbow                            # CartPole-v1 on the CPU
    python -m experiments.rainbow --env gymnax/CartPole-v1   # the same, env and learner in one program
    python -m experiments.rainbow --env Breakout-v5          # Atari: the paper's settings
    python -m experiments.rainbow --noisy --epsilon_base 0   # explore by the heads' noise alone
    python -m experiments.rainbow --help

Every run writes a directory under --logdir with flags.json, metrics.csv, TensorBoard events and
learning_curve.png.
"""

from __future__ import annotations

from sebulba.agents.dqn import DQN, DQNConfig
from sebulba.experiment.env_kind import env_kind, require_discrete_actions
from sebulba.experiment.flags import DQN_FLAGS
from sebulba.experiment.off_policy_recipe import check_replay_ratio, optimizer_steps_per_update
from sebulba.experiment.presets import Preset
from sebulba.experiment.recipe import Algorithm

# ---------------------------------------------------------------- presets
# What Rainbow adds to DQN (experiments.dqn): C51's distributional head, prioritized replay
# (exponent 0.5, importance sampling 0.4), n = 3, a dueling head and double Q-learning.
RAINBOW = dict(value_head="c51", priority_exponent=0.5, importance_sampling_exponent=0.4, n_step=3, dueling=True,
               double=True)
# CartPole-v1 (every vector, image or tabular task): DQN's CartPole preset with Rainbow's parts,
# 51 atoms from -100 to 100 (as DQN's CartPole preset with --value_head c51).
CARTPOLE = Preset(
    total_env_steps=100_000, num_envs=8, steps_per_cycle=4, async_mode=False, inferencers_per_device=1,
    log_every_s=1.0,
    agent=DQNConfig(hidden_sizes=(128, 128), learning_rate=1e-3, adam_eps=1e-8, batch_size=128, replay_ratio=0.5,
                    learning_starts=1_000, replay_capacity=50_000, discount=0.99, target_update_period=200,
                    epsilon_base=0.05, v_min=-100.0, v_max=100.0, **RAINBOW),
)
# Atari: the paper's settings (Adam 6.25e-5, eps 1.5e-4, 51 atoms from -10 to 10 on clipped
# rewards, a target copy every 8,000 updates, 20k warm-up steps, an update every 4 env steps,
# batch 32) with Ape-X epsilons over 32 envs (the paper's NoisyNets: --noisy --epsilon_base 0);
# 200,000 transitions of 4 stacked 84x84 frames (5.6 GiB), as DQN's.
ATARI = Preset(
    total_env_steps=10_000_000, num_envs=32, steps_per_cycle=8, async_mode=True, inferencers_per_device=2,
    log_every_s=10.0, lr_decay=False,
    agent=DQNConfig(torso="nature_cnn", replay_capacity=200_000, max_grad_norm=None, **RAINBOW),
)


def preset(env_id: str, env_kwargs: dict | None = None) -> Preset:
    """ATARI for Atari games, CARTPOLE for every other Discrete-action env; any other env is
    refused here, in one line, before anything is built."""
    kind = env_kind(env_id, env_kwargs)
    require_discrete_actions("Rainbow", kind)
    return ATARI if kind.observations == "atari" else CARTPOLE


# ---------------------------------------------------------------- the recipe (sebulba.experiment.recipe)
ALGORITHM = Algorithm(
    "rainbow", DQN, preset,
    presets={"vector/image/tabular": CARTPOLE, "Atari": ATARI},
    flags=DQN_FLAGS,
    optimizer_steps_per_update=optimizer_steps_per_update,
    check=check_replay_ratio,
)
ALGORITHM.define_flags()
make_experiment = ALGORITHM.make_experiment

if __name__ == "__main__":
    ALGORITHM.main()
