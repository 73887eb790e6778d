"""PPO on the Sebulba loop, for discrete and continuous actions.

    python -m experiments.ppo                            # CartPole-v1 on the CPU, about 12 s
    python -m experiments.ppo --env Pendulum-v1          # continuous actions (a Gaussian policy)
    python -m experiments.ppo --env HalfCheetah-v5       # MuJoCo (pip install -e ".[mujoco]")
    python -m experiments.ppo --env Pong-v5              # Cleanba's PPO settings (a GPU host)
    python -m experiments.ppo --env pettingzoo/mpe2/simple_spread_v3   # IPPO: every player, one network
    python -m experiments.ppo --env pettingzoo/mpe2/simple_spread_v3 --env_kwargs global_state=True   # MAPPO
    python -m experiments.ppo --env jaxmarl/MPE_simple_spread_v3        # IPPO in the Anakin loop (JaxMARL's MPE)
    python -m experiments.ppo --env pettingzoo/classic/connect_four_v3   # self-play, illegal moves masked
    python -m experiments.ppo --help

Every run writes a directory under --logdir with flags.json, metrics.csv, TensorBoard events and
learning_curve.png.
"""

from __future__ import annotations

import dataclasses

from sebulba.agents.ppo import PPO, PPOConfig
from sebulba.distributions import check_action_space
from sebulba.experiment.env_kind import env_kind
from sebulba.experiment.flags import CORE_FLAGS, Flag
from sebulba.experiment.presets import Preset
from sebulba.experiment.recipe import Algorithm, check_minibatches
from sebulba.networks import TORSO_KINDS

# ---------------------------------------------------------------- presets
# CartPole (and other vector or tabular tasks with discrete actions): CleanRL's ppo.py (4 epochs
# of 4 minibatches, clip 0.2, GAE 0.95, Adam eps 1e-5, clip 0.5, tanh MLPs 64-64, orthogonal init)
# with 8 envs x 128 steps and a 10x larger learning rate (2.5e-3, decayed linearly): seeds 0-2 hold
# 500 from 155-165k env steps on (BENCHMARKS.md); CleanRL's 2.5e-4 was at 316 after 100k. Sync
# mode: bit-reproducible, so the learning bar is tested, not sampled.
CARTPOLE = Preset(
    total_env_steps=200_000, num_envs=8, steps_per_cycle=128, async_mode=False, inferencers_per_device=1,
    log_every_s=0.5, agent=PPOConfig(learning_rate=2.5e-3),
)
# MinAtar (gymnax's four games, the Anakin loop): the settings of gymnax's published PPO (gymnax-blines'
# agents/*-MinAtar/ppo.yaml): 64 envs x 128 steps, 4 epochs of 8 minibatches, Adam 5e-4 constant
# (their "warm-up" over the first 5% runs from 5e-4 to 5e-4), gamma 0.999, lambda 0.95, clip 0.2, entropy 0.01, gradient
# clip 0.5, 1e7 env steps, on its network: the 10x10xC planes flattened into a relu MLP of 256, 256
# for the policy and another for the value. (MinAtar's CNN shared by both, with 0.99 and a decaying
# rate, collapsed its entropy on Breakout: 6.5 at 1e7 against gymnax's 28; BENCHMARKS.md.)
MINATAR = Preset(
    total_env_steps=10_000_000, num_envs=64, steps_per_cycle=128, async_mode=False, inferencers_per_device=1,
    log_every_s=10.0, lr_decay=False,
    agent=PPOConfig(torso="mlp", hidden_sizes=(256, 256), activation="relu", separate_critic=True, discount=0.999,
                    learning_rate=5e-4, num_minibatches=8),
)
# Gymnasium's continuous tasks (MuJoCo): CleanRL's ppo_continuous_action.py: 2048 steps per
# update (here 8 envs x 256), 32 minibatches of 64, 10 epochs, Adam 3e-4 decayed, no entropy bonus,
# observations normalised and rewards scaled by the discounted return's spread, 1M env steps.
MUJOCO = Preset(
    total_env_steps=1_000_000, num_envs=8, steps_per_cycle=256, async_mode=False, inferencers_per_device=1,
    log_every_s=5.0,
    agent=PPOConfig(learning_rate=3e-4, entropy_cost=0.0, num_epochs=10, num_minibatches=32,
                    normalize_observations=True, scale_rewards=True),
)
# MountainCar-v0 (a reward of -1 a step until the flag, 200 steps): CARTPOLE's preset ended at -200 on
# seed 0 (never reached the flag). What finds it is observation normalisation (the velocity's
# +-0.07 scaled up to unit spread: the policy follows it, and the swing builds): CARTPOLE's
# settings with it ended seed 0 at -113; rl-baselines3-zoo's PPO for the task (16 envs x 16 steps,
# GAE 0.98, no entropy bonus, normalised observations, 1M env steps, Adam 3e-4; it reports -108.2)
# ended seeds 0-4 at -108.0, -112.2, -124.7, -111.8, -108.9 here; with Adam 1e-3 (decayed) at -98.8,
# -109.7, -101.0, -96.3, -98.4 (2026-11-30, ~35 s a run; gymnax's twin in the Anakin loop, seed 0: -99.0).
# Without normalisation (the rest as here): -200. The classic suite holds it to -110 (its bar is not
# in the test suite: a minute of CI time).
MOUNTAIN_CAR = Preset(
    total_env_steps=1_000_000, num_envs=16, steps_per_cycle=16, async_mode=False, inferencers_per_device=1,
    log_every_s=0.5,
    agent=PPOConfig(learning_rate=1e-3, gae_lambda=0.98, entropy_cost=0.0, normalize_observations=True),
)
# Built-in continuous tasks (Pendulum-v1): the MuJoCo settings over 200k env steps. In a sweep
# (BENCHMARKS.md) they ended Pendulum at -134, -146 and -154 (seeds 0-2), ahead of SB3's tuned
# Pendulum values (gamma 0.9, 10 epochs of 8 minibatches, 1e-3: -226) and with no task-specific
# discount.
CONTROL = MUJOCO.replace(total_env_steps=200_000, log_every_s=0.5)
# Atari: Cleanba's PPO settings (128 steps, 4 epochs of 4 minibatches, clip 0.1, entropy 0.01,
# Adam 2.5e-4 decayed, gradient clip 0.5, IMPALA ResNet shared by policy and value) on the paper
# preprocessing (84x84 gray, 4 frames, reward clip, life loss as episode end), 2 inferencers x 64
# envs per actor device, async. For a GPU host; not measured yet (BENCHMARKS.md).
ATARI = Preset(
    total_env_steps=50_000_000, num_envs=64, steps_per_cycle=128, async_mode=True, inferencers_per_device=2,
    log_every_s=10.0, env_kwargs=dict(reward_clip=True, episodic_life=True),
    agent=PPOConfig(torso="impala_resnet", separate_critic=False, activation="relu", learning_rate=2.5e-4,
                    clip_coef=0.1, entropy_cost=0.01, num_epochs=4, num_minibatches=4),
)

