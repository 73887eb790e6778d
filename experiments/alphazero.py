"""AlphaZero on pgx's board games in the Anakin loop: self-play where each mover plans with the
game's true model (Gumbel AlphaZero's search on mctx). Needs the pgx extra: pip install -e '.[pgx]'.

    python -m experiments.alphazero                               # pgx/connect_four on the CPU
    python -m experiments.alphazero --env pgx/tic_tac_toe
    python -m experiments.evaluate runs/<the run> --opponent mcts # against a 200-simulation pure MCTS
    python -m experiments.alphazero --help

Every run writes a directory under --logdir with flags.json, metrics.csv, TensorBoard events and
learning_curve.png (the return of self-play is 0: read the evaluation's win rates instead).
"""

from __future__ import annotations

from sebulba.agents.alphazero.agent import AlphaZero
from sebulba.agents.alphazero.config import AlphaZeroConfig
from sebulba.experiment.flags import Flag
from sebulba.experiment.presets import Preset
from sebulba.experiment.recipe import Algorithm
from sebulba.game_model import GameModel

# ---------------------------------------------------------------- presets
# Two-player board games (pgx/connect_four first; issue 57's bars: >= 95% wins against a random
# player as either seat, >= 70% against a 200-simulation pure MCTS, within 20 minutes here).
# 64 envs x 64 plies a cycle, 16 simulations of Gumbel AlphaZero's search a move, 32 optimizer
# steps of 256 positions a cycle (4: undertrained), the first 4 plies of each self-play game random
# (without them self-play collapsed into one drawn game at 2M env steps). Seed 0 at 4M env steps
# (about 5 minutes here): 100%/100% against random play, 96%/90% against a 200-simulation pure MCTS
# (player_0/player_1; benchmarks/bench_alphazero.py has seeds 0-2).
BOARD_GAMES = Preset(
    total_env_steps=4_000_000, num_envs=64, steps_per_cycle=64, async_mode=False, inferencers_per_device=1,
    log_every_s=5.0, agent=AlphaZeroConfig(optims_per_cycle=32, random_opening_plies=4),
)


def preset(env_id: str, env_kwargs: dict | None = None) -> Preset:
    """BOARD_GAMES for a turn-based JAX game (pgx's); any other env is refused here, in one line,
    before anything is built."""
    if env_kwargs:
        raise ValueError(f"{env_id} takes no env parameters here, got {', '.join(sorted(env_kwargs))}")
    GameModel.of(env_id)
    return BOARD_GAMES


# ---------------------------------------------------------------- the recipe (sebulba.experiment.recipe)
ALGORITHM = Algorithm(
    "alphazero", AlphaZero, preset,
    presets={"board games": BOARD_GAMES},
    flags={
        "steps_per_cycle": Flag(int, "Plies per env in a cycle (a game's outcome is learned when it ends within one)."),
        "num_simulations": Flag(int, "Simulations of self-play's search per move."),
        "random_opening_plies": Flag(int, "Self-play's first plies of each game: uniformly random legal moves."),
        "eval_simulations": Flag(int, "Simulations of the evaluation policy's search per move (default: num_simulations)."),
        "learning_rate": Flag(float, "Adam learning rate."),
        "batch_size": Flag(int, "Positions per optimizer step, per learner device."),
        "optims_per_cycle": Flag(int, "Learner steps per cycle."),
        "replay_capacity": Flag(int, "Positions per learner device."),
        "min_replay_size": Flag(int, "Positions per learner device before learning starts."),
    },
    optimizer_steps_per_update=lambda exp: exp.agent.optims_per_cycle,
    default_env="pgx/connect_four",
)
ALGORITHM.define_flags()
make_experiment = ALGORITHM.make_experiment

if __name__ == "__main__":
    ALGORITHM.main()
