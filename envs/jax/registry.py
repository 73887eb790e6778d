"""Which ids are JAX-native (`SUITE/ID`) and how to build them."""

from __future__ import annotations

from typing import Any

from envs.jax.core import JaxEnv

SUITES = ("gymnax",)  # reserved names: never Gymnasium namespaces


def is_jax_id(task_id: Any) -> bool:
    """Whether task_id names a JAX-native env (`SUITE/ID` with a reserved suite name)."""
    return isinstance(task_id, str) and task_id.partition("/")[0] in SUITES and "/" in task_id


def make_jax_env(task_id: str, max_episode_steps: int | None = None, **kwargs: Any) -> JaxEnv:
    """The batched JaxEnv of a `SUITE/ID`; kwargs are the suite's env parameters. A built-in
    task the compiled kernel steps (`CartPole-v1`, ...; not a JAX id: it runs on the host pool
    unless the Anakin loop is asked for) is its stateless compiled env (envs/native/stateless.py)."""
    if isinstance(task_id, str) and "/" not in task_id:
        from envs.native.kernel_pool import TASK_CODES

        if task_id in TASK_CODES:
            from envs.native.stateless import StatelessEnv

            if kwargs:
                raise ValueError(f"{task_id} takes no env parameters here, got {', '.join(sorted(kwargs))}")
            return JaxEnv(StatelessEnv(task_id), max_episode_steps)
    if not is_jax_id(task_id):
        raise ValueError(f"{task_id!r} is not a JAX-native env id (SUITE/ID with SUITE one of {', '.join(SUITES)})")
    suite, _, name = task_id.partition("/")
    if suite == "gymnax":
        from envs.jax.gymnax import GymnaxEnv

        return JaxEnv(GymnaxEnv(name, **kwargs), max_episode_steps)
    raise AssertionError(suite)