# Multi-player tasks (PettingZoo's, e.g. MPE's simple_spread_v3): IPPO, PPO with one network shared
# by every player (each row of the pool is one player), the player's one-hot appended to its
# observation (add_player_id). JaxMARL's IPPO for MPE (baselines/IPPO/config/ippo_ff_mpe.yaml:
# 16 envs x 128 steps, 4 epochs of 4 minibatches, clip 0.2, entropy 0.01, value 0.5, gradient clip
# 0.5, tanh MLPs 64-64, Adam decayed linearly) with a 4x larger learning rate, 1e-3, for a 1M
# env-step budget (JaxMARL's: 2M-10M at 2.5e-4). On spread at 150k env steps (one seed each):
# 2.5e-4 at -23, 1e-3 at -19 to -21 (random: -26.4), 2.5e-3 collapsed its entropy at -27.
MULTIPLAYER = Preset(
    total_env_steps=1_000_000, num_envs=16, steps_per_cycle=128, async_mode=False, inferencers_per_device=1,
    log_every_s=5.0, env_kwargs=dict(add_player_id=True), agent=PPOConfig(learning_rate=1e-3),
)
# MAPPO (Yu et al. 2022): the IPPO settings with a centralised critic, which reads the env's global
# state (PettingZoo's state(), the pool's global_state=True) next to the player's observation;
# picked when the env kwargs ask for the global state.
MULTIPLAYER_MAPPO = MULTIPLAYER.replace(env_kwargs=dict(add_player_id=True, global_state=True),
                                       agent=PPOConfig(learning_rate=1e-3, critic_state=True))

