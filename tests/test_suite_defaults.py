"""Every JAX suite of the dev extra trains with the entry point's defaults (its preset, the automatic
torso, the Anakin loop), as a user's first `python -m experiments.ppo --env SUITE/ID` does: one
update's worth of env steps (a few hundred asked, one cycle given), through the CLI. XLand-MiniGrid's
[2, 7, 7] views and Navix's [3, 5, 5] go through the small CNN for grids; gymnax's MinAtar planes
the MLP; jumanji's dicts one encoder per leaf; JaxMARL's players rows; pgx's seats rows with a mask; Playground (and brax, which
comes with it) continuous actions."""

import csv
import math

import pytest

from tests.support.cli import run_experiment

# One id per suite, the docs' example for it. navix is not in the dev extra (it pulls 83 MB of
# linters and tfp-nightly): checked where installed.
# IMPALA too on a grid world's small images (its automatic torso is PPO's).
RUNS = [
    ("ppo", "gymnax/Breakout-MinAtar"),
    ("ppo", "jumanji/Snake-v1"),
    ("ppo", "jaxmarl/MPE_simple_spread_v3"),
    ("ppo", "pgx/connect_four"),  # self-play on a board game's seats, the policy masked to the legal moves
    ("ppo", "xminigrid/MiniGrid-Empty-8x8"),
    ("impala", "xminigrid/MiniGrid-Empty-8x8"),
    ("ppo", "playground/CartpoleBalance"),
    ("ppo", "brax/inverted_pendulum"),
    pytest.param("ppo", "navix/Navix-Empty-5x5-v0", id="ppo-navix (where installed)"),
]


@pytest.mark.slow(seconds=20)
@pytest.mark.parametrize("agent, env_id", RUNS)
def test_a_dev_suite_trains_with_the_defaults(tmp_path, agent, env_id):
    if env_id.startswith("navix/"):
        pytest.importorskip("navix")
    out = run_experiment(f"experiments.{agent}", f"--env={env_id}", "--total_env_steps=300", f"--logdir={tmp_path}",
                         "--noprogress", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Anakin loop" in out.stdout + out.stderr
    (run_dir,) = tmp_path.iterdir()
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert rows and int(rows[-1]["env_steps"]) >= 300
    assert all(math.isfinite(float(rows[-1][k])) for k in ("loss", "entropy", "grad_norm")), rows[-1]
    assert any((run_dir / "checkpoints").iterdir())
