"""Transition replay: one learner device's shard, as pure functions of a fixed-shape pytree.

Storage is time-major, as the loop delivers it: per *source* (one inferencer's env pool, this
device's share of its envs; see sebulba.replay.sequences for why sources are kept apart) a ring
of C rows over time for its B envs. Row t of env b holds the env step the actor saw at t (obs,
the reward and flags that came with it) and the action it took there. A cycle's trajectory
(env_step [T + 1, B], action [T, B]) adds rows env_step[:T] with action[:T]: env_step[T] is the
next cycle's env_step[0], so each env step is stored once and no observation twice (an n-step
transition reads its next observation from the row n' steps later).

The transition from row t is (obs_t, a_t, the rewards of rows t+1..t+n', obs_{t+n'}), n' <= n
stopping at the first final row (terminated or truncated) after t. It exists only when row t is
not final: the action after an episode's last step is the pool's auto-reset step, discarded
(EnvPool's next-step auto-reset). Truncation and termination are kept apart: a transition into a
truncated step bootstraps from its observation (the episode's last, as the pool returns it), one
into a terminated step does not (discount 0). A row becomes drawable once its n successors are
written, so the newest n rows of each source wait for the next cycle.

Priorities [S, C, B] mark what may be drawn: 0 for a row that holds no transition (not yet
written, waiting for its successors, or final), else its priority (max_priority when new, then
what `update_priorities` sets); uniform sampling ignores their values. Sampling is with
replacement; the caller gates its update on `size` (transitions drawable, all sources). Uniform
sampling rejects the rows that hold no transition (`sample`), so that a batch's metrics are over
real transitions only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sebulba.replay.priorities import check_shape, filled, importance_weights, sample_indices, set_priorities
from sebulba.types import EnvStep

PyTree = Any


class Transitions(NamedTuple):
    """A batch of n-step transitions [b, ...], what an off-policy loss learns from:
    target = reward + discount * V(next_obs)."""

    obs: Any  # [b, ...] (a pytree for Dict spaces)
    action: jax.Array  # [b, ...] the action taken at obs
    reward: jax.Array  # float32 [b]: sum_{k < n'} gamma^k r_{t+k+1}, n' <= n steps (fewer where the episode ended)
    discount: jax.Array  # float32 [b]: gamma^n' to bootstrap with, 0 where the episode terminated within them
    next_obs: Any  # [b, ...] the observation n' steps later (a truncated episode's last observation)


class TransitionReplay(NamedTuple):
    """One learner device's replay shard; shapes fixed at `init`.

    env_step: EnvStep, leaves [S, C, B, ...]; action [S, C, B, ...]: the rows (module doc).
    priorities: float32 [S, C, B]; 0 = not drawable.
    pos: int32 [S]: each source's next row. rows: int32 [S]: rows written per source, saturating at C.
    size: int32 []: drawable transitions (all sources).
    max_priority: float32 []: largest priority seen (starts at 1); new transitions get it.
    """

    env_step: EnvStep
    action: jax.Array
    priorities: jax.Array
    pos: jax.Array
    rows: jax.Array
    size: jax.Array
    max_priority: jax.Array


def rows_per_source(capacity: int, num_envs: int, num_sources: int) -> int:
    """C: rows (time steps) each source's ring holds for a capacity of `capacity` transitions."""
    return -(-capacity // (num_envs * num_sources))


def init(capacity: int, num_envs: int, T: int, n_step: int, example_env_step_row: EnvStep, example_action_row: Any,
         num_sources: int = 1) -> TransitionReplay:
    """An empty shard for `capacity` transitions (rounded up to whole rows of num_envs x
    num_sources). Example rows describe one env at one step (no time or env axis): an EnvStep of
    arrays or `jax.ShapeDtypeStruct`s, and the action. Raises ValueError when a ring could not
    hold one cycle plus the n rows a transition looks ahead."""
    if min(T, num_envs, num_sources, n_step) < 1:
        raise ValueError(f"T, num_envs, num_sources and n_step must be >= 1, got {T}, {num_envs}, {num_sources}, {n_step}")
    C = rows_per_source(capacity, num_envs, num_sources)
    if C < T + n_step + 1:
        need = (T + n_step + 1) * num_envs * num_sources
        raise ValueError(f"replay_capacity {capacity} per learner device is too small: it must hold at least {need} "
                         f"transitions (a cycle of {T} steps plus the {n_step}-step look-ahead and one row, for "
                         f"{num_envs} envs x {num_sources} inferencers on each learner device)")
    lead = (num_sources, C, num_envs)
    return TransitionReplay(
        env_step=jax.tree.map(lambda r: filled(r, lead), example_env_step_row),
        action=filled(example_action_row, lead),
        priorities=jnp.zeros(lead, jnp.float32),
        pos=jnp.zeros((num_sources,), jnp.int32),
        rows=jnp.zeros((num_sources,), jnp.int32),
        size=jnp.zeros((), jnp.int32),
        max_priority=jnp.ones((), jnp.float32),
    )


def _shape(replay: TransitionReplay) -> tuple[int, int, int]:
    return replay.priorities.shape  # (S, C, B)


def add(replay: TransitionReplay, env_step: EnvStep, action: jax.Array, n_step: int, source: Any = 0) -> TransitionReplay:
    """Fold one cycle of one source into the replay: env_step [T + 1, B, ...] and action [T, B, ...]
    (time-major, as the trajectory). Writes rows env_step[:T], overwriting the source's oldest,
    and makes the rows whose n-step look-ahead this completes drawable (module doc). `source` may
    be traced. Shapes and dtypes must match `init` (checked at trace time)."""
    S, C, B = _shape(replay)
    T = action.shape[0]
    check_shape("action", action, (T, B) + replay.action.shape[3:], replay.action.dtype)
    jax.tree.map(lambda x, r: check_shape("env_step", x, (T + 1, B) + r.shape[3:], r.dtype), env_step, replay.env_step)
    source = jnp.asarray(source, jnp.int32)
    pos, rows = replay.pos[source], replay.rows[source]
    # Rows pos - n .. pos + T - 1 of the source's ring (contiguous, modulo C): its newest n, then the T
    # this cycle writes. Rows pos - n .. pos - n + T - 1 now have their n successors; row t's
    # transition exists when t was written (rows + j - n >= 0), is not final, and the row after it
    # starts no new episode where t did not end one (a stream cut, e.g. the envs reset by a resume).
    span = (pos - n_step + jnp.arange(T + n_step)) % C  # [T + n]
    flags = lambda name: jnp.concatenate(  # noqa: E731 - [T + n, B]: the span's, the old rows' from the store
        [getattr(replay.env_step, name)[source, span[:n_step]], getattr(env_step, name)[:T]])
    final = flags("terminated") | flags("truncated")
    written = rows + jnp.arange(T) - n_step >= 0
    exists = written[:, None] & ~final[:T] & ~flags("first")[1:T + 1]  # [T, B]
    # The span's priorities: the first n were drawable or not, the last T held what the new rows
    # overwrite. They become exists for the done rows and 0 for the new ones (waiting for their
    # successors).
    before = replay.priorities[source, span] > 0  # [T + n, B]
    size = replay.size - jnp.sum(before[n_step:]) + jnp.sum(exists) - jnp.sum(before[:n_step])

    # Everything above reads the old arrays; everything below writes them in place. Each write's
    # values depend on `size` (never negative: the select never fires), so that XLA:CPU orders the
    # reads first: without that dependency it could not, and copied every array read (its
    # optimization barrier is expanded before copy insertion); reading the written store instead
    # duplicates each write per reader, again with copies. Either cost ~1.4 ms of a fold's ~1.5 at
    # 1M transitions of one env (tests/test_learner_calls.py checks the programs copy nothing).
    after_reads = lambda x: jnp.where(size < 0, jnp.zeros_like(x), x)  # noqa: E731
    write = lambda store, x: store.at[source, span[n_step:]].set(after_reads(x[:T]))  # noqa: E731
    stored_env_step = jax.tree.map(write, replay.env_step, env_step)
    stored_action = write(replay.action, action)
    value = jnp.where(jnp.pad(exists, ((0, n_step), (0, 0))), replay.max_priority, 0.0)
    priorities = replay.priorities.at[source, span].set(after_reads(value))
    return TransitionReplay(stored_env_step, stored_action, priorities, replay.pos.at[source].set((pos + T) % C),
                            replay.rows.at[source].set(jnp.minimum(rows + T, C)), size, replay.max_priority)


def _transitions(replay: TransitionReplay, s: jax.Array, t: jax.Array, b: jax.Array, n_step: int,
                 discount: float) -> Transitions:
    """The n-step transitions from rows (s, t, b) [batch] (module doc)."""
    S, C, B = _shape(replay)
    ahead = (t[:, None] + jnp.arange(1, n_step + 1)) % C  # [batch, n]

    def get(x, rows):
        # by flat row index into a [S * C * B, ...] view of the store (a reshape of its layout: free). Indexed
        # on its three leading axes instead, the gather led XLA:CPU to lay the whole store out anew, a copy,
        # on every call: ~90 ms a call at 1M MuJoCo transitions (TD3), ~12 ms like this
        flat = (s[:, None] * C + rows) * B + b[:, None] if rows.ndim == 2 else (s * C + rows) * B + b
        return x.reshape(S * C * B, *x.shape[3:])[flat]

    es = replay.env_step
    final = get(es.terminated, ahead) | get(es.truncated, ahead)  # [batch, n]
    before_end = jnp.cumsum(final, axis=1) - final == 0  # no final row before j: row j counts
    gammas = discount ** jnp.arange(n_step, dtype=jnp.float32)
    reward = jnp.sum(jnp.where(before_end, get(es.reward, ahead) * gammas, 0.0), axis=1)
    k = jnp.where(jnp.any(final, 1), jnp.argmax(final, 1), n_step - 1)  # index of the bootstrap row in `ahead`
    boot = jnp.take_along_axis(ahead, k[:, None], 1)[:, 0]
    terminated = get(es.terminated, boot)
    bootstrap = jnp.where(terminated, 0.0, discount ** (k + 1).astype(jnp.float32))
    return Transitions(obs=jax.tree.map(lambda x: get(x, t), es.obs), action=get(replay.action, t),
                       reward=reward, discount=bootstrap, next_obs=jax.tree.map(lambda x: get(x, boot), es.obs))


UNIFORM_TRIES = 8  # candidates per uniform draw (rejection sampling)


def sample(replay: TransitionReplay, key: jax.Array, batch_size: int, n_step: int, discount: float,
           priority_exponent: float = 0.0, importance_sampling_exponent: float = 0.4,
           ) -> tuple[Transitions, jax.Array, jax.Array]:
    """Draw `batch_size` (static) transitions with replacement. Returns (Transitions [b, ...],
    flat indices int32 [b] for `update_priorities`, weights float32 [b]).

    priority_exponent 0: uniform over the drawable rows, by rejection: each draw takes the first
    of UNIFORM_TRIES uniform candidates among the complete rows (written, with their successors)
    that holds a transition (a final row holds none: one per episode), which is exactly uniform
    over those that do, with no cumulative sum over the replay; a draw whose candidates all miss
    (probability p^UNIFORM_TRIES for a share p of final rows) gets weight 0, so a loss averages over the
    draws of weight > 0. > 0: prioritized, drawable rows only, with importance weights
    (N P(i))^-beta normalized by the batch maximum. With nothing drawable all weights are 0."""
    S, C, B = _shape(replay)
    flat = replay.priorities.reshape(-1)
    if priority_exponent > 0:
        idx, probs = sample_indices(flat, key, batch_size, priority_exponent)
        weights = importance_weights(probs, replay.size, importance_sampling_exponent)
    else:
        # Per source the complete rows are the `rows - n` before its newest n: pick a source by its
        # share of them, then one of its complete rows and envs.
        complete = jnp.maximum(replay.rows - n_step, 0) * B  # [S]
        k_src, k_row = jax.random.split(key)
        shape = (batch_size, UNIFORM_TRIES)
        src = jax.random.categorical(k_src, jnp.log(complete.astype(jnp.float32)), shape=shape)
        u = jax.random.randint(k_row, shape, 0, jnp.maximum(complete[src], 1))
        age, b = u // B, u % B  # age 0: the newest complete row
        t = (replay.pos[src] - n_step - 1 - age) % C
        candidates = (src * C + t) * B + b  # [batch, tries]
        hit = jnp.argmax(flat[candidates] > 0, axis=1)  # the first that holds a transition (0 if none)
        idx = jnp.take_along_axis(candidates, hit[:, None], 1)[:, 0]
        weights = (flat[idx] > 0).astype(jnp.float32)
    s, t, b = idx // (C * B), (idx // B) % C, idx % B
    return _transitions(replay, s, t, b, n_step, discount), idx.astype(jnp.int32), weights


def update_priorities(replay: TransitionReplay, indices: jax.Array, priorities: jax.Array) -> TransitionReplay:
    """Set the drawn transitions' priorities (e.g. |TD|); rows that hold none are left at 0."""
    new, max_priority = set_priorities(replay.priorities.reshape(-1), replay.max_priority, indices, priorities)
    return replay._replace(priorities=new.reshape(replay.priorities.shape), max_priority=max_priority)
