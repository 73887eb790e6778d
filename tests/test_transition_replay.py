"""The transition replay (sebulba.replay.transitions) against a plain-Python reference built from
the same env streams: which transitions exist, their n-step returns, discounts and bootstrap
observations; uniform and prioritized sampling; priorities; sources kept apart."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba.replay import transitions as tr
from sebulba.types import EnvStep

GAMMA = 0.9


def pool_stream(rng: np.random.Generator, steps: int, num_envs: int):
    """Env steps with the pool's next-step auto-reset: [steps, B] obs (a unique id per step), reward,
    terminated, truncated, first; a final step is followed by a `first` step with reward 0."""
    obs = np.arange(steps * num_envs, dtype=np.float32).reshape(steps, num_envs) + 1.0
    reward = rng.normal(size=(steps, num_envs)).astype(np.float32)
    terminated = np.zeros((steps, num_envs), bool)
    truncated = np.zeros((steps, num_envs), bool)
    first = np.zeros((steps, num_envs), bool)
    first[0] = True
    reward[0] = 0.0
    for t in range(1, steps):
        for b in range(num_envs):
            if terminated[t - 1, b] or truncated[t - 1, b]:
                first[t, b], reward[t, b] = True, 0.0
            else:
                u = rng.random()
                terminated[t, b], truncated[t, b] = u < 0.12, 0.12 <= u < 0.2
    action = rng.integers(0, 5, size=(steps, num_envs)).astype(np.int32)
    return obs, reward, terminated, truncated, first, action


def reference(stream, t: int, b: int, n: int):
    """The n-step transition from step t of env b, or None where it does not exist."""
    obs, reward, terminated, truncated, first, action = stream
    if terminated[t, b] or truncated[t, b]:
        return None
    ret, k = 0.0, 0
    for j in range(1, n + 1):
        ret += GAMMA ** (j - 1) * reward[t + j, b]
        k = j
        if terminated[t + j, b] or truncated[t + j, b]:
            break
    disc = 0.0 if terminated[t + k, b] else GAMMA ** k
    return obs[t, b], action[t, b], ret, disc, obs[t + k, b]


def cycles(stream, T: int):
    """The loop's trajectories: env_step [T + 1, B] overlapping by one step, action [T, B]."""
    obs, reward, terminated, truncated, first, action = stream
    for c in range((obs.shape[0] - 1) // T):
        sl = slice(c * T, c * T + T + 1)
        yield (EnvStep(jnp.asarray(obs[sl][..., None]), jnp.asarray(reward[sl]), jnp.asarray(terminated[sl]),
                       jnp.asarray(truncated[sl]), jnp.asarray(first[sl])), jnp.asarray(action[c * T:c * T + T]))


def empty(capacity, B, T, n, sources=1):
    row = EnvStep(jax.ShapeDtypeStruct((1,), jnp.float32), *(jax.ShapeDtypeStruct((), d) for d in
                                                              (jnp.float32, bool, bool, bool)))
    return tr.init(capacity, B, T, n, row, jax.ShapeDtypeStruct((), jnp.int32), num_sources=sources)


_transitions = jax.jit(tr._transitions, static_argnums=(4, 5))


def all_rows(replay, n):
    """Every drawable row's transition, keyed by its obs id."""
    S, C, B = replay.priorities.shape
    s, t, b = (jnp.asarray(x.reshape(-1)) for x in np.indices((S, C, B)))
    batch = jax.device_get(_transitions(replay, s, t, b, n, GAMMA))
    drawable = np.asarray(replay.priorities).reshape(-1) > 0
    return {float(batch.obs[i, 0]): (int(batch.action[i]), float(batch.reward[i]), float(batch.discount[i]),
                                     float(batch.next_obs[i, 0])) for i in np.flatnonzero(drawable)}


@pytest.mark.parametrize("n,T,capacity", [(1, 4, 64), (3, 4, 64), (3, 2, 40), (5, 8, 500)])
def test_drawable_transitions_are_exactly_the_reference(n, T, capacity):
    rng = np.random.default_rng(n * 10 + T)
    B = 4
    stream = pool_stream(rng, 60 * T + 1, B)
    replay = empty(capacity, B, T, n)
    C = replay.priorities.shape[1]
    add = jax.jit(tr.add, static_argnums=3)
    written = 0
    for env_step, action in cycles(stream, T):
        replay = add(replay, env_step, action, n)
        written += T
        got = all_rows(replay, n)
        expected = {}
        for t in range(max(written - C, 0), written - n):  # kept, with n successors written
            for b in range(B):
                ref = reference(stream, t, b, n)
                if ref is not None:
                    expected[float(ref[0])] = (int(ref[1]), ref[2], ref[3], float(ref[4]))
        assert got.keys() == expected.keys()
        for k, (a, r, d, nxt) in expected.items():
            ga, gr, gd, gn = got[k]
            assert (ga, gn) == (a, nxt)
            np.testing.assert_allclose([gr, gd], [r, d], rtol=1e-5, atol=1e-6)
        assert int(replay.size) == len(expected)
    assert written > C  # the ring wrapped


def test_truncation_bootstraps_and_termination_does_not():
    # One env: steps 0..5, terminated at 2, truncated at 5 (obs ids 1..7).
    stream = (np.arange(1, 8, dtype=np.float32)[:, None], np.ones((7, 1), np.float32),
              np.array([0, 0, 1, 0, 0, 0, 0], bool)[:, None], np.array([0, 0, 0, 0, 0, 1, 0], bool)[:, None],
              np.array([1, 0, 0, 1, 0, 0, 1], bool)[:, None], np.zeros((7, 1), np.int32))
    stream[1][[0, 3, 6]] = 0.0  # first steps have reward 0
    replay = empty(64, 1, 6, 2)
    (env_step, action), = cycles(stream, 6)
    replay = tr.add(replay, env_step, action, 2)
    got = all_rows(replay, 2)
    # Row 0 -> 1, 2 (terminated at 2): 1 + 0.9, no bootstrap. Row 1 -> 2: 1, no bootstrap.
    # Row 2 is final: none. Row 3 -> 4, 5 (truncated at 5): 1.9, bootstrap 0.81 from obs 6.
    assert got.keys() == {1.0, 2.0, 4.0}  # rows 4, 5 wait for row 6's and row 7's cycles
    np.testing.assert_allclose(got[1.0][1:], [1.9, 0.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(got[2.0][1:], [1.0, 0.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(got[4.0][1:], [1.9, 0.81, 6.0], rtol=1e-6)


def fill(n=3, T=4, B=4, capacity=200, steps=121, seed=0, sources=1):
    stream = pool_stream(np.random.default_rng(seed), steps, B)
    replay = empty(capacity, B, T, n, sources)
    for i, (env_step, action) in enumerate(cycles(stream, T)):
        replay = tr.add(replay, env_step, action, n, source=i % sources)
    return stream, replay


def test_uniform_sampling_draws_drawable_rows_evenly_by_rejection():
    _, replay = fill()
    batch, idx, w = jax.jit(tr.sample, static_argnums=(2, 3, 4))(replay, jax.random.key(0), 20_000, 3, GAMMA)
    drawable = np.asarray(replay.priorities).reshape(-1) > 0
    np.testing.assert_array_equal(np.asarray(w), drawable[np.asarray(idx)].astype(np.float32))
    assert float(np.asarray(w).mean()) == 1.0  # one row in 8 is final: 8 candidates all miss with p ~ 1e-7
    S, C, B = replay.priorities.shape
    complete = np.zeros(S * C * B, bool)  # rows written, with n successors: all but the newest 3 of each env
    rows = np.arange(C)
    newest = (int(replay.pos[0]) - 1 - np.arange(3)) % C
    complete.reshape(S, C, B)[0, np.setdiff1d(rows, newest)] = True
    assert complete[np.asarray(idx)].all()
    counts = np.bincount(np.asarray(idx), minlength=S * C * B)[complete & drawable]
    assert counts.min() > 0.5 * counts.mean() and counts.max() < 1.6 * counts.mean()  # 20k draws over ~165 rows
    # Exactly uniform over the drawable rows: a chi-square test at 20k draws (p > 0.001 for the seed's draw).
    from scipy import stats
    assert stats.chisquare(counts).pvalue > 1e-3


def test_uniform_draws_whose_candidates_all_miss_weigh_zero():
    """Episodes of one step (every other row final, the most the pool's auto-reset allows): 8
    candidates all miss with probability 1/256, so some of 8,000 draws weigh 0, and every draw of
    weight 1 holds a transition."""
    B, T, n, steps = 2, 4, 1, 41
    obs, reward, terminated, truncated, first, action = pool_stream(np.random.default_rng(3), steps, B)
    odd = (np.arange(steps) % 2 == 1)[:, None] & np.ones(B, bool)
    stream = (obs, reward, odd, np.zeros_like(odd), ~odd, action)
    replay = empty(400, B, T, n)
    for env_step, act in cycles(stream, T):
        replay = tr.add(replay, env_step, act, n)
    _, idx, w = tr.sample(replay, jax.random.key(0), 8000, n, GAMMA)
    w, idx = np.asarray(w), np.asarray(idx)
    drawable = np.asarray(replay.priorities).reshape(-1) > 0
    np.testing.assert_array_equal(w, drawable[idx].astype(np.float32))
    assert 5 <= (w == 0).sum() <= 80  # expected 8000 / 256 = 31


def test_prioritized_sampling_follows_priorities_and_updates_them():
    _, replay = fill()
    flat = np.asarray(replay.priorities).reshape(-1)
    drawable = np.flatnonzero(flat)
    favourite = drawable[5]
    replay = tr.update_priorities(replay, jnp.asarray([favourite, 0 if flat[0] == 0 else drawable[0]]),
                                  jnp.asarray([50.0, 1.0]))
    assert float(replay.max_priority) == 50.0
    _, idx, w = tr.sample(replay, jax.random.key(1), 4000, 3, GAMMA, priority_exponent=1.0)
    idx = np.asarray(idx)
    assert (np.asarray(replay.priorities).reshape(-1)[idx] > 0).all()
    share = (idx == favourite).mean()
    total = np.asarray(replay.priorities).sum()
    assert abs(share - 50.0 / total) < 0.02  # p_i = priority_i / sum
    assert float(np.asarray(w)[idx == favourite].max()) < float(np.asarray(w).max())  # the likeliest weighs least
    # A row that holds no transition keeps priority 0.
    empty_row = int(np.flatnonzero(np.asarray(replay.priorities).reshape(-1) == 0)[0])
    again = tr.update_priorities(replay, jnp.asarray([empty_row]), jnp.asarray([9.0]))
    assert float(again.priorities.reshape(-1)[empty_row]) == 0.0


def test_sources_are_separate_streams():
    """Cycles of two inferencers alternate; each source's rows chain only with its own."""
    B, T, n = 2, 4, 2
    streams = [pool_stream(np.random.default_rng(s), 41, B) for s in (1, 2)]
    streams[1] = (streams[1][0] + 10_000, *streams[1][1:])  # distinct obs ids
    replay = empty(400, B, T, n, sources=2)
    for pair in zip(cycles(streams[0], T), cycles(streams[1], T)):
        for s, (env_step, action) in enumerate(pair):
            replay = tr.add(replay, env_step, action, n, source=s)
    got = all_rows(replay, n)
    expected = {}
    for stream in streams:
        for t in range(40 - n):
            for b in range(B):
                ref = reference(stream, t, b, n)
                if ref is not None:
                    expected[float(ref[0])] = float(ref[4])
    assert {k: v[3] for k, v in got.items()} == expected


@pytest.mark.slow(seconds=5)
def test_empty_replay_draws_nothing_with_weight():
    replay = empty(64, 4, 4, 1)
    for exponent in (0.0, 0.6):
        _, _, w = tr.sample(replay, jax.random.key(0), 8, 1, GAMMA, priority_exponent=exponent)
        np.testing.assert_array_equal(w, np.zeros(8))


def test_capacity_too_small_is_one_clear_error():
    with pytest.raises(ValueError, match="replay_capacity 40 per learner device is too small: it must hold at least 64"):
        empty(40, 8, 4, 3)


def test_shapes_are_checked_when_added():
    replay = empty(64, 4, 4, 1)
    es = EnvStep(jnp.zeros((5, 4, 2)), jnp.zeros((5, 4)), *(jnp.zeros((5, 4), bool),) * 3)
    with pytest.raises(ValueError, match="env_step: expected shape"):
        tr.add(replay, es, jnp.zeros((4, 4), jnp.int32), 1)