# Turn-based games with PettingZoo's action mask (its classic family, e.g. connect_four_v3): self-play,
# every player acting with the one network (an observation is already its player's view: no
# player id), the policy masked to the legal moves (PPOConfig.action_mask), the rows of the players
# not to move teaching the policy nothing (sebulba.distributions.masked_logits). Tuned on
# connect_four_v3 (BENCHMARKS.md, "Self-play (issue 39)"): 32 envs x 32 steps, 4 epochs of 4
# minibatches, Adam 1e-3 decayed, discount 0.97 (a win sooner is worth more), 300k env steps: the
# greedy policy beat a random opponent in 89-95% of games as the first player and 82-88% as the
# second (seeds 0-2, 200 games a seat). The first preset (100k env steps, 8 epochs of 2
# minibatches, Adam 2.5e-3) met the 80% bar on one host and missed it on another (second seat:
# seeds 0-2 at 75%, 83%, 61%): its result swung with the host's floating point; Adam 1e-3 at 200k
# left seed 2 at 70%, 128-128 MLPs did no better. tictactoe_v3 learns less here: the first seat
# wins 89-96% against random, the second 56-74% (its best possible: 94%) at 100k-200k env steps.
BOARD_GAME = MULTIPLAYER.replace(
    total_env_steps=300_000, num_envs=32, steps_per_cycle=32, log_every_s=2.0, env_kwargs={},
    agent=PPOConfig(learning_rate=1e-3, num_epochs=4, num_minibatches=4, discount=0.97),
)

# Multi-player Atari (Combat, Joust, MazeCraze, Warlords): ATARI's settings, every player sharing
# the one network, each row's frame stack marked with its player's indicator plane (add_player_id:
# every player sees the same screen) and no episodic_life (a player leaves when its lives run out).
# Not measured yet (BENCHMARKS.md: none).
MULTIPLAYER_ATARI = ATARI.replace(env_kwargs=dict(reward_clip=True, add_player_id=True))

# Memory tasks (partially observed; issue 53), picked by env id (MEMORY_TASKS): a GRU of 64 between
# the torsos and the heads (one each for the actor and the critic; 128 learned the same and took
# twice the time: CartPoleNoVelocity's seeds 0-4 in the Anakin loop all ended at 485-500 with 64), 16 envs x 32 steps (the learner
# re-unrolls 32 steps from each trajectory's first state; the actors carry the state across
# cycles), 4 epochs of 2 minibatches of 8 envs' whole sequences (on a CPU a minibatch's unroll in
# time, not its width, is the cost: CARTPOLE's 4 x 4 minibatches of 128 steps ran at half the
# speed), Adam 1e-3 decayed, observations normalised (CartPoleNoVelocity's angles are ~0.1 rad:
# unnormalised, at 1e-3 and 2.5e-3, seed 0 plateaued near 300), an entropy bonus of 0.02, 500k env steps.
# CartPoleNoVelocity-v1 (cart position and pole angle only): seeds 0-2 end at 500 (BENCHMARKS.md); with
# --core none, 46. With PPO's default bonus of 0.01, on an AMD EPYC host (2026-12-01; the XLA CPU code is
# the host's) seeds 0 and 3 in the Anakin loop solved the task by ~200k and then collapsed (entropy 0.3 ->
# 0.1; 218.7 and 459.6 at 500k); at 0.02 seeds 0-3 all ended at 500 there.
MEMORY = Preset(
    total_env_steps=500_000, num_envs=16, steps_per_cycle=32, async_mode=False, inferencers_per_device=1,
    log_every_s=1.0, agent=PPOConfig(learning_rate=1e-3, num_minibatches=2, normalize_observations=True, core="gru",
                                     core_size=64, entropy_cost=0.02),
)
# gymnax's MemoryChain-bsuite (recall a bit shown 5 steps back): MEMORY with an LSTM, 150k env steps.
MEMORY_CHAIN = MEMORY.replace(total_env_steps=150_000, agent=dataclasses.replace(MEMORY.agent, core="lstm"))
# XLand-MiniGrid's grids (uint8 views: not normalised): MEMORY's settings; Empty-6x6 in 100k env steps
# (XLand-MiniGrid's CPU debug config says 0.8+ by 1e5), DoorKey and the Memory grids in 1M (not measured yet).
MINIGRID = MEMORY.replace(total_env_steps=100_000, agent=dataclasses.replace(MEMORY.agent, normalize_observations=False))
MINIGRID_HARDER = MINIGRID.replace(total_env_steps=1_000_000)
# Craftax-Symbolic (the Craftax baseline's PPO-RNN: one GRU of 512 shared by the policy and the value,
# 4 epochs of 8 minibatches, Adam 2e-4, gamma 0.99, GAE 0.8, entropy 0.01, 64 steps) scaled to a CPU:
# 64 envs, not 1,024; 1M env steps, where the published PPO-RNN scores 2.3% of the maximum. Needs
# `pip install -e ".[craftax]"`.
CRAFTAX = Preset(
    total_env_steps=1_000_000, num_envs=64, steps_per_cycle=64, async_mode=False, inferencers_per_device=1,
    log_every_s=10.0,
    agent=PPOConfig(learning_rate=2e-4, num_epochs=4, num_minibatches=8, gae_lambda=0.8, entropy_cost=0.01,
                    core="gru", core_size=512, hidden_sizes=(512, 512), activation="relu", separate_critic=False),
)
# Atari with --core (lstm or gru): CleanRL's ppo_atari_lstm.py (8 envs x 128 steps, 4 epochs of 4
# minibatches of whole sequences, clip 0.1, entropy 0.01, Adam 2.5e-4 decayed, Nature CNN shared by
# the policy and the value, LSTM 128, one frame a step: the core is the memory, not a frame stack).
# CleanRL's 10M-step results: Breakout 128.9, Pong 19.8 (3 seeds). For a GPU host; not measured yet.
ATARI_RECURRENT = ATARI.replace(
    num_envs=8, async_mode=False, inferencers_per_device=1, total_env_steps=10_000_000,
    env_kwargs=dict(reward_clip=True, episodic_life=True, stack_num=1),
    agent=PPOConfig(torso="nature_cnn", separate_critic=False, activation="relu", learning_rate=2.5e-4, clip_coef=0.1,
                    entropy_cost=0.01, num_epochs=4, num_minibatches=4, core="lstm"),
)

