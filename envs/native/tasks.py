"""The table of built-in tasks."""

from envs.native.acrobot import Acrobot
from envs.native.base import NativeTask
from envs.native.cartpole import CartPole, CartPoleNoVelocity
from envs.native.mountain_car import MountainCar, MountainCarContinuous
from envs.native.pendulum import Pendulum, PendulumV0
from envs.native.pendulum import register as register_pendulum_v0
from envs.native.signal_corridor import SignalCorridor, register

register()  # SignalCorridor-v0 is ours: its Gymnasium id is what backend="process" runs
register_pendulum_v0()  # Pendulum-v0 is EnvPool's (gym 0.21's): Gymnasium has only v1

NATIVE_TASKS: dict[str, type[NativeTask]] = {
    t.task_id: t
    for t in (CartPole, CartPoleNoVelocity, Acrobot, MountainCar, MountainCarContinuous, Pendulum, PendulumV0,
              SignalCorridor)
}

TASK_CODES = {  # the task enum of kernel/classic_control.h
    "CartPole-v1": 0,
    "CartPoleNoVelocity-v1": 1,
    "Acrobot-v1": 2,
    "MountainCar-v0": 3,
    "MountainCarContinuous-v0": 4,
    "Pendulum-v1": 5,
    "Pendulum-v0": 6,
}
assert set(TASK_CODES) <= set(NATIVE_TASKS)  # the others (Dict observations) run on the numpy path
