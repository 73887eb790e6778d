"""The built-in classic-control tasks as a stateless compiled JAX env (a `RawJaxEnv`), for the
Anakin loop: `make_jax_env("CartPole-v1")` is a `JaxEnv` over `StatelessEnv("CartPole-v1")`.

reset and step are XLA FFI custom calls into the compiled kernel (kernel/stateless.cc), which runs
the per-env code of the compiled pool (kernel/classic_control.h), so a fixed action sequence gives
the pool's observations, rewards and ends bit for bit, resets included (and so Gymnasium's). The
env state goes in and out as arrays (`KernelState`): the calls have no effect and keep nothing,
so JAX may batch (`vmap` makes one call for the whole batch), shard (`shard_map` over N devices),
donate, checkpoint and reorder them. Compare `pool.xla()` (kernel_xla.py), whose calls act on the
pool's hidden state through an ordered-IO token, which JAX refuses on more than one device.

Seeds. `reset(key)` is Gymnasium's `reset(seed=s)` with s the key's data read as one 64-bit
integer (high word first): `reset(jax.random.key(s))` is env `default_rng(s)`, so the pool
`envs.make(task_id, num_envs=n, seed=s)`'s env g is `reset(jax.random.key(s + g))`.
`seeded_reset(env, s, n, first_index)` starts a JaxEnv's lanes that way (JaxEnv.reset keys env g
with `fold_in(key, g)` instead: other streams, the same distribution). After an episode ends, the
next one continues the env's own random stream (`restart`, which JaxEnv calls for its auto-reset),
as the pool and Gymnasium's `reset()` without a seed do; the reset key JaxEnv passes is not used.

The kernel's targets are registered for the CPU: the env runs in CPU programs (on accelerators,
use gymnax's float32 ports, `gymnax/CartPole-v1` & co.). Where the compiled kernel cannot be had
(no compiler, `SEBULBA_NATIVE_KERNEL=0`), the pool falls back to numpy, but this env cannot:
making it raises one line that says why.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.jax.core import JaxEnv, Lanes, Step
from envs.native.kernel import build
from envs.native.kernel.build import KernelUnavailable  # raised, one line, when the kernel cannot be had
from envs.native.tasks import NATIVE_TASKS, TASK_CODES


class KernelState(NamedTuple):
    """One env's state, as uint32 words (see kernel/stateless.cc): plain arrays, so a batch of
    them shards along its leading axis, donates and checkpoints like any other."""

    variables: jax.Array  # uint32 [2 * rows]: the task's float64 state variables' bytes (`variables_of` reads them)
    rng: jax.Array  # uint32 [8]: the env's PCG64 (state, then increment; least significant word first)
    fresh: jax.Array  # bool []: MountainCarContinuous's "still float64" flag (False for the other tasks)


def variables_of(state: KernelState) -> np.ndarray:
    """The task's float64 state variables (host numpy, [..., rows]), in the numpy task's row order."""
    words = np.ascontiguousarray(np.asarray(state.variables, np.uint32))
    return words.view("<f8")


@functools.cache
def _register() -> None:
    """Loads the compiled kernel and registers its stateless targets (once per process)."""
    if not build.enabled():
        raise KernelUnavailable("the stateless built-in tasks need the compiled kernel, which SEBULBA_NATIVE_KERNEL=0 turns off")
    lib, reason = build._load_once()
    if lib is None:
        raise KernelUnavailable(f"the stateless built-in tasks need the compiled kernel, which is unavailable here ({reason})")
    for op in ("seed", "reset", "step"):
        jax.ffi.register_ffi_target(f"envs_stateless_{op}", jax.ffi.pycapsule(getattr(lib, f"cc_stateless_{op}")), platform="cpu")


def _call(op: str, results: Any, *args: Any, **attrs: Any) -> Any:
    # No side effect: pure custom calls. broadcast_all: vmap hands the whole batch to one call.
    return jax.ffi.ffi_call(f"envs_stateless_{op}", results, vmap_method="broadcast_all")(*args, **attrs)


class StatelessEnv:
    """A RawJaxEnv over one built-in task (one env, unbatched; `JaxEnv` batches it)."""

    def __init__(self, task_id: str):
        if task_id not in TASK_CODES:
            known = ", ".join(sorted(TASK_CODES))
            raise ValueError(f"{task_id!r} is not a built-in task the compiled kernel steps (one of {known})")
        if jax.default_backend() != "cpu":
            raise KernelUnavailable(f"the stateless {task_id} runs in CPU programs only (JAX's default backend here is "
                                    f"{jax.default_backend()}); on accelerators use gymnax/{task_id} & co.")  # fmt: skip
        _register()
        task = NATIVE_TASKS[task_id]
        self.task_id = task_id
        self.observation_space: gym.spaces.Box = task.observation_space()
        self.action_space: gym.spaces.Space = task.action_space()
        self.max_episode_steps: int | None = task.max_episode_steps
        self._code = np.int32(TASK_CODES[task_id])
        self._rows = task.state_rows
        self._discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self._obs = jax.ShapeDtypeStruct(self.observation_space.shape, jnp.float32)

    def _seed_words(self, key: jax.Array) -> jax.Array:
        if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        if key.shape != (2,) or key.dtype != jnp.uint32:
            raise ValueError(f"{self.task_id}: reset needs a threefry key (key data uint32[2], JAX's default), "
                             f"got {key.dtype}{list(key.shape)}")  # fmt: skip
        return key

    def _start(self, rng: jax.Array) -> tuple[KernelState, jax.Array]:
        u32, flag = jnp.uint32, jax.ShapeDtypeStruct((), jnp.bool_)
        out = (jax.ShapeDtypeStruct((2 * self._rows,), u32), jax.ShapeDtypeStruct((8,), u32), flag, self._obs)
        variables, rng, fresh, obs = _call("reset", out, rng, task=self._code)
        return KernelState(variables, rng, fresh), obs

    def reset(self, key: jax.Array) -> tuple[KernelState, jax.Array]:
        """Gymnasium's reset(seed=s), s = the key's data as one 64-bit integer (high word first)."""
        rng = _call("seed", jax.ShapeDtypeStruct((8,), jnp.uint32), self._seed_words(key))
        return self._start(rng)

    def restart(self, state: KernelState, key: jax.Array) -> tuple[KernelState, jax.Array]:
        """The next episode of an env whose episode ended: its reset noise continues the env's own
        stream, as Gymnasium's reset() without a seed (the key is not used)."""
        return self._start(state.rng)

    def pool_reset(self, env: JaxEnv, seed: int, num_envs: int, first_index: int | jax.Array = 0) -> tuple[Lanes, Step]:
        """`JaxEnv.reset_as_pool`'s rule here: env g seeded seed + g, as the pool's (`seeded_reset`)."""
        return seeded_reset(env, seed, num_envs, first_index)

    def step(self, state: KernelState, action: jax.Array) -> tuple[KernelState, jax.Array, jax.Array, jax.Array, jax.Array]:
        action = self._checked(action)
        variables, fresh, obs, reward, terminated = _call(
            "step",
            (jax.ShapeDtypeStruct(state.variables.shape, jnp.uint32), jax.ShapeDtypeStruct((), jnp.bool_), self._obs,
             jax.ShapeDtypeStruct((), jnp.float32), jax.ShapeDtypeStruct((), jnp.bool_)),
            state.variables, state.fresh, action, task=self._code,
        )  # fmt: skip
        return KernelState(variables, state.rng, fresh), obs, reward, terminated, jnp.bool_(False)

    def _checked(self, action: Any) -> jax.Array:
        """One env's action as the kernel takes it (int32 [] or float32 [1]). The dtype kinds the
        pool takes (integer or bool for Discrete, float or integer for Box); the wrong shape or
        kind is refused here, at trace time, in one line; out-of-range values fail in the kernel,
        with the pool's message."""
        action = jnp.asarray(action)
        kind, want = np.dtype(action.dtype).kind, self.action_space.shape
        if action.shape != want or kind not in ("iub" if self._discrete else "fiu"):
            what = "one integer" if self._discrete else f"float of shape {want}"
            raise ValueError(f"{self.task_id}: an env's action must be {what} ({self.action_space}), "
                             f"got {action.dtype}{list(action.shape)}")  # fmt: skip
        return action.astype(jnp.int32 if self._discrete else jnp.float32)