TASKS = {"MountainCar-v0": MOUNTAIN_CAR, "gymnax/MountainCar-v0": MOUNTAIN_CAR}  # tuned for the task, by env id
MEMORY_TASKS = {"CartPoleNoVelocity-v1": MEMORY, "gymnax/MemoryChain-bsuite": MEMORY_CHAIN,
                "craftax/Craftax-Symbolic-v1": CRAFTAX}
MINIGRID_TASKS = (("xminigrid/MiniGrid-Empty-", MINIGRID), ("xminigrid/MiniGrid-DoorKey-", MINIGRID_HARDER),
                  ("xminigrid/MiniGrid-Memory", MINIGRID_HARDER))


def memory_preset(env_id: str) -> Preset | None:
    """A memory task's preset (a recurrent core in it), by its id; None for other envs."""
    return MEMORY_TASKS.get(env_id) or next((p for prefix, p in MINIGRID_TASKS if env_id.startswith(prefix)), None)


def core_preset(env_id: str, env_kwargs: dict | None, core: str) -> Preset | None:
    """The preset when --core names a core: Atari's own (one frame a step, CleanRL's LSTM PPO);
    None (the env's preset, with the core) for other envs."""
    return ATARI_RECURRENT if env_kind(env_id, env_kwargs).observations == "atari" else None


def preset(env_id: str, env_kwargs: dict | None = None) -> Preset:
    """The preset for the env's kind (sebulba.experiment.env_kind): memory tasks (MEMORY_TASKS,
    MINIGRID_TASKS) theirs, with a recurrent core, and the tasks tuned one by one (TASKS) theirs; Atari games get ATARI, gymnax's MinAtar games
    MINATAR; other
    discrete-action tasks (Discrete or MultiDiscrete) CARTPOLE; continuous actions CONTROL for the
    built-in tasks and MUJOCO for Gymnasium's; multi-player tasks MULTIPLAYER (IPPO), or with
    `global_state=True` in the env kwargs MULTIPLAYER_MAPPO, or BOARD_GAME (self-play) where the
    observation has PettingZoo's action_mask, or MULTIPLAYER_ATARI for Atari's multi-player games. An action space PPO cannot take is
    refused here, before anything is built."""
    kind = env_kind(env_id, env_kwargs)
    check_action_space(kind.action_space, f"PPO ({env_id})")
    if memory_preset(env_id) is not None:
        return memory_preset(env_id)
    if env_id in TASKS:
        return TASKS[env_id]
    if kind.num_players > 1 and kind.action_mask:
        return BOARD_GAME
    if kind.num_players > 1 and kind.observations == "atari":
        return MULTIPLAYER_ATARI
    if kind.num_players > 1:
        return MULTIPLAYER_MAPPO if (env_kwargs or {}).get("global_state") else MULTIPLAYER
    if kind.observations == "atari":
        return ATARI
    if kind.observations == "minatar":
        return MINATAR
    if kind.actions == "continuous":
        return CONTROL if kind.native else MUJOCO
    return CARTPOLE


