"""`xla()` of the compiled native pool: EnvPool's XLA interface (envpool.readthedocs.io) with no host callback.

recv, send and step are custom calls into the compiled pool's XLA FFI handlers (kernel/pool.cc),
so a jitted actor loop steps the envs inside the XLA program, on the pool state the Python API
uses too. Each call carries JAX's ordered-IO effect token, exactly as an ordered `io_callback`
does: calls run in program order, and none is removed as dead code (a send whose handle is
dropped still runs). Errors (a misuse, a handle of another pool, a closed pool) fail the call
with the Python API's message. Results equal the Python API's: it is the same code.

The targets are registered for the CPU. Under another default backend (a GPU host), `xla()`
uses the callback path of envs/xla.py instead, whose results are the same.
"""

from __future__ import annotations

import functools
from typing import Any

import dm_env
import numpy as np

from envs.info import dm_observation
from envs.native.kernel.build import library
from envs.players import PLAYERS
from envs.xla import make_xla, state_template

_PRIMITIVE = None


def _primitive() -> Any:
    """One JAX primitive for the three calls: a custom call with an ordering token."""
    global _PRIMITIVE
    if _PRIMITIVE is not None:
        return _PRIMITIVE
    import jax
    from jax._src import core, dispatch
    from jax._src.callback import _OrderedIOEffect
    from jax._src.interpreters import mlir
    from jax.extend.core import Primitive

    prim = Primitive("envs_native_pool_call")
    prim.multiple_results = True

    def abstract_eval(*args: Any, target: str, pool: int, out_avals: tuple) -> tuple[Any, set]:
        return out_avals, {_OrderedIOEffect}

    def lowering(ctx: Any, *args: Any, target: str, pool: int, out_avals: tuple) -> Any:
        token = ctx.tokens_in.get(_OrderedIOEffect)
        sub = ctx.replace(avals_in=[core.abstract_token, *ctx.avals_in], avals_out=[core.abstract_token, *ctx.avals_out])
        op = jax.ffi.build_ffi_lowering_function(target, has_side_effect=True)(sub, token, *args, pool=np.int32(pool))
        ctx.set_tokens_out(mlir.TokenSet({_OrderedIOEffect: op.results[0]}))
        return op.results[1:]

    lib = library()
    for op in ("recv", "send", "step"):
        jax.ffi.register_ffi_target(f"envs_native_{op}", jax.ffi.pycapsule(getattr(lib, f"np_xla_{op}")), platform="cpu")
    prim.def_impl(functools.partial(dispatch.apply_primitive, prim))  # called outside jit: jit it
    prim.def_effectful_abstract_eval(abstract_eval)
    mlir.register_lowering(prim, lowering, platform="cpu")
    _PRIMITIVE = prim
    return prim


def make_kernel_xla(pool: Any, kernel: Any) -> tuple[Any, Any, Any, Any]:
    """(handle, recv, send, step) for a compiled native pool."""
    import jax
    import jax.numpy as jnp

    if jax.default_backend() != "cpu":
        return make_xla(pool)
    prim = _primitive()
    n, dm = pool.batch_size, pool.config["env_type"] == "dm"
    handle_aval = jax.core.ShapedArray((), jnp.int32)
    outs = (
        handle_aval,
        jax.core.ShapedArray((n, kernel.obs_dim), jnp.float32),
        jax.core.ShapedArray((n,), jnp.float32),
        jax.core.ShapedArray((n,), jnp.bool_),
        jax.core.ShapedArray((n,), jnp.bool_),
        jax.core.ShapedArray((n,), jnp.int32),
        jax.core.ShapedArray((n,), jnp.int32),
    )
    action_dtype = jnp.int32 if kernel.discrete else jnp.float32
    action_tail = tuple(pool.action_space.shape or ())
    template = state_template(pool, n)  # the structure the callback path returns, to match

    def state(obs: Any, reward: Any, terminated: Any, truncated: Any, env_id: Any, elapsed: Any) -> Any:
        if dm:
            step_type = jnp.where(
                elapsed == 0, dm_env.StepType.FIRST, jnp.where(terminated | truncated, dm_env.StepType.LAST, dm_env.StepType.MID)
            ).astype(jnp.int32)
            discount = (~terminated).astype(jnp.float32)
            return dm_env.TimeStep(step_type, reward, discount, dm_observation(obs, env_id, elapsed, {PLAYERS: {"env_id": env_id}}, None))
        return obs, reward, terminated, truncated, {"env_id": env_id, "elapsed_step": elapsed, PLAYERS: {"env_id": env_id}}

    def operands(handle: Any, action: Any, env_id: Any) -> list[Any]:
        action = jnp.asarray(action)
        if action.ndim == 0 or action.shape[1:] != action_tail:
            raise ValueError(f"action must have shape (k, {', '.join(map(str, action_tail))}) (one per env), got {action.shape}")
        ops = [jnp.asarray(handle, jnp.int32), action.astype(action_dtype)]
        if env_id is not None:
            env_id = jnp.asarray(env_id)
            if env_id.shape != action.shape[:1]:
                raise ValueError(f"env_id must have shape {action.shape[:1]} (one per action), got {env_id.shape}")
            ops.append(env_id.astype(jnp.int32))
        return ops

    def recv(handle: Any) -> tuple[Any, Any]:
        h, *res = prim.bind(jnp.asarray(handle, jnp.int32), target="envs_native_recv", pool=kernel.id, out_avals=outs)
        return h, state(*res)

    def send(handle: Any, action: Any, env_id: Any = None) -> Any:
        (h,) = prim.bind(*operands(handle, action, env_id), target="envs_native_send", pool=kernel.id, out_avals=outs[:1])
        return h

    def step(handle: Any, action: Any, env_id: Any = None) -> tuple[Any, Any]:
        h, *res = prim.bind(*operands(handle, action, env_id), target="envs_native_step", pool=kernel.id, out_avals=outs)
        return h, state(*res)

    assert jax.tree.structure(jax.eval_shape(lambda: state(*(jnp.zeros(a.shape, a.dtype) for a in outs[1:])))) == jax.tree.structure(
        template
    ), "the compiled xla() state must have the callback path's structure"
    return jnp.asarray(kernel.id, jnp.int32), recv, send, step
