"""R2D2's sequence replay: sequences are two consecutive cycles of one env with the step state of
the first cycle's start, overlap by T, keep episode flags where they were, wrap around a ring,
and are sampled by priority. Everything runs jitted; add_cycle runs with the replay donated."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba.replay import sequences as rp
from sebulba.replay.priorities import PRIORITY_FLOOR, importance_weights
from sebulba.types import EnvStep

add = jax.jit(rp.add_cycle, donate_argnums=0)
sample = jax.jit(rp.sample, static_argnames=("batch_size",))
update = jax.jit(rp.update_priorities, donate_argnums=0)


def _code(c, t, b, s=0):
    return 1000 * s + 100 * c + 10 * t + b


def make_cycle(c, T, B, s=0, flags=None, global_time=False):
    """Cycle c of source s. Entries encode (cycle, t, env): obs[t, b] = (s, c, t, b), reward and
    action = _code(c, t, b, s). With global_time, env step t of cycle c is the env step at global
    time g = c*T + t, encoded as cycle 0, t = g (so cycle c's last entry equals cycle c+1's first).
    flags: {name: set of (global time g, env b)} marking terminated/truncated/first."""
    ts = np.arange(T + 1)
    if global_time:
        cc, tt = np.zeros(T + 1), c * T + ts
    else:
        cc, tt = np.full(T + 1, c), ts
    bb = np.arange(B)
    obs = np.stack(np.broadcast_arrays(np.full((T + 1, B), s), cc[:, None], tt[:, None], bb[None, :]), -1)
    reward = _code(cc[:, None], tt[:, None], bb[None, :], s).astype(np.float32)
    fl = {}
    for name in ("terminated", "truncated", "first"):
        f = np.zeros((T + 1, B), bool)
        for g, b in (flags or {}).get(name, ()):
            if c * T <= g <= c * T + T:
                f[g - c * T, b] = True
        fl[name] = f
    env_step = EnvStep(jnp.asarray(obs, jnp.float32), jnp.asarray(reward), jnp.asarray(fl["terminated"]),
                       jnp.asarray(fl["truncated"]), jnp.asarray(fl["first"]))
    action = jnp.asarray(reward[:T], jnp.int32)
    state = {"h": jnp.asarray(np.stack([np.full(B, s), np.full(B, c), bb], -1), jnp.float32),
             "n": jnp.asarray(_code(c, 0, bb, s), jnp.int32)}
    return state, env_step, action


def make_replay(capacity, B, T, num_sources=1):
    state, env_step, action = make_cycle(0, T, B)
    rows = rp.example_rows(env_step, action, state)
    return rp.init(capacity, B, T, *rows, num_sources=num_sources)


def structure(r):
    return jax.tree.structure(r), [(x.shape, x.dtype) for x in jax.tree.leaves(r)]


def np_tree(t):
    return jax.tree.map(np.asarray, t)


def expected_sequence(prev, cur, b):
    """prev.env_step[:T] ++ cur.env_step[:T+1], prev.action ++ cur.action, prev's state (env b)."""
    (ps, pe, pa), (_, ce, ca) = np_tree(prev), np_tree(cur)
    T = pa.shape[0]
    env_step = jax.tree.map(lambda p, c: np.concatenate([p[:T, b], c[:, b]]), pe, ce)
    return env_step, np.concatenate([pa[:, b], ca[:, b]]), jax.tree.map(lambda x: x[b], ps)


def stored(r, i):
    return jax.tree.map(lambda x: np.asarray(x)[i], r.sequences)


def assert_tree_equal(a, b):
    jax.tree.map(np.testing.assert_array_equal, a, b)


def test_init_shapes():
    r = make_replay(capacity=6, B=3, T=4)
    assert r.sequences.env_step.obs.shape == (6, 9, 4)
    assert r.sequences.env_step.reward.shape == (6, 9) and r.sequences.env_step.first.dtype == jnp.bool_
    assert r.sequences.action.shape == (6, 8) and r.sequences.action.dtype == jnp.int32
    assert r.sequences.state["h"].shape == (6, 3) and r.sequences.state["n"].shape == (6,)
    assert r.pending.env_step.obs.shape == (1, 3, 4, 4) and r.pending.action.shape == (1, 3, 4)
    assert r.pending.state["h"].shape == (1, 3, 3)
    np.testing.assert_array_equal(r.priorities, np.zeros(6))
    assert int(r.size) == 0 and int(r.insert_pos) == 0 and float(r.max_priority) == 1.0
    assert not bool(r.has_prev[0])
    with pytest.raises(ValueError, match="capacity"):
        make_replay(capacity=2, B=3, T=4)