# ---------------------------------------------------------------- the recipe (sebulba.experiment.recipe)
ALGORITHM = Algorithm(
    "ppo", PPO, preset,
    presets={"discrete": CARTPOLE, "MinAtar": MINATAR, "built-in continuous": CONTROL, "MuJoCo": MUJOCO, "Atari": ATARI,
             "multi-player (IPPO)": MULTIPLAYER, "multi-player with global_state=True (MAPPO)": MULTIPLAYER_MAPPO,
             "turn-based game with an action mask (self-play)": BOARD_GAME, "multi-player Atari": MULTIPLAYER_ATARI,
             "MountainCar": MOUNTAIN_CAR,
             "memory (CartPoleNoVelocity)": MEMORY, "memory (MemoryChain)": MEMORY_CHAIN,
             "memory (XLand-MiniGrid Empty)": MINIGRID, "memory (XLand-MiniGrid DoorKey, Memory)": MINIGRID_HARDER,
             "Craftax-Symbolic": CRAFTAX, "Atari with --core": ATARI_RECURRENT},
    flags={
        "steps_per_cycle": Flag(int, "Steps per env in each rollout (PPO's num_steps).", lower_bound=1),
        "learning_rate": Flag(float, "Adam learning rate (decays linearly to 0 over the run)."),
        "num_epochs": Flag(int, "Passes over each rollout (update_epochs).", lower_bound=1),
        "num_minibatches": Flag(int, "Minibatches per epoch; each takes steps_per_cycle / num_minibatches of every "
                                "env's steps, so it must divide steps_per_cycle (with --core: a share of the envs, "
                                "each env's sequence whole, so it must divide num_envs / learner devices).",
                                lower_bound=1),
        "clip_coef": Flag(float, "The surrogate's ratio clip epsilon (> 0)."),
        "clip_value_loss": Flag(bool, "Clip the value's change around its value before the update."),
        "entropy_cost": Flag(float, "Weight of the entropy bonus."),
        "value_cost": Flag(float, "Weight of the value loss."),
        "discount": Flag(float, "Discount gamma."),
        "gae_lambda": Flag(float, "GAE lambda."),
        "max_grad_norm": Flag(float, "Global gradient-norm clip."),
        "normalize_advantages": Flag(bool, "Normalise advantages per minibatch (over all learner devices)."),
        "normalize_observations": Flag(bool, "Normalise observations by running mean and variance."),
        "scale_rewards": Flag(bool, "Divide rewards by the running std of the discounted return."),
        "torso": Flag(TORSO_KINDS, "Network torso."),
        "hidden_sizes": Flag(list, "MLP torso layer sizes, e.g. 64,64."),
        "activation": Flag(("tanh", "relu"), "The MLP torsos' (and heads') activation."),
        "head_sizes": Flag(list, "Hidden layers of the policy's and of the value's head each (after the torso and "
                           "the core), e.g. 128 (PureJaxRL's ppo_rnn.py); empty: linear heads."),
        "separate_critic": Flag(bool, "A torso (and core) of the critic's own; --noseparate_critic: the policy and the "
                                "value share one."),
        "action_mask": Flag(bool, "Mask the policy with the observation's 'action_mask' where it has one (PettingZoo's "
                            "classic games: only legal moves)."),
        "critic_state": Flag(bool, "MAPPO: the critic reads the env's global state (a Dict observation's 'state': "
                             "--env_kwargs global_state=True) next to the player's observation ('obs')."),
        **CORE_FLAGS,
    },
    optimizer_steps_per_update=lambda exp: exp.agent.num_epochs * exp.agent.num_minibatches,
    minibatches_of_envs=lambda config: config.core != "none",  # without a core, minibatches split each env's steps
    check=check_minibatches,
    core_preset=core_preset,
)
ALGORITHM.define_flags()
make_experiment = ALGORITHM.make_experiment

if __name__ == "__main__":
    ALGORITHM.main()
