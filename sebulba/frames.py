"""Stacked image observations rebuilt from single frames: pure functions on arrays, used by the
loop (which stacks on the actor device: `sebulba/loop/framestack.py`) and by agents that keep
single frames in their experience (R2D2's replay). They sit beside the types, below both."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

FRAME_AXIS = -3  # observations are channel-first: [..., S * c, H, W]


class Frames(NamedTuple):
    """An observation as the inferencer records it when stacking on the device."""

    frame: jax.Array  # [..., c, H, W]: the newest frame alone
    restart: jax.Array  # bool [...]: the stack is zeroed before this frame (a game reset)


def push(stack: jax.Array, frames: Frames) -> jax.Array:
    """The stacks [B, S * c, H, W] after frames [B, c, H, W] arrive: the oldest frame drops out,
    or, where restart is set, every earlier frame becomes zeros."""
    c = frames.frame.shape[FRAME_AXIS]
    older = stack[..., c:, :, :]
    older = jnp.where(frames.restart[..., None, None, None], jnp.zeros_like(older), older)
    return jnp.concatenate([older, frames.frame], FRAME_AXIS)


def history(stack: jax.Array, channels: int) -> jax.Array:
    """The S - 1 newest frames of stacks [B, S * c, H, W], time-major: [S - 1, B, c, H, W]."""
    b, sc, h, w = stack.shape
    return jnp.moveaxis(stack.reshape(b, sc // channels, channels, h, w)[:, 1:], 1, 0)


def restack(history: jax.Array, frames: Frames) -> jax.Array:
    """Stacked observations [T, B, S * c, H, W] of frames [T, B, c, H, W], given the S - 1
    frames before them ([S - 1, B, c, H, W]): the same as pushing the frames one by one."""
    s, t = history.shape[0] + 1, frames.frame.shape[0]
    seq = jnp.concatenate([history, frames.frame], 0)  # [S - 1 + T, B, c, H, W]
    restarts = jnp.concatenate([jnp.zeros((s - 1, *frames.restart.shape[1:]), bool), frames.restart], 0)
    # Observation i holds seq[i : i + S]; frame j of it survives unless a later frame of the
    # window restarted the stack.
    keep = jnp.ones(frames.restart.shape, bool)
    parts = [seq[s - 1:s - 1 + t]]
    for j in range(s - 2, -1, -1):
        keep = keep & ~restarts[j + 1:j + 1 + t]
        parts.append(jnp.where(keep[..., None, None, None], seq[j:j + t], jnp.zeros_like(seq[j:j + t])))
    return jnp.concatenate(parts[::-1], FRAME_AXIS)