def test_first_cycle_inserts_nothing_second_inserts_b_sequences():
    T, B = 3, 4
    r = make_replay(capacity=8, B=B, T=T)
    s0 = structure(r)
    c0, c1 = make_cycle(0, T, B), make_cycle(1, T, B)
    r = add(r, *c0)
    assert structure(r) == s0
    assert int(r.size) == 0 and int(r.insert_pos) == 0 and bool(r.has_prev[0])
    np.testing.assert_array_equal(r.priorities, np.zeros(8))
    r = add(r, *c1)
    assert structure(r) == s0
    assert int(r.size) == B and int(r.insert_pos) == B
    np.testing.assert_array_equal(r.priorities, [1.0] * B + [0.0] * (8 - B))
    for b in range(B):
        env_step, action, state = expected_sequence(c0, c1, b)
        got = stored(r, b)
        assert_tree_equal(got.env_step, env_step)
        np.testing.assert_array_equal(got.action, action)
        # The stored state is the initial step state of the PREVIOUS cycle (cycle 0) for env b.
        assert_tree_equal(got.state, state)
        np.testing.assert_array_equal(got.state["h"], [0, 0, b])
        # Spot-check the layout: position k < T is cycle 0's step k, position T + k cycle 1's step k.
        np.testing.assert_array_equal(got.env_step.obs[T - 1], [0, 0, T - 1, b])
        np.testing.assert_array_equal(got.env_step.obs[T], [0, 1, 0, b])
        np.testing.assert_array_equal(got.env_step.obs[2 * T], [0, 1, T, b])
        np.testing.assert_array_equal(got.action, [_code(0, t, b) for t in range(T)] + [_code(1, t, b) for t in range(T)])


def test_an_action_pytree_is_stored_and_sampled_with_its_sequence():
    """The action slot may be a pytree: the action and what the actor decided it by (MuZero's
    search policy and value), stored and sampled exactly as a plain action."""
    T, B, A = 3, 2, 4

    def with_policy(cycle):
        state, env_step, action = cycle
        policy = jax.nn.one_hot(action % A, A) * 0.5 + 0.125  # a distribution per step, coded by the action
        return state, env_step, {"action": action, "policy": policy, "value": action.astype(jnp.float32) / 7}

    c0, c1, c2 = (with_policy(make_cycle(c, T, B)) for c in range(3))
    r = rp.init(8, B, T, *rp.example_rows(c0[1], c0[2], c0[0]))
    s0 = structure(r)
    for c in (c0, c1, c2):
        r = add(r, *c)
    assert structure(r) == s0 and int(r.size) == 2 * B
    for slot, (prev, cur) in enumerate([(c0, c1)] * B + [(c1, c2)] * B):
        b = slot % B
        got = stored(r, slot)
        for key in ("action", "policy", "value"):
            want = np.concatenate([np.asarray(prev[2][key])[:, b], np.asarray(cur[2][key])[:, b]])
            np.testing.assert_array_equal(got.action[key], want, err_msg=key)
    seqs, idx, _ = sample(r, jax.random.key(0), batch_size=5)
    for i, slot in enumerate(np.asarray(idx)):
        assert_tree_equal(jax.tree.map(lambda x: np.asarray(x)[i], seqs.action), stored(r, slot).action)
    with pytest.raises(ValueError, match="trajectory_action"):
        bad = dict(c2[2], policy=c2[2]["policy"][..., :2])
        rp.add_cycle(r, c2[0], c2[1], bad)


def test_many_cycles_keep_structure_and_contents():
    T, B = 2, 3
    r = make_replay(capacity=64, B=B, T=T)
    s0 = structure(r)
    cycles = [make_cycle(c, T, B) for c in range(6)]
    traces = []

    def counted(*args):
        traces.append(1)  # runs only while tracing
        return rp.add_cycle(*args)

    fresh_add = jax.jit(counted, donate_argnums=0)
    for c, cyc in enumerate(cycles):
        r = fresh_add(r, *cyc)
        assert structure(r) == s0
        assert int(r.size) == c * B
    assert len(traces) == 1  # one trace, with and without a pending cycle
    for c in range(1, 6):
        for b in range(B):
            got = stored(r, (c - 1) * B + b)
            env_step, action, state = expected_sequence(cycles[c - 1], cycles[c], b)
            assert_tree_equal(got, rp.Sequences(env_step, action, state))


