"""R2D2's sequence replay (Kapturowski et al. 2019), one learner device's shard, as pure functions
(prioritized sampling: sebulba.replay.priorities).

The loop delivers cycles of T steps; R2D2 replays sequences of m = 2T steps. A sequence is two
consecutive cycles of one env (of one *source*, see below):

    env_step [2T + 1] = prev.env_step[:T] ++ cur.env_step[:T + 1]
    action   [2T]     = prev.action ++ cur.action
    state             = the step state at the START of prev (the `initial_step_state` that came
                        with the previous trajectory): the recurrent state the actor really had
                        at the sequence's first step ("stored state", the paper's section 3).

(prev.env_step[T] is the same env step as cur.env_step[0], so it is not stored twice.) Every
cycle after the first completes one sequence per env, so consecutive sequences of an env overlap
by m/2 = T steps, the paper's overlap. Sequences may cross episode boundaries: `first`,
`terminated` and `truncated` are stored with them and the agent masks (a transition out of a
final env step is the pool's auto-reset, not a real transition; DESIGN.md, "Agent API").

State. `SequenceReplay` is a pytree of fixed-shape arrays, so `add_cycle`, `sample` and
`update_priorities` trace once and can run jitted with the replay donated (the learner donates
experience state). Storage is batch-major: `sequences` holds [capacity, 2T + 1, ...] env steps,
[capacity, 2T, ...] actions and a [capacity, ...] state pytree; `priorities[i] == 0` marks an
empty slot (written slots always have priority >= PRIORITY_FLOOR > 0). New sequences go into a
ring at `insert_pos`, overwriting the oldest once full, with priority `max_priority` (standard
prioritized replay: new data is replayed at least once soon).

Sources. The pending previous cycle is kept per source and env: `pending` has a leading
[num_sources] axis. A source is one stream of consecutive cycles of the same envs (one
inferencer's env pool, this device's shard of it). With one inferencer (`num_sources=1`,
`source=0`) this is the plain "previous cycle per env". With several inferencers feeding one
learner, consecutive cycles that reach `update_experience` come from different env pools, so the
caller must pass which inferencer produced the trajectory as `source`; concatenating cycles of
different pools would splice unrelated envs into one sequence. Cycles of one source must arrive
in order (the loop's queue is FIFO and an inferencer pushes its cycles in order).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sebulba.replay.priorities import check_shape, filled, sample_indices, set_priorities
from sebulba.replay.priorities import sampling_probabilities as _probabilities
from sebulba.types import EnvStep

PyTree = Any

class Sequences(NamedTuple):
    """Replay sequences, batch-major: env_step fields [b, 2T + 1, ...], action [b, 2T, ...] (an
    array, or a pytree of them: the action with what the actor decided it by, e.g. MuZero's
    search policy), state (the step state at the sequence's first env step) a pytree of [b, ...]
    leaves."""

    env_step: EnvStep
    action: PyTree
    state: PyTree


class SequenceReplay(NamedTuple):
    """One learner device's replay shard. Shapes are fixed at `init`.

    sequences: Sequences with a leading [capacity] axis (contents of empty slots are undefined).
    priorities: float32 [capacity]; 0 = empty slot.
    insert_pos: int32 []: the slot the next sequence goes to.
    size: int32 []: filled slots, saturating at capacity.
    max_priority: float32 []: largest priority seen (starts at 1); new sequences get it.
    pending: the previous cycle of each source and env, as `Sequences` with leading
      [num_sources, num_envs] axes: env_step [S, B, T, ...] (the previous cycle's env_step[:T];
      its last entry is the current cycle's first), action [S, B, T, ...], state [S, B, ...]
      (that cycle's initial step state).
    has_prev: bool [num_sources]: whether `pending` holds a cycle of that source.
    """

    sequences: Sequences
    priorities: jax.Array
    insert_pos: jax.Array
    size: jax.Array
    max_priority: jax.Array
    pending: Sequences
    has_prev: jax.Array


# ---------------------------------------------------------------------------------- helpers


def example_rows(trajectory_env_step: EnvStep, trajectory_action: jax.Array, step_state: PyTree):
    """(env_step_row, action_row, state_row) for `init` from a time-major trajectory
    ([T + 1, B, ...] / [T, B, ...]) and a step state with leading env axis B. Rows are
    `jax.ShapeDtypeStruct`s, except leaves of extended dtype (typed keys), which are real rows."""

    def strip(x, n):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended):
            return x[(0,) * n]
        return jax.ShapeDtypeStruct(x.shape[n:], x.dtype)

    return (
        jax.tree.map(lambda x: strip(x, 2), trajectory_env_step),
        jax.tree.map(lambda x: strip(x, 2), trajectory_action),
        jax.tree.map(lambda x: strip(x, 1), step_state),
    )


# ---------------------------------------------------------------------------------- API


def init(
    capacity: int,
    num_envs: int,
    T: int,
    example_env_step_row: EnvStep,
    example_action_row: Any,
    example_state_row: PyTree,
    num_sources: int = 1,
) -> SequenceReplay:
    """An empty replay shard for `capacity` sequences of 2T steps.

    Example rows describe ONE env at ONE time step (no time or env axis): an `EnvStep` of arrays
    or `jax.ShapeDtypeStruct`s (e.g. obs [4] float32, reward [] float32, flags [] bool), the
    action row, and the step-state pytree row (every leaf of the step state given to `add_cycle`
    must have a leading env axis; pass only the per-env part of a step state). `num_envs` is the
    number of envs of this device's shard of one source; `num_sources` see the module doc.
    """
    if T < 1 or num_envs < 1 or num_sources < 1:
        raise ValueError(f"T, num_envs and num_sources must be >= 1, got {T}, {num_envs}, {num_sources}")
    if capacity < num_envs:
        # add_cycle writes num_envs distinct slots at once.
        raise ValueError(f"capacity ({capacity}) must be >= num_envs ({num_envs})")
    sequences = Sequences(
        env_step=jax.tree.map(lambda r: filled(r, (capacity, 2 * T + 1)), example_env_step_row),
        action=jax.tree.map(lambda r: filled(r, (capacity, 2 * T)), example_action_row),
        state=jax.tree.map(lambda r: filled(r, (capacity,)), example_state_row),
    )
    pending = Sequences(
        env_step=jax.tree.map(lambda r: filled(r, (num_sources, num_envs, T)), example_env_step_row),
        action=jax.tree.map(lambda r: filled(r, (num_sources, num_envs, T)), example_action_row),
        state=jax.tree.map(lambda r: filled(r, (num_sources, num_envs)), example_state_row),
    )
    return SequenceReplay(
        sequences=sequences,
        priorities=jnp.zeros((capacity,), jnp.float32),
        insert_pos=jnp.zeros((), jnp.int32),
        size=jnp.zeros((), jnp.int32),
        max_priority=jnp.ones((), jnp.float32),
        pending=pending,
        has_prev=jnp.zeros((num_sources,), bool),
    )


def capacity_of(replay: SequenceReplay) -> int:
    return replay.priorities.shape[0]


def add_cycle(
    replay: SequenceReplay,
    initial_step_state: PyTree,
    trajectory_env_step: EnvStep,
    trajectory_action: jax.Array,
    source: Any = 0,
) -> SequenceReplay:
    """Fold one cycle of one source into the replay.

    trajectory_env_step: time-major [T + 1, B, ...]; trajectory_action [T, B, ...] (leaves, if a pytree);
    initial_step_state: the step state at the cycle's start, leaves [B, ...] (B = num_envs).
    `source` may be a Python int or a traced int32 scalar (in [0, num_sources)).

    If that source has a pending previous cycle, writes B sequences (env b's at slot
    (insert_pos + b) % capacity) with priority max_priority, advancing insert_pos and size
    (saturating at capacity: the oldest sequences are overwritten). Either way the cycle becomes
    the source's pending one. One trace for both cases; shapes and dtypes must match `init`
    (checked at trace time) so the replay's structure never changes.
    """
    pend = replay.pending
    num_sources, B, T = jax.tree.leaves(pend.action)[0].shape[:3]
    capacity = capacity_of(replay)
    jax.tree.map(lambda x, p: check_shape("trajectory_action", x, (T, B) + p.shape[3:], p.dtype), trajectory_action,
                 pend.action)
    jax.tree.map(
        lambda x, p: check_shape("trajectory_env_step", x, (T + 1, B) + p.shape[3:], p.dtype), trajectory_env_step, pend.env_step
    )
    jax.tree.map(lambda x, p: check_shape("initial_step_state", x, (B,) + p.shape[2:], p.dtype), initial_step_state, pend.state)

    source = jnp.asarray(source, jnp.int32)
    has_prev = replay.has_prev[source]
    env_major = lambda x: jnp.swapaxes(x, 0, 1)  # [time, B, ...] -> [B, time, ...]  # noqa: E731
    prev = jax.tree.map(lambda x: x[source], pend)  # [B, T, ...] / [B, ...]

    new = Sequences(
        env_step=jax.tree.map(
            lambda p, c: jnp.concatenate([p, env_major(c)], axis=1), prev.env_step, trajectory_env_step
        ),
        action=jax.tree.map(lambda p, c: jnp.concatenate([p, env_major(c)], axis=1), prev.action, trajectory_action),
        state=prev.state,
    )
    # Without a pending cycle every index points past the end and mode="drop" skips the writes.
    slots = (replay.insert_pos + jnp.arange(B, dtype=jnp.int32)) % capacity
    slots = jnp.where(has_prev, slots, capacity)
    write = lambda store, rows: store.at[slots].set(rows, mode="drop")  # noqa: E731
    sequences = jax.tree.map(write, replay.sequences, new)
    priorities = write(replay.priorities, jnp.full((B,), replay.max_priority, jnp.float32))
    n_new = jnp.where(has_prev, B, 0).astype(jnp.int32)

    pending = Sequences(
        env_step=jax.tree.map(lambda p, c: p.at[source].set(env_major(c[:T])), pend.env_step, trajectory_env_step),
        action=jax.tree.map(lambda p, c: p.at[source].set(env_major(c)), pend.action, trajectory_action),
        state=jax.tree.map(lambda p, s: p.at[source].set(s), pend.state, initial_step_state),
    )
    return SequenceReplay(
        sequences=sequences,
        priorities=priorities,
        insert_pos=(replay.insert_pos + n_new) % capacity,
        size=jnp.minimum(replay.size + n_new, capacity),
        max_priority=replay.max_priority,
        pending=pending,
        has_prev=replay.has_prev.at[source].set(True),
    )


def sampling_probabilities(replay: SequenceReplay, priority_exponent: float = 0.9) -> jax.Array:
    """float32 [capacity]: priority^a / sum over filled slots; 0 for empty slots."""
    return _probabilities(replay.priorities, priority_exponent)


def sample(
    replay: SequenceReplay, key: jax.Array, batch_size: int, priority_exponent: float = 0.9
) -> tuple[Sequences, jax.Array, jax.Array]:
    """Draw `batch_size` (static) sequences with replacement, slot i with probability
    priority_i^a / sum_j priority_j^a (a = priority_exponent); empty slots are never drawn.

    Returns (Sequences [b, ...], indices int32 [b], probabilities float32 [b]). Sampling is with
    replacement, so any size >= 1 works, with repeats when size < batch_size. If the replay is
    EMPTY (size 0, e.g. the learner's first cycle: the first cycle inserts nothing), every index
    is 0, every probability is 0 and the sequences are slot 0's (initial zeros): callers gate the
    update on `replay.size` (with `jnp.where`, not by multiplying a loss by 0) and must not
    `update_priorities` from it (which would be ignored anyway: updates only touch filled slots).
    """
    indices, probs = sample_indices(replay.priorities, key, batch_size, priority_exponent)
    return jax.tree.map(lambda x: x[indices], replay.sequences), indices, probs


def update_priorities(replay: SequenceReplay, indices: jax.Array, priorities: jax.Array) -> SequenceReplay:
    """Set the priorities of the given slots (`set_priorities`: empty slots are left alone)."""
    new, max_priority = set_priorities(replay.priorities, replay.max_priority, indices, priorities)
    return replay._replace(priorities=new, max_priority=max_priority)
