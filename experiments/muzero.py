"""MuZero on the Sebulba loop: the actors plan with the learned model (Gumbel MuZero's search on
mctx) in their jitted step. Needs the planning extra: pip install -e '.[planning]'.

    python -m experiments.muzero                         # CartPole-v1 on the CPU
    python -m experiments.muzero --num_simulations 8     # a cheaper search
    python -m experiments.muzero --help

Every run writes a directory under --logdir with flags.json, metrics.csv, TensorBoard events and
learning_curve.png. Loop cycles are half a replayed sequence (sequence_length / 2 env steps).
"""

from __future__ import annotations

from sebulba.agents.muzero.agent import MuZero
from sebulba.agents.muzero.config import VALUE_TARGETS, MuZeroConfig
from sebulba.experiment.env_kind import env_kind, require_discrete_actions
from sebulba.experiment.flags import REPLAY_FLAGS, Flag
from sebulba.experiment.presets import Preset
from sebulba.experiment.recipe import Algorithm
from sebulba.networks import TORSO_KINDS

# ---------------------------------------------------------------- presets
# Vector observations (CartPole-v1 first; issue 57's bar: >= 475 within 100k env steps): the
# config's defaults (16 simulations of Gumbel MuZero, K = 5, n = 10, sequences of 20, Adam 1e-3),
# 16 envs in sync mode, 8 learner steps of 16 sequences per cycle (4: 201.9 at 100k on seed 0,
# still rising; 8 with batch 32: 429.9). With 8, seeds 0-2 ended at 491.5, 500.0, 500.0 over the
# last 20 episodes at 100k env steps, about a minute of training each (2026-11-30, 2 cores shared
# with two other runs; benchmarks/bench_muzero.py has the runs behind it, PPO's beside them).
CARTPOLE = Preset(
    total_env_steps=100_000, num_envs=16, async_mode=False, inferencers_per_device=1, log_every_s=1.0,
    agent=MuZeroConfig(optims_per_cycle=8),
)


# MinAtar (gymnax's games, the Anakin loop; issue 57's bar: Breakout-MinAtar >= 28, gymnax's
# published PPO, within 1e7 env steps): the planes flattened into the representation's MLP (PPO's
# MinAtar preset learns them so), 128 units, 64 envs, 8 learner steps of 32 sequences per cycle of 10
# steps (each env step replayed about 8 times), a replay of 10,000 sequences per device. Gumbel's
# value_scale 0.02 (0.1: the improved policy turns greedy on small, noisy Q differences and self-play
# stops exploring) and an entropy bonus of 0.2 on the prior, which keeps self-play on actions the
# greedy policy would not take, so the model learns what they do (docs/decisions/agents.md, MuZero).
# Breakout-MinAtar seed 0 at 1e7 env steps (2026-12-01, 74 minutes here, nearly alone): training return 15.4,
# greedy 21.5 (32 episodes), the bar missed (0.77x); the preset before (2 learner steps a cycle, a
# bonus of 0.05): training return 9.7; a bonus of 0.2 at 2 learner steps (~16 minutes): 7.5, greedy 9.5.
# The bonus decaying to 0 over the run (--entropy_decay_steps 125000, 2026-12-02): greedy 11.7.
# The values as Peng's Q(lambda) returns over the model's greedy one-step lookahead (value_target="q_lambda":
# the greedy policy's values while the actors explore), seed 0 to 1e7 (2026-12-02): greedy 41.1, the preset since.
MINATAR = Preset(
    total_env_steps=10_000_000, num_envs=64, async_mode=False, inferencers_per_device=1, log_every_s=30.0,
    agent=MuZeroConfig(torso="mlp", hidden_sizes=(128,), latent_size=128, batch_size=32, optims_per_cycle=8,
                       replay_capacity=10_000, min_replay_size=500, value_scale=0.02, entropy_cost=0.2,
                       value_target="q_lambda"),
)

# Atari (issue 57's GPU item: Pong through the Sebulba loop, frames/s and the return at 10M frames):
# the paper's preprocessing as IMPALA's and PPO's Atari presets have it (84x84 gray, 4 stacked
# frames, frame skip 4, rewards clipped, a life loss ending the episode), the IMPALA ResNet as the
# representation's encoder into a latent of 256, 16 simulations, 2 inferencers x 64 envs acting
# asynchronously, 2 learner steps of 64 sequences per cycle (each env step replayed about twice, as
# MINATAR), a replay of 10,000 sequences per learner device (~6 GB of frames). A starting point
# for a GPU host, not tuned: a CPU runs it only as a smoke test (benchmarks/gpu_check.sh's planning
# stage runs it there).
ATARI = Preset(
    total_env_steps=2_500_000, num_envs=64, async_mode=True, inferencers_per_device=2, log_every_s=10.0,
    env_kwargs=dict(reward_clip=True, episodic_life=True),
    agent=MuZeroConfig(torso="impala_resnet", hidden_sizes=(256,), latent_size=256, batch_size=64, optims_per_cycle=2,
                       learning_rate=3e-4, replay_capacity=10_000, min_replay_size=500),
)


