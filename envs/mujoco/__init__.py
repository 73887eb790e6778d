"""Gymnasium's MuJoCo tasks, native: MuJoCo's physics in a threaded C kernel, the tasks' math in numpy.

`MUJOCO_TASKS` names the v5 ids served here (envs/mujoco/tasks.py), `LEGACY_MUJOCO_TASKS` EnvPool's
v4 and older ids (envs/mujoco/legacy.py), both without importing mujoco; envs/mujoco/backend.py
builds the pools.
"""

MUJOCO_TASKS = (
    "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Swimmer-v5", "Ant-v5", "Humanoid-v5", "HumanoidStandup-v5",
    "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Pusher-v5",
)
LEGACY_MUJOCO_TASKS = (
    "Ant-v4", "HalfCheetah-v4", "Hopper-v4", "Humanoid-v4", "HumanoidStandup-v4", "InvertedDoublePendulum-v4",
    "InvertedPendulum-v4", "Pusher-v4", "Reacher-v4", "Swimmer-v4", "Walker2d-v4",
    "Ant-v3", "HalfCheetah-v3", "Hopper-v3", "Humanoid-v3", "HumanoidStandup-v2", "InvertedDoublePendulum-v2",
    "InvertedPendulum-v2", "Pusher-v2", "Reacher-v2", "Swimmer-v3", "Walker2d-v3",
)