def test_consecutive_sequences_of_an_env_overlap_by_T():
    T, B = 4, 2
    r = make_replay(capacity=16, B=B, T=T)
    cycles = [make_cycle(c, T, B, global_time=True) for c in range(4)]
    for cyc in cycles:
        r = add(r, *cyc)
    for b in range(B):
        seqs = [stored(r, k * B + b) for k in range(3)]  # cycles (0,1), (1,2), (2,3)
        for k, (a, nxt) in enumerate(zip(seqs, seqs[1:])):
            assert_tree_equal(jax.tree.map(lambda x: x[T:], a.env_step), jax.tree.map(lambda x: x[: T + 1], nxt.env_step))
            np.testing.assert_array_equal(a.action[T:], nxt.action[:T])
            # Sequence k starts at global time k*T: obs encode that time for all 2T + 1 steps.
            np.testing.assert_array_equal(a.env_step.obs[:, 2], np.arange(k * T, k * T + 2 * T + 1))
            # Its state is the initial state of cycle k (the one at global time k*T).
            np.testing.assert_array_equal(a.state["h"], [0, k, b])


def test_episode_edges_stay_in_place():
    T, B = 4, 3
    # env 1 terminates at global time 5 and restarts at 6; env 2 is truncated at 3, restarts at 4;
    # env 0 runs on. Sequence (cycles 0, 1) covers global times 0..8.
    flags = {"terminated": {(5, 1)}, "truncated": {(3, 2)}, "first": {(6, 1), (4, 2), (0, 0), (0, 1), (0, 2)}}
    r = make_replay(capacity=8, B=B, T=T)
    cycles = [make_cycle(c, T, B, flags=flags, global_time=True) for c in range(3)]
    for cyc in cycles:
        r = add(r, *cyc)
    assert int(r.size) == 2 * B

    def onehot(*ts, n=2 * T + 1):
        v = np.zeros(n, bool)
        v[list(ts)] = True
        return v

    first_seq = [stored(r, b) for b in range(B)]
    np.testing.assert_array_equal(first_seq[0].env_step.terminated, onehot())
    np.testing.assert_array_equal(first_seq[0].env_step.truncated, onehot())
    np.testing.assert_array_equal(first_seq[0].env_step.first, onehot(0))
    np.testing.assert_array_equal(first_seq[1].env_step.terminated, onehot(5))
    np.testing.assert_array_equal(first_seq[1].env_step.truncated, onehot())
    np.testing.assert_array_equal(first_seq[1].env_step.first, onehot(0, 6))
    np.testing.assert_array_equal(first_seq[2].env_step.terminated, onehot())
    np.testing.assert_array_equal(first_seq[2].env_step.truncated, onehot(3))
    np.testing.assert_array_equal(first_seq[2].env_step.first, onehot(0, 4))
    # Sequence (cycles 1, 2) covers global times 4..12: the same edges, shifted by T.
    second_seq = [stored(r, B + b) for b in range(B)]
    np.testing.assert_array_equal(second_seq[1].env_step.terminated, onehot(1))
    np.testing.assert_array_equal(second_seq[1].env_step.first, onehot(2))
    np.testing.assert_array_equal(second_seq[2].env_step.truncated, onehot())
    np.testing.assert_array_equal(second_seq[2].env_step.first, onehot(0))
    # Nothing from another env or another time: every entry encodes env b at its own time.
    for k, seqs in enumerate((first_seq, second_seq)):
        for b, s in enumerate(seqs):
            g = np.arange(k * T, k * T + 2 * T + 1)
            np.testing.assert_array_equal(s.env_step.obs, np.stack([0 * g, 0 * g, g, np.full_like(g, b)], -1))
            np.testing.assert_array_equal(s.env_step.reward, _code(0, g, b))
            np.testing.assert_array_equal(s.action, _code(0, g[:-1], b))


