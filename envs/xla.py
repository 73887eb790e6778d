"""EnvPool's XLA interface (envpool.readthedocs.io): `handle, recv, send, step = pool.xla()`.

The three functions are pure in form (a handle in, a new handle out) so a whole actor loop,
policy and env together, compiles into one XLA program under `jit`, `lax.scan` or
`lax.fori_loop`. Each call is an *ordered* `io_callback` into the pool's own Python API, so:
the calls run in program order and none is removed as dead code (a send whose handle is
dropped still runs); results equal the Python API's for the same seed and actions; every
check of the Python API applies (a misuse raises inside the program, and the error reaches the
caller of the jitted function); and on an accelerator, arrays move between device and host
inside the call. The cost is one host callback per call; BENCHMARKS.md measures it.

A jitted program needs a fixed state structure, while a Gymnasium env's info keys may vary
from step to step (the process backend passes them on as they come). So the state's info holds
a fixed set of keys: env_id, elapsed_step, players.env_id, the task's extra info (Atari: lives, raw reward), and
the env's info keys that hold one number, as a probe env shows them when `xla()` is called (see
`ProcessBackend.info_dtypes`; CliffWalking: prob, float). Each batch is fitted to that: a fixed
key some env did not return reads 0 there, masks are not carried, and keys outside the set
(strings, arrays, nested dicts, keys the probe did not show) are dropped, with one
RuntimeWarning naming them; a value that cannot be converted to its fixed dtype (a string in a
float key) or has another shape raises a ValueError naming the key.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

import dm_env
import numpy as np

from envs.info import dm_observation
from envs.players import PLAYERS
from envs.tree import build

_POOL_IDS = itertools.count(1)


def state_template(pool: Any, n: int) -> Any:
    """The structure of recv()/step()'s output for a batch of n envs, as ShapeDtypeStructs."""
    import jax

    def leaf(shape: tuple[int, ...], dtype: Any) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, jax.dtypes.canonicalize_dtype(dtype))

    obs = build(lambda _, space: leaf((n, *space.shape), space.dtype), pool.observation_space)
    # The env's own info keys: only the process backend has them (it builds a probe env for this).
    fixed = {**pool.extra_info, **pool._backend.info_dtypes}
    extra = {k: leaf((n, *np.dtype(dt).shape), np.dtype(dt).base) for k, dt in fixed.items()}  # (n, k): a subarray dtype
    extra[PLAYERS] = {"env_id": leaf((n,), np.int32)}  # xla() is single-player: EnvPool's players.env_id
    if pool.config["env_type"] == "dm":
        observation = dm_observation(obs, leaf((n,), np.int32), leaf((n,), np.int32), extra, pool.spec.dm_observation_fields)
        return dm_env.TimeStep(leaf((n,), np.int32), leaf((n,), np.float32), leaf((n,), np.float32), observation)
    info = {"env_id": leaf((n,), np.int32), "elapsed_step": leaf((n,), np.int32), **extra}
    return (obs, leaf((n,), np.float32), leaf((n,), bool), leaf((n,), bool), info)


