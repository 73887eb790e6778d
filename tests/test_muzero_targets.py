"""MuZero's targets (sebulba/agents/muzero/targets.py) against hand-computed numbers and a plain
numpy reference written from the rules, loop by loop, over random sequences with terminations,
truncations and auto-resets."""

import jax
import numpy as np
import pytest

from sebulba.agents.muzero.targets import n_step_values, q_lambda_values, unroll_targets


def q_lambda_reference(max_q, rewards, terminated, truncated, discount, lambda_):
    """Peng's Q(lambda) value targets of the module docstring, one step at a time from the end."""
    length = len(max_q) - 1
    final = terminated | truncated
    z, known = np.zeros(length + 1), np.zeros(length + 1, bool)
    for s in reversed(range(length + 1)):
        if terminated[s]:
            z[s], known[s] = 0.0, True
        elif not final[s] and s < length:
            after = s + 1
            if terminated[after]:
                rest = 0.0
            elif truncated[after] or after == length:
                rest = max_q[after]
            else:
                rest = (1 - lambda_) * max_q[after] + lambda_ * z[after]
            z[s], known[s] = rewards[after] + discount * rest, True
    return z, known


def reference(values, rewards, terminated, truncated, actions, policies, discount, n, big_k, q_lambda=None):
    """The rules of the module docstring, one start t and one unroll step k at a time."""
    length = len(actions)
    final = terminated | truncated
    z, known = np.zeros(length + 1), np.zeros(length + 1, bool)
    for s in range(length + 1):
        if terminated[s]:
            z[s], known[s] = 0.0, True
            continue
        if truncated[s]:
            z[s] = values[s]
            continue
        ret, j = 0.0, 0
        while j < n and s + j + 1 <= length:
            j += 1
            ret += discount ** (j - 1) * rewards[s + j]
            if final[s + j]:
                break
        boot = 0.0 if terminated[s + j] else values[s + j]
        z[s], known[s] = ret + discount ** j * boot, j > 0
    if q_lambda is not None:
        z, known = q_lambda_reference(values, rewards, terminated, truncated, discount, q_lambda)
    num_actions = policies.shape[1]
    out = {name: np.zeros((length, big_k + 1)) for name in ("values", "rewards")}
    out.update({name: np.zeros((length, big_k + 1), bool) for name in ("value_mask", "reward_mask", "policy_mask",
                                                                         "observed")})
    out["policies"] = np.zeros((length, big_k + 1, num_actions))
    out["actions"] = np.zeros((length, big_k), actions.dtype)
    for t in range(length):
        end = None  # the episode's last step
        for s in range(t + 1, min(t + big_k, length) + 1):
            if final[s]:
                end = s
                break
        for k in range(big_k + 1):
            s = t + k
            if k < big_k and s < length:
                out["actions"][t, k] = actions[s]
            out["policies"][t, k] = policies[min(s, length - 1)]
            if final[t]:
                continue  # not a real start: all masked
            if s <= length and (end is None or s <= end):
                out["values"][t, k], out["value_mask"][t, k] = z[s], known[s]
                out["observed"][t, k] = True
                if k:
                    out["rewards"][t, k], out["reward_mask"][t, k] = rewards[s], True
                out["policy_mask"][t, k] = not final[s] and s < length
            elif end is not None and terminated[end]:  # absorbing
                out["value_mask"][t, k] = True
                out["reward_mask"][t, k] = k > 0
    return z, known, out


def random_sequence(rng, length, num_actions, p_end):
    terminated = rng.random(length + 1) < p_end
    truncated = ~terminated & (rng.random(length + 1) < p_end)
    values = rng.normal(size=length + 1).astype(np.float32)
    rewards = rng.normal(size=length + 1).astype(np.float32)
    actions = rng.integers(0, num_actions, length).astype(np.int32)
    policies = rng.dirichlet(np.ones(num_actions), length).astype(np.float32)
    return values, rewards, terminated, truncated, actions, policies