def test_ring_wraps_around_and_size_saturates():
    T, B, capacity = 2, 2, 5
    r = make_replay(capacity=capacity, B=B, T=T)
    s0 = structure(r)
    cycles = [make_cycle(c, T, B) for c in range(5)]
    sizes, positions = [], []
    for cyc in cycles:
        r = add(r, *cyc)
        assert structure(r) == s0
        sizes.append(int(r.size))
        positions.append(int(r.insert_pos))
    assert sizes == [0, 2, 4, 5, 5]
    assert positions == [0, 2, 4, 1, 3]
    # 8 sequences into 5 slots: (prev cycle, env) per slot. Pairs (0,1) -> 0,1; (1,2) -> 2,3;
    # (2,3) -> 4,0; (3,4) -> 1,2: the oldest are overwritten.
    expected = {0: (2, 1), 1: (3, 0), 2: (3, 1), 3: (1, 1), 4: (2, 0)}
    for slot, (c, b) in expected.items():
        env_step, action, state = expected_sequence(cycles[c], cycles[c + 1], b)
        assert_tree_equal(stored(r, slot), rp.Sequences(env_step, action, state))
    np.testing.assert_array_equal(r.priorities, np.ones(capacity))


def test_sources_are_kept_apart():
    T, B = 2, 2
    r = make_replay(capacity=16, B=B, T=T, num_sources=2)
    s0 = structure(r)
    # Inferencers 0 and 1 alternate on the queue; the source index may be traced.
    order = [(0, 0), (1, 0), (0, 1), (1, 1), (1, 2), (0, 2)]
    for s, c in order:
        r = add(r, *make_cycle(c, T, B, s=s), jnp.int32(s))
        assert structure(r) == s0
    assert int(r.size) == 4 * B
    written = [(0, 1), (1, 1), (1, 2), (0, 2)]  # (source, cycle) that completed a sequence
    for k, (s, c) in enumerate(written):
        for b in range(B):
            env_step, action, state = expected_sequence(make_cycle(c - 1, T, B, s=s), make_cycle(c, T, B, s=s), b)
            assert_tree_equal(stored(r, k * B + b), rp.Sequences(env_step, action, state))


def test_shape_or_dtype_mismatch_raises():
    T, B = 2, 2
    r = make_replay(capacity=4, B=B, T=T)
    state, env_step, action = make_cycle(0, T, B)
    with pytest.raises(ValueError, match="trajectory_action"):
        rp.add_cycle(r, state, env_step, action.astype(jnp.float32))
    with pytest.raises(ValueError, match="trajectory_env_step"):
        rp.add_cycle(r, state, jax.tree.map(lambda x: x[:T], env_step), action)
    with pytest.raises(ValueError, match="initial_step_state"):
        rp.add_cycle(r, jax.tree.map(lambda x: x[:1], state), env_step, action)


def test_typed_key_state():
    T, B = 2, 3
    keys = jax.random.split(jax.random.key(0), B)
    _, env_step, action = make_cycle(0, T, B)
    r = rp.init(4 * B, B, T, *rp.example_rows(env_step, action, {"key": keys}))
    s0 = structure(r)
    k1 = jax.random.split(jax.random.key(1), B)
    r = add(r, {"key": keys}, env_step, action)
    r = add(r, {"key": k1}, *make_cycle(1, T, B)[1:])
    assert structure(r) == s0
    np.testing.assert_array_equal(jax.random.key_data(r.sequences.state["key"][:B]), jax.random.key_data(keys))


def _replay_with_priorities(priorities):
    r = make_replay(capacity=len(priorities), B=1, T=2)
    p = jnp.asarray(priorities, jnp.float32)
    return r._replace(priorities=p, size=jnp.int32(int(np.sum(p > 0))))


def test_sampling_follows_priorities():
    r = _replay_with_priorities([0.0, 1.0, 3.0])
    n = 40_000
    _, idx, probs = sample(r, jax.random.key(0), batch_size=n, priority_exponent=0.9)
    idx = np.asarray(idx)
    counts = np.bincount(idx, minlength=3)
    assert counts[0] == 0
    w = np.array([0.0, 1.0, 3.0**0.9])
    p = w / w.sum()
    np.testing.assert_allclose(counts / n, p, atol=0.02)
    np.testing.assert_allclose(counts[2] / counts[1], 3.0**0.9, rtol=0.05)
    np.testing.assert_allclose(np.asarray(probs), p[idx], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(rp.sampling_probabilities(r, 0.9)), p, rtol=1e-5)
    # Exponent 0: uniform over filled slots; empty ones still never drawn.
    _, idx0, probs0 = sample(r, jax.random.key(1), batch_size=4000, priority_exponent=0.0)
    counts0 = np.bincount(np.asarray(idx0), minlength=3)
    assert counts0[0] == 0 and abs(counts0[1] / 4000 - 0.5) < 0.05
    np.testing.assert_allclose(np.asarray(probs0), 0.5)


