"""The table of built-in tasks."""

from envs.native.base import NativeTask
from envs.native.cartpole import CartPole

NATIVE_TASKS: dict[str, type[NativeTask]] = {t.task_id: t for t in (CartPole,)}
