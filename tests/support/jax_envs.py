"""Helpers for the JAX-native env tests: our JaxEnv's stream for one env, and the same contract
(next-step auto-reset, JaxEnv's per-env keys) driven over a suite's own API, to compare step for step."""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def run(env, key: jax.Array, actions: list) -> list:
    """Our JaxEnv's Steps for env 0 of a batch of one keyed by `key`: the reset's, then one per action."""
    lanes, step = jax.jit(env.reset, static_argnums=1)(key, 1)

    def body(lanes, a):
        return env.step(lanes, a[None])

    _, steps = jax.jit(lambda lanes, a: jax.lax.scan(body, lanes, a))(lanes, jnp.asarray(np.stack(actions)))
    steps = jax.tree.map(lambda first, rest: np.concatenate([np.asarray(first), np.asarray(rest)[:, 0]]), step, steps)
    return [jax.tree.map(lambda x: x[t], steps) for t in range(len(actions) + 1)]


@jax.jit
def episode_keys(key_data: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(key for this reset, key data for the next): JaxEnv's per-env key rule."""
    now, later = jax.random.split(jax.random.wrap_key_data(key_data))
    return now, jax.random.key_data(later)


def reference(new_episode: Callable, step: Callable, key: jax.Array, actions: list) -> list[tuple]:
    """(obs, reward, terminated, truncated, first) per step over a suite's own API, episode after
    episode: new_episode(reset key) -> (state, obs); step(state, action) -> (state, obs, reward,
    terminated, truncated) as the suite itself says them (terminated beats truncated)."""
    now, later = episode_keys(jax.random.key_data(jax.random.fold_in(key, 0)))
    state, obs = new_episode(now)
    out = [(obs, 0.0, False, False, True)]
    done = False
    for a in actions:
        if done:
            now, later = episode_keys(later)
            state, obs = new_episode(now)
            out.append((obs, 0.0, False, False, True))
            done = False
            continue
        state, obs, reward, term, trunc = step(state, a)
        term = bool(term)
        trunc = bool(trunc) and not term
        out.append((obs, float(reward), term, trunc, False))
        done = term or trunc
    return out


def compare(ours: list, ref: list, obs: Callable[[Any], Any] = lambda o: o) -> None:
    """Equal streams: observations (obs(theirs): as ours presents them) and flags."""
    assert len(ours) == len(ref)
    for t, (s, (o, reward, term, trunc, first)) in enumerate(zip(ours, ref)):
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"step {t}"), s.obs, obs(o))
        assert float(s.reward) == np.float32(reward), f"step {t}"
        assert (bool(s.terminated), bool(s.truncated), bool(s.first)) == (term, trunc, first), f"step {t}"


class WithEmptyLeaf:
    """A RawJaxEnv with zero-size arrays in its state beside another env's (as MJX's `act` of a
    model without actuator activations, shape (0,)): what a checkpoint of an Anakin run must save
    and restore whatever the env's shapes."""

    def __init__(self, raw: Any):
        self.raw = raw
        self.task_id, self.max_episode_steps = raw.task_id, raw.max_episode_steps
        self.observation_space, self.action_space = raw.observation_space, raw.action_space

    @staticmethod
    def empty() -> dict:
        return {"act": jnp.zeros((0,), jnp.float32), "contacts": jnp.zeros((3, 0), jnp.int32)}

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        state, obs = self.raw.reset(key)
        return (state, self.empty()), obs

    def step(self, state: Any, action: jax.Array):
        inner, obs, reward, terminated, truncated = self.raw.step(state[0], action)
        return (inner, state[1]), obs, reward, terminated, truncated