def preset(env_id: str, env_kwargs: dict | None = None) -> Preset:
    """MINATAR for gymnax's MinAtar games, ATARI for ALE's, CARTPOLE's for every other env with
    Discrete actions (MuZero plans over a Discrete action set); any other env is refused here, in
    one line, before anything is built."""
    kind = env_kind(env_id, env_kwargs)
    require_discrete_actions("MuZero", kind)
    return {"minatar": MINATAR, "atari": ATARI}.get(kind.observations, CARTPOLE)


# ---------------------------------------------------------------- the recipe (sebulba.experiment.recipe)
ALGORITHM = Algorithm(
    "muzero", MuZero, preset,
    presets={"vector/image/tabular": CARTPOLE, "MinAtar": MINATAR, "Atari": ATARI},
    flags={
        "num_simulations": Flag(int, "Simulations of the actors' search per env step."),
        "value_scale": Flag(float, "Gumbel's scale of the completed Q-values in the improved policy (lower: the policy "
                            "target leans less on small Q differences)."),
        "rescale_values": Flag(bool, "Gumbel's completed Q-values rescaled to [0, 1] at each root (the paper's); "
                               "--norescale_values: sigma(q) of the values as they are."),
        "entropy_cost": Flag(float, "Weight of the bonus on the policy's entropy (keeps self-play exploring)."),
        "entropy_decay_steps": Flag(int, "Optimizer steps over which the entropy bonus decays linearly to 0 "
                                    "(default: none, a constant bonus)."),
        "consistency_weight": Flag(float, "Weight of EfficientZero's self-supervised consistency loss between each "
                                   "unrolled latent and the representation of the observation it stands for (0: none)."),
        "epsilon_base": Flag(float, "Exploration floor: env i of N acts at random with probability epsilon_base ** (1 + "
                             "epsilon_alpha i / (N - 1)) (0: the search's action always)."),
        "epsilon_alpha": Flag(float, "The floor's spread over the envs (0: every env at epsilon_base)."),
        "gumbel_scale": Flag(float, "Scale of the Gumbel noise the search samples its action with (0: its best)."),
        "torso": Flag(TORSO_KINDS, "The representation's encoder."),
        "hidden_sizes": Flag(list, "Each function's MLP layer sizes (and the encoder's), e.g. 128,128."),
        "latent_size": Flag(int, "Width of the latent state."),
        "unroll_steps": Flag(int, "K: steps the learner unrolls the model from each position."),
        "td_steps": Flag(int, "n of the n-step value targets."),
        "value_target": Flag(VALUE_TARGETS, "What the value targets bootstrap from: the target network's value "
                             "of the replayed observation, the actor's search root value, or (q_lambda) the target "
                             "network's greedy one-step lookahead in Peng's Q(lambda) returns."),
        "value_lambda": Flag(float, "Lambda of the q_lambda value targets."),
        "support_size": Flag(int, "S: categorical value and reward heads over -S..S of the value-rescaled space (0: "
                             "scalar heads)."),
        "sequence_length": Flag(int, "Replay sequence length (cycles are half of it)."),
        "discount": Flag(float, "Discount gamma."),
        "learning_rate": Flag(float, "Adam learning rate."),
        "batch_size": Flag(int, "Sequences per optimizer step, per learner device."),
        "optims_per_cycle": Flag(int, "Learner steps per actor cycle."),
        "target_update_period": Flag(int, "Learner steps between target-network copies."),
        "replay_capacity": Flag(int, "Sequences per learner device."),
        "min_replay_size": Flag(int, "Sequences per learner device before learning starts."),
        "priority_exponent": REPLAY_FLAGS["priority_exponent"],
    },
    optimizer_steps_per_update=lambda exp: exp.agent.optims_per_cycle,
    steps_per_cycle=lambda config: config.cycle_length,  # half a sequence
)
ALGORITHM.define_flags()
make_experiment = ALGORITHM.make_experiment

if __name__ == "__main__":
    ALGORITHM.main()
