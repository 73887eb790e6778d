"""MuZero's categorical value and reward heads (Schrittwieser et al. 2020, Appendix F): a scalar x
of the value-rescaled space is represented on the integer support -S..S by the two-hot vector
whose expectation is x (x clipped to [-S, S]: mass 1 - frac on floor(x), frac on floor(x) + 1);
a head predicts logits over the 2S + 1 atoms, learns by cross-entropy against that vector, and
is read back as its distribution's expectation. S = 0 is the scalar head: one output, read as is,
learned by squared error. Pure functions on arrays."""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def head_width(support_size: int) -> int:
    """Outputs of a head: 2S + 1 atoms, or 1 (the scalar head, S = 0)."""
    return 2 * support_size + 1 if support_size else 1


def atoms(support_size: int) -> Array:
    """The support's values -S, ..., S (float32)."""
    return jnp.arange(-support_size, support_size + 1, dtype=jnp.float32)


def two_hot(x: Array, support_size: int) -> Array:
    """[..., 2S + 1]: the distribution on the support whose expectation is clip(x, -S, S)."""
    s = support_size
    x = jnp.clip(x.astype(jnp.float32), -s, s)
    low = jnp.floor(x)
    frac = (x - low)[..., None]
    index = (low + s).astype(jnp.int32)
    width = 2 * s + 1
    return (jax.nn.one_hot(index, width) * (1.0 - frac)
            + jax.nn.one_hot(jnp.minimum(index + 1, width - 1), width) * frac)


def read(out: Array, support_size: int) -> Array:
    """[...]: a head's scalar, from its outputs [..., head_width]: the expectation of the softmax
    over the atoms, or the scalar head's one output."""
    if not support_size:
        return out[..., 0]
    return jax.nn.softmax(out, -1) @ atoms(support_size)


def loss(out: Array, target: Array, support_size: int) -> Array:
    """[...]: a head's loss against `target` [...] (value-rescaled): the cross-entropy with the
    target's two-hot vector, or the scalar head's squared error."""
    if not support_size:
        return (out[..., 0] - target) ** 2
    return -jnp.sum(two_hot(target, support_size) * jax.nn.log_softmax(out, -1), -1)
