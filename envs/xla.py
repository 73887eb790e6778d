"""EnvPool's XLA interface (seed 000): `handle, recv, send, step = pool.xla()`.

The three functions are pure in form (a handle in, a new handle out) so a whole actor loop,
policy and env together, compiles into one XLA program under `jit`, `lax.scan` or
`lax.fori_loop`. Each call is an *ordered* `io_callback` into the pool's own Python API, so:
the calls run in program order and none is removed as dead code (a send whose handle is
dropped still runs); results equal the Python API's for the same seed and actions; every
check of the Python API applies (a misuse raises inside the program, and the error reaches the
caller of the jitted function); and on an accelerator, arrays move between device and host
inside the call. The cost is one host callback per call; BENCHMARKS.md measures it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import dm_env
import numpy as np

if TYPE_CHECKING:
    from envs.pool import EnvPool

_POOL_IDS = itertools.count(1)


def _state_template(pool: EnvPool, n: int) -> Any:
    """The structure of recv()/step()'s output for a batch of n envs, as ShapeDtypeStructs."""
    import jax

    def leaf(shape: tuple[int, ...], dtype: Any) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, jax.dtypes.canonicalize_dtype(dtype))

    space = pool.observation_space
    obs = leaf((n, *space.shape), space.dtype)
    extra = {k: leaf((n,), dt) for k, dt in pool.extra_info.items()}
    if pool.config["env_type"] == "dm":
        from envs.pool import dm_observation_type

        observation = dm_observation_type(tuple(extra))(obs, leaf((n,), np.int32), leaf((n,), np.int32), *extra.values())
        return dm_env.TimeStep(leaf((n,), np.int32), leaf((n,), np.float32), leaf((n,), np.float32), observation)
    info = {"env_id": leaf((n,), np.int32), "elapsed_step": leaf((n,), np.int32), **extra}
    return (obs, leaf((n,), np.float32), leaf((n,), bool), leaf((n,), bool), info)


def make_xla(pool: EnvPool) -> tuple[Any, Callable, Callable, Callable]:
    """(handle, recv, send, step) for pool; see the module docstring."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import io_callback

    pool_id = next(_POOL_IDS)
    template = _state_template(pool, pool.batch_size)
    handle_spec = jax.ShapeDtypeStruct((), jnp.int32)
    leaves, treedef = jax.tree_util.tree_flatten(template)
    dtypes = [np.dtype(x.dtype) for x in leaves]
    name = pool.config["task_id"]

    def check(handle: np.ndarray) -> None:
        if int(handle) != pool_id:
            raise ValueError(f"this handle does not belong to this {name} pool's xla() functions (handle {int(handle)}, pool {pool_id})")

    def as_state(out: Any) -> Any:
        flat = jax.tree_util.tree_leaves(out)
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