def test_hand_computed_n_step_values():
    # x_0 .. x_4; x_2 terminated, x_3 is the auto-reset's start of the next episode, x_4 goes on
    values = np.array([10.0, 20.0, 30.0, 40.0, 50.0], np.float32)
    rewards = np.array([0.0, 1.0, 2.0, 0.0, 4.0], np.float32)
    terminated = np.array([0, 0, 1, 0, 0], bool)
    truncated = np.zeros(5, bool)
    z, known = n_step_values(values, rewards, terminated, truncated, 0.5, 2)
    # z_0 = r1 + 0.5 r2 + 0.25 * 0 (x_2 terminated) = 2; z_1 = r2 = 2 (terminated next: no bootstrap);
    # z_2 = 0 (terminal); z_3 = r4 + 0.5 v4 = 4 + 25 = 29 (sequence end bootstraps); z_4 = v4, says nothing
    np.testing.assert_allclose(z, [2.0, 2.0, 0.0, 29.0, 50.0])
    assert known.tolist() == [True, True, True, True, False]
    # truncated instead: x_2's observation is real and bootstraps
    z, known = n_step_values(values, rewards, ~terminated & False, terminated, 0.5, 2)
    np.testing.assert_allclose(z[:3], [1.0 + 0.5 * 2.0 + 0.25 * 30.0, 2.0 + 0.5 * 30.0, 30.0])
    assert known.tolist()[:3] == [True, True, False]