def test_sampling_skips_empty_slots_anywhere_and_returns_stored_sequences():
    T, B = 2, 2
    r = make_replay(capacity=10, B=B, T=T)
    for c in range(3):
        r = add(r, *make_cycle(c, T, B))
    assert int(r.size) == 4
    # Fewer filled slots (4) than the batch: sampling is with replacement.
    batch, idx, probs = sample(r, jax.random.key(3), batch_size=64)
    idx = np.asarray(idx)
    assert set(idx.tolist()) <= {0, 1, 2, 3} and len(set(idx.tolist())) == 4
    np.testing.assert_allclose(np.asarray(probs), 0.25, rtol=1e-6)
    assert batch.env_step.obs.shape == (64, 2 * T + 1, 4) and batch.action.shape == (64, 2 * T)
    for j in range(64):
        assert_tree_equal(jax.tree.map(lambda x: x[j], np_tree(batch)), stored(r, idx[j]))
    # Empty slots in the middle of the ring are never drawn either.
    holes = _replay_with_priorities([2.0, 0.0, 0.0, 1.0, 0.0])
    _, idx, _ = sample(holes, jax.random.key(4), batch_size=2000)
    assert set(np.asarray(idx).tolist()) == {0, 3}


def test_sampling_an_empty_replay_is_finite():
    r = make_replay(capacity=4, B=2, T=2)
    batch, idx, probs = sample(r, jax.random.key(0), batch_size=8)
    np.testing.assert_array_equal(idx, np.zeros(8))
    np.testing.assert_array_equal(probs, np.zeros(8))
    assert all(np.all(np.isfinite(np.asarray(x, np.float32))) for x in jax.tree.leaves(batch))
    np.testing.assert_array_equal(importance_weights(probs, r.size), np.zeros(8))
    # Priority updates from such a batch are ignored: empty slots stay empty.
    r = update(r, idx, jnp.full(8, 5.0))
    np.testing.assert_array_equal(r.priorities, np.zeros(4))
    assert float(r.max_priority) == 1.0


def test_update_priorities_and_max_priority_for_new_sequences():
    T, B = 2, 2
    r = make_replay(capacity=6, B=B, T=T)
    s0 = structure(r)
    for c in range(2):
        r = add(r, *make_cycle(c, T, B))
    np.testing.assert_array_equal(r.priorities, [1, 1, 0, 0, 0, 0])
    r = update(r, jnp.array([0, 1]), jnp.array([0.5, 5.0]))
    assert structure(r) == s0
    np.testing.assert_allclose(r.priorities, [0.5, 5.0, 0, 0, 0, 0])
    assert float(r.max_priority) == 5.0
    # New sequences get the max priority seen so far.
    r = add(r, *make_cycle(2, T, B))
    np.testing.assert_allclose(r.priorities, [0.5, 5.0, 5.0, 5.0, 0, 0])
    # Lower priorities do not lower max_priority; zero is floored so the slot stays sampleable.
    r = update(r, jnp.array([1, 2]), jnp.array([0.0, 2.0]))
    np.testing.assert_allclose(r.priorities, [0.5, PRIORITY_FLOOR, 2.0, 5.0, 0, 0])
    assert float(r.max_priority) == 5.0
    _, _, probs = sample(r, jax.random.key(0), batch_size=16, priority_exponent=1.0)
    assert np.all(np.asarray(probs) > 0)
    # Updating an empty slot does nothing.
    r = update(r, jnp.array([4]), jnp.array([9.0]))
    np.testing.assert_allclose(r.priorities, [0.5, PRIORITY_FLOOR, 2.0, 5.0, 0, 0])
    assert float(r.max_priority) == 5.0
    r = add(r, *make_cycle(3, T, B))
    np.testing.assert_allclose(r.priorities, [0.5, PRIORITY_FLOOR, 2.0, 5.0, 5.0, 5.0])


def test_importance_weights():
    probs = jnp.array([0.5, 0.25, 0.25, 0.0])
    w = np.asarray(importance_weights(probs, jnp.int32(4), exponent=1.0))
    # (N p)^-1 = 0.5, 1, 1 normalized by the max 1; zero probability -> weight 0.
    np.testing.assert_allclose(w, [0.5, 1.0, 1.0, 0.0])