class _Fitter:
    """Fits a recv/step output to the fixed structure of the XLA state (see the module docstring)."""

    def __init__(self, template: Any, name: str):
        self._dm = isinstance(template, dm_env.TimeStep)
        fields = template.observation._asdict() if self._dm else template[-1]
        self._type = type(template.observation) if self._dm else dict
        self._leaves = dict(fields)
        self._name = name
        self._warned = False

    def __call__(self, out: Any) -> Any:
        if self._dm:
            return out._replace(observation=self._type(**self._fit(out.observation._asdict())))
        return (*out[:-1], self._fit(out[-1]))

    def _fit(self, got: dict[str, Any]) -> dict[str, Any]:
        """got's values of the fixed keys (zeros where missing); warns once about the others."""
        fitted = {k: self._leaf(k, got[k], leaf) if k in got else _zeros(leaf) for k, leaf in self._leaves.items()}
        dropped = [k for k in got if k not in self._leaves]
        if dropped and not self._warned:
            self._warned = True
            warnings.warn(
                f"{self._name}: info keys {dropped} are not in the XLA state (its keys are fixed at xla(): "
                f"{list(self._leaves)}); they are dropped there (the Python API returns them)",
                RuntimeWarning,
                stacklevel=2,
            )
        return fitted

    def _leaf(self, key: str, value: Any, leaf: Any) -> Any:
        """value fitted to leaf, a fixed key's array, or its nested fields (`players`: a dict, in a
        dm observation a namedtuple)."""
        if isinstance(leaf, dict):
            return {k: self._leaf(f"{key}.{k}", value[k], sub) for k, sub in leaf.items()}
        if hasattr(leaf, "_asdict"):
            return type(leaf)(*(self._leaf(f"{key}.{k}", getattr(value, k), sub) for k, sub in leaf._asdict().items()))
        return self._value(key, value, leaf)

    def _value(self, key: str, value: Any, leaf: Any) -> np.ndarray:
        try:
            v = np.asarray(value, leaf.dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"{self._name}: info key {key!r} ({_describe(value)}) does not fit the XLA state's {leaf.dtype} "
                f"(fixed at xla()): {e}"
            ) from e
        if v.shape != leaf.shape:
            raise ValueError(
                f"{self._name}: info key {key!r} has shape {v.shape}; the XLA state's is {leaf.shape} (fixed at xla())"
            )
        return v


def _zeros(leaf: Any) -> Any:
    """leaf's structure, zeros in every array."""
    import jax

    return jax.tree_util.tree_map(lambda x: np.zeros(x.shape, x.dtype), leaf)


def _describe(v: Any) -> str:
    return f"{v.dtype} array of shape {v.shape}" if isinstance(v, np.ndarray) else type(v).__name__


def make_xla(pool: Any) -> tuple[Any, Callable, Callable, Callable]:
    """(handle, recv, send, step) for pool; see the module docstring."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import io_callback

    pool_id = next(_POOL_IDS)
    template = state_template(pool, pool.batch_size)
    handle_spec = jax.ShapeDtypeStruct((), jnp.int32)
    leaves, treedef = jax.tree_util.tree_flatten(template)
    dtypes = [np.dtype(x.dtype) for x in leaves]
    name = pool.config["task_id"]
    fit = _Fitter(template, name)

    def check(handle: np.ndarray) -> None:
        if int(handle) != pool_id:
            raise ValueError(f"this handle does not belong to this {name} pool's xla() functions (handle {int(handle)}, pool {pool_id})")

    def as_state(out: Any) -> Any:
        flat = jax.tree_util.tree_leaves(fit(out))
        return jax.tree_util.tree_unflatten(treedef, [np.asarray(x, dt) for x, dt in zip(flat, dtypes)])

    def recv_cb(handle: np.ndarray) -> tuple[np.ndarray, Any]:
        check(handle)
        return np.asarray(handle), as_state(pool.recv())

    def send_cb(handle: np.ndarray, action: np.ndarray, env_id: np.ndarray | None = None) -> np.ndarray:
        check(handle)
        pool.send(np.asarray(action), None if env_id is None else np.asarray(env_id))
        return np.asarray(handle)

    def step_cb(handle: np.ndarray, action: np.ndarray, env_id: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        check(handle)
        return np.asarray(handle), as_state(pool.step(np.asarray(action), None if env_id is None else np.asarray(env_id)))

    def recv(handle: jax.Array) -> tuple[jax.Array, Any]:
        return io_callback(recv_cb, (handle_spec, template), handle, ordered=True)

    def send(handle: jax.Array, action: jax.Array, env_id: jax.Array | None = None) -> jax.Array:
        args = (handle, action) if env_id is None else (handle, action, env_id)
        return io_callback(send_cb, handle_spec, *args, ordered=True)

    def step(handle: jax.Array, action: jax.Array, env_id: jax.Array | None = None) -> tuple[jax.Array, Any]:
        args = (handle, action) if env_id is None else (handle, action, env_id)
        return io_callback(step_cb, (handle_spec, template), *args, ordered=True)

    return jnp.asarray(pool_id, jnp.int32), recv, send, step