def test_hand_computed_unroll_past_a_terminal_state():
    values = np.array([10.0, 20.0, 30.0, 40.0, 50.0], np.float32)
    rewards = np.array([0.0, 1.0, 2.0, 0.0, 4.0], np.float32)
    terminated = np.array([0, 0, 1, 0, 0], bool)
    actions = np.array([1, 0, 1, 1], np.int32)
    policies = np.tile(np.array([[0.25, 0.75]], np.float32), (4, 1))
    out = unroll_targets(values, rewards, terminated, np.zeros(5, bool), actions, policies, 0.5, 2, 3)
    # start 1: x_1 (z 2), x_2 terminal (z 0, reward 2), then absorbing: value 0, reward 0, no policy
    assert out.valid.tolist() == [True, True, False, True]
    np.testing.assert_allclose(out.values[1], [2.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(out.rewards[1], [0.0, 2.0, 0.0, 0.0])
    assert out.value_mask[1].tolist() == [True, True, True, True]
    assert out.reward_mask[1].tolist() == [False, True, True, True]
    assert out.policy_mask[1].tolist() == [True, False, False, False]
    assert out.observed[1].tolist() == [True, True, False, False]  # x_1, x_2; then no observation of its episode
    assert out.actions[1].tolist() == [0, 1, 1]
    # start 2 is the terminal state: not a start at all
    assert not out.value_mask[2].any() and not out.reward_mask[2].any() and not out.policy_mask[2].any()
    assert not out.observed[2].any()
    # start 3: x_3 (z 29), x_4 (its own bootstrap: masked), then past the sequence: unknown
    assert out.value_mask[3].tolist() == [True, False, False, False]
    assert out.reward_mask[3].tolist() == [False, True, False, False]
    assert out.policy_mask[3].tolist() == [True, False, False, False]  # x_4 = x_L: its search is the next sequence's
    assert out.observed[3].tolist() == [True, True, False, False]  # x_3, x_4 = x_L


@pytest.mark.parametrize("seed", range(8))
def test_unroll_targets_equal_the_plain_reference(seed):
    rng = np.random.default_rng(seed)
    length, num_actions = int(rng.integers(1, 14)), 3
    n, big_k = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    discount = float(rng.choice([0.5, 0.9, 0.997]))
    seq = random_sequence(rng, length, num_actions, p_end=float(rng.choice([0.1, 0.3, 0.6])))
    z_ref, known_ref, ref = reference(*seq, discount, n, big_k)
    z, known = jax.jit(n_step_values, static_argnums=5)(*seq[:4], discount, n)
    np.testing.assert_allclose(z, z_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(known, known_ref)
    out = jax.jit(unroll_targets, static_argnums=(7, 8))(*seq, discount, n, big_k)
    for name in ("value_mask", "reward_mask", "policy_mask", "observed", "actions", "policies"):
        np.testing.assert_array_equal(getattr(out, name), ref[name], err_msg=name)
    for name in ("values", "rewards"):
        np.testing.assert_allclose(getattr(out, name), ref[name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_hand_computed_q_lambda_values():
    max_q = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    rewards = np.array([0.0, 1.0, 1.0, 1.0], np.float32)
    none = np.zeros(4, bool)
    z, known = q_lambda_values(max_q, rewards, none, none, 0.5, 0.5)
    # z_2 = 1 + 0.5 * 4 = 3; z_1 = 1 + 0.5 (0.5 * 3 + 0.5 * 3) = 2.5; z_0 = 1 + 0.5 (0.5 * 2 + 0.5 * 2.5) = 2.125
    np.testing.assert_allclose(z, [2.125, 2.5, 3.0, 0.0])
    assert known.tolist() == [True, True, True, False]  # x_L: its own bootstrap
    terminated = np.array([False, False, True, False])
    z, known = q_lambda_values(max_q, rewards, terminated, none, 0.5, 0.5)
    # z_1 = 1 (x_2 terminated); z_0 = 1 + 0.5 (0.5 * 2 + 0.5 * 1) = 1.75; x_2 absorbing: 0
    np.testing.assert_allclose(z, [1.75, 1.0, 0.0, 0.0])
    assert known.tolist() == [True, True, True, False]
    z, known = q_lambda_values(max_q, rewards, none, terminated, 0.5, 0.5)  # x_2 truncated: bootstraps m_2 = 3
    np.testing.assert_allclose(z, [1 + 0.5 * (0.5 * 2 + 0.5 * 2.5), 2.5, 0.0, 0.0])
    assert known.tolist() == [True, True, False, False]


@pytest.mark.parametrize("seed", range(8))
def test_q_lambda_targets_equal_the_plain_reference_and_its_ends_the_n_step_ones(seed):
    rng = np.random.default_rng(100 + seed)
    length, num_actions, big_k = int(rng.integers(1, 14)), 3, int(rng.integers(1, 6))
    discount, lambda_ = float(rng.choice([0.5, 0.9, 0.997])), float(rng.choice([0.0, 0.65, 1.0]))
    seq = random_sequence(rng, length, num_actions, p_end=float(rng.choice([0.1, 0.3, 0.6])))
    z_ref, known_ref, ref = reference(*seq, discount, 1, big_k, q_lambda=lambda_)
    z, known = jax.jit(q_lambda_values)(*seq[:4], discount, lambda_)
    np.testing.assert_allclose(z, z_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(known, known_ref)
    out = jax.jit(unroll_targets, static_argnums=(7, 8))(*seq, discount, 1, big_k, lambda_)
    for name in ("value_mask", "reward_mask", "policy_mask", "observed", "actions", "policies"):
        np.testing.assert_array_equal(getattr(out, name), ref[name], err_msg=name)
    for name in ("values", "rewards"):
        np.testing.assert_allclose(getattr(out, name), ref[name], rtol=1e-5, atol=1e-5, err_msg=name)
    # lambda 0 is the one-step target and lambda 1 the return to the sequence's end, where they say something
    for lam, n in ((0.0, 1), (1.0, length)):
        z_lam, known_lam = q_lambda_values(*seq[:4], discount, lam)
        z_n, known_n = n_step_values(*seq[:4], discount, n)
        np.testing.assert_array_equal(known_lam, known_n)
        np.testing.assert_allclose(np.where(known_n, z_lam, 0), np.where(known_n, z_n, 0), rtol=1e-5, atol=1e-5)


def test_batched_by_vmap_and_bad_static_arguments_refused():
    rng = np.random.default_rng(0)
    seqs = [random_sequence(rng, 6, 2, 0.3) for _ in range(3)]
    batched = [np.stack(x) for x in zip(*seqs)]
    out = jax.vmap(lambda *a: unroll_targets(*a, 0.9, 3, 2))(*batched)
    for b, seq in enumerate(seqs):
        _, _, ref = reference(*seq, 0.9, 3, 2)
        np.testing.assert_array_equal(out.value_mask[b], ref["value_mask"])
    with pytest.raises(ValueError, match="n must be a Python int >= 1"):
        n_step_values(*seqs[0][:4], 0.9, 0)
    with pytest.raises(ValueError, match="unroll_steps must be a Python int >= 1"):
        unroll_targets(*seqs[0], 0.9, 3, 0)
