"""Gymnasium's MuJoCo v5 tasks, native: MuJoCo's physics in a threaded C kernel, the tasks' math in numpy.

`MUJOCO_TASKS` names the ids served here (without importing mujoco); envs/mujoco/backend.py
builds the pools.
"""

MUJOCO_TASKS = (
    "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Swimmer-v5", "Ant-v5", "Humanoid-v5", "HumanoidStandup-v5",
    "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Pusher-v5",
)