def seeded_reset(env: JaxEnv, seed: int | jax.Array, num_envs: int, first_index: int | jax.Array = 0) -> tuple[Lanes, Step]:
    """Lanes of a JaxEnv over a StatelessEnv whose env g (g = first_index .. first_index +
    num_envs - 1) is env g of the pool `envs.make(task_id, num_envs=..., seed=seed)` after its
    reset(): seeded `seed + g` (seed: a Python int in [0, 2**64), or a traced uint32/int32).
    The lanes' reset keys are `fold_in(key, g)` of the key whose data is the seed (unused by the
    stateless env, whose later episodes continue each env's own stream)."""
    if not isinstance(env.raw, StatelessEnv):
        raise ValueError(f"seeded_reset needs a built-in task's stateless env, got {env.task_id!r}")
    if isinstance(seed, (int, np.integer)):
        if not 0 <= int(seed) < 2**64:
            raise ValueError(f"seed must be in [0, 2**64), got {seed}")
        hi, lo = (jnp.uint32(w) for w in divmod(int(seed), 2**32))
    else:
        hi, lo = jnp.uint32(0), jnp.asarray(seed).astype(jnp.uint32)
    return _seeded_reset(env, num_envs, hi, lo, first_index)


@functools.partial(jax.jit, static_argnums=(0, 1))  # one compiled program when called eagerly
def _seeded_reset(env: JaxEnv, num_envs: int, hi: jax.Array, lo: jax.Array, first_index: int | jax.Array) -> tuple[Lanes, Step]:
    index = jnp.asarray(first_index).astype(jnp.uint32) + jnp.arange(num_envs, dtype=jnp.uint32)
    env_lo = lo + index
    words = jnp.stack([hi + (env_lo < index).astype(jnp.uint32), env_lo], axis=-1)  # seed + g, carried into the high word
    state, obs = jax.vmap(env.raw.reset)(words)
    base = jax.random.wrap_key_data(jnp.stack([hi, lo]))
    key = jax.vmap(lambda g: jax.random.key_data(jax.random.fold_in(base, g)))(index)
    false = jnp.zeros(num_envs, bool)
    return Lanes(state, key, jnp.zeros(num_envs, jnp.int32), false), Step(obs, jnp.zeros(num_envs, jnp.float32), false, false, ~false)
