"""The backend contract: every member a pool reads from the object that steps its envs, each with
its default, in this one place (as EnvPool's `EnvPoolMixin` holds its pools' shared members).

`BackendBase` declares what any pool reads (spaces, info, seeding rules, optional capabilities);
`Backend` adds the step interface `EnvPool` drives: `send`, `collect`, `gather`. Every backend
`envs/backends.py` starts inherits one of them, so the pool reads each member as a plain attribute
and never probes for it. The compiled native pool (`envs/native/kernel_pool.py`) is a
`BackendBase` only: its pool class calls its own step interface.

A new backend subclasses `Backend`, sets its two spaces in `__init__`, writes the four abstract
methods, and overrides a default only where it differs. An optional capability (reseeding,
snapshots, rendering, compiled XLA targets) is None where a backend has none, and the pool then
refuses the call with its own message (or, for XLA targets, uses envs/xla.py's).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

if TYPE_CHECKING:
    from envs.ready import Batch, Chunk
    from envs.resets import Seeds

_NONE: Mapping[str, np.dtype] = MappingProxyType({})


class BackendBase(abc.ABC):
    """The members every pool reads from its backend, with their defaults."""

    # One env's spaces (a multi-player env's: one player's), set by every backend.
    observation_space: gym.spaces.Space
    action_space: gym.spaces.Space

    # Info arrays on every batch beyond env_id and elapsed_step, with their dtypes (Atari: lives,
    # the raw reward): `EnvSpec.extra_info`, and fields of a dm pool's observation.
    extra_info: Mapping[str, np.dtype] = _NONE
    # A multi-player task's players in row order (PettingZoo's possible_agents); () if unnamed.
    player_names: tuple[str, ...] = ()
    # True: a send must name exactly the envs of the last batch received, and an async pool resets
    # all envs at once (ALE's vector env, which takes one action per env of that batch).
    lockstep: bool = False
    # True: `reset(options=...)`'s options (other than reset_mask) reach the envs' own reset.
    reset_options: bool = False
    # The largest seed the envs take (None: any seed envs.resets accepts).
    max_seed: int | None = None
    # {key: dtype} of the envs' own one-number info keys, which the XLA interface's state carries
    # beyond extra_info (envs/xla.py).
    info_dtypes: Mapping[str, np.dtype] = _NONE

    # Optional capabilities; None: the backend has none, and the pool refuses the call (xla() then
    # uses envs/xla.py's targets instead).
    # prime_reset(ids, seeds, options): the next reset of envs ids uses seeds (one per env of the
    # pool, by env id; None: keep its stream) and options (passed on where `reset_options`).
    prime_reset: Callable[[np.ndarray, Seeds | None, dict[str, Any] | None], None] | None = None
    # snapshot() -> state, restore(state): the whole env state, for `EnvPool.snapshot`/`restore`.
    snapshot: Callable[[], Any] | None = None
    restore: Callable[..., None] | None = None
    # render(ids) -> (len(ids), H, W, 3) uint8 frames (pools made with render_mode="rgb_array").
    render: Callable[[np.ndarray], np.ndarray] | None = None
    # make_xla(pool) -> (handle, recv, send, step) of the EnvPool pool: compiled XLA targets of its own.
    make_xla: Callable[[Any], tuple[Any, Any, Any, Any]] | None = None
    # xla_backend() -> another backend of the same envs, with compiled XLA targets, that `xla()` hands
    # the pool to when no env was sent yet (the native Atari pool hands over to ALE's vector env).
    xla_backend: Callable[[], Backend] | None = None

    @abc.abstractmethod
    def close(self) -> None:
        """Stop the envs and free what they hold (the pool calls it once)."""


class Backend(BackendBase):
    """A backend that `EnvPool` steps: envs are sent, then collected as they finish."""

    @abc.abstractmethod
    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        """Start stepping (or resetting) envs ids (None: all envs, in order)."""

    @abc.abstractmethod
    def collect(self, block: bool) -> list[Chunk]:
        """Envs finished since the last call; with block, waits until at least one is."""

    @abc.abstractmethod
    def gather(self, ids: np.ndarray | None) -> Batch:
        """Copies of finished envs' results held in the backend's buffers (None: all envs)."""
