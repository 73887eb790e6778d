"""EnvPool's DMC ids: `DMC_IDS` names every id EnvPool registers (its
`envpool/mujoco/dmc/registration.py`: dm_control's `suite.ALL_TASKS`) with its (domain, task).
Imports nothing: the registry reads it to route ids without loading a task."""

from __future__ import annotations


# EnvPool's DMC list, in its order: (domain, task); every episode 1,000 steps
_ENVPOOL_DMC = (
    ("acrobot", "swingup"), ("acrobot", "swingup_sparse"), ("ball_in_cup", "catch"), ("cartpole", "balance"),
    ("cartpole", "balance_sparse"), ("cartpole", "swingup"), ("cartpole", "swingup_sparse"), ("cartpole", "three_poles"),
    ("cartpole", "two_poles"), ("cheetah", "run"), ("dog", "fetch"), ("dog", "run"), ("dog", "stand"), ("dog", "trot"),
    ("dog", "walk"), ("finger", "spin"), ("finger", "turn_easy"), ("finger", "turn_hard"), ("fish", "swim"),
    ("fish", "upright"), ("hopper", "hop"), ("hopper", "stand"), ("humanoid", "run"), ("humanoid", "run_pure_state"),
    ("humanoid", "stand"), ("humanoid", "walk"), ("humanoid_CMU", "run"), ("humanoid_CMU", "stand"),
    ("humanoid_CMU", "walk"), ("lqr", "lqr_2_1"), ("lqr", "lqr_6_2"), ("manipulator", "bring_ball"),
    ("manipulator", "bring_peg"), ("manipulator", "insert_ball"), ("manipulator", "insert_peg"), ("pendulum", "swingup"),
    ("point_mass", "easy"), ("point_mass", "hard"), ("quadruped", "escape"), ("quadruped", "fetch"), ("quadruped", "run"),
    ("quadruped", "walk"), ("reacher", "easy"), ("reacher", "hard"), ("stacker", "stack_2"), ("stacker", "stack_4"),
    ("swimmer", "swimmer6"), ("swimmer", "swimmer15"), ("walker", "run"), ("walker", "stand"), ("walker", "walk"),
)  # fmt: skip


def dmc_id(domain: str, task: str) -> str:
    """EnvPool's id of a suite task: each word capitalised, joined, `-v1` (`ball_in_cup`, `catch`:
    `BallInCupCatch-v1`)."""
    words = [w[:1].upper() + w[1:] for w in (*domain.split("_"), *task.split("_"))]
    return "".join(words) + "-v1"


DMC_IDS: dict[str, tuple[str, str]] = {dmc_id(d, t): (d, t) for d, t in _ENVPOOL_DMC}
