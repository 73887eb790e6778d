"""MuJoCo's warnings as Python log records. MuJoCo's own handler prints each warning and appends
it to MUJOCO_LOG.TXT in the working directory, which a run would leave behind; every pool and JAX
suite here that loads MuJoCo models (the native pool, brax, Playground) routes them instead."""

from __future__ import annotations

import logging

# MuJoCo 4.0 warns on every load of Gymnasium's (and brax's, Playground's) XML files: dropped.
QUIET = ("compiler attribute 'settotalmass' is deprecated",)
log = logging.getLogger("envs.mujoco")


def route_warnings() -> None:
    """MuJoCo's warnings (its C code's `mju_warning`, from any thread) to the `envs.mujoco` logger,
    but QUIET's. Once per process; a handler the user set (`mujoco.set_mju_user_warning`) is kept."""
    import mujoco

    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_warn)


def _warn(message: str) -> None:
    if not any(q in message for q in QUIET):
        log.warning(f"MuJoCo: {message.strip()}")
