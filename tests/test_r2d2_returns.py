"""R2D2's returns: value rescaling, n-step double-Q targets (hand-computed examples and a loop-based
numpy reference), sequence priorities and importance weights. Checks run with and without jit."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import parameterized

from sebulba.replay.priorities import importance_weights
from sebulba.agents.r2d2.returns import (
    n_step_double_q_targets,
    sequence_priority,
    signed_hyperbolic,
    signed_parabolic,
)


def _close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected, np.float64), rtol=rtol, atol=atol)


def _h(x, eps=1e-3):
    x = np.asarray(x, np.float64)
    return np.sign(x) * (np.sqrt(np.abs(x) + 1.0) - 1.0) + eps * x


def _h_inv(x, eps=1e-3):
    """The closed form of Pohlen et al. 2018, in float64."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * (((np.sqrt(1.0 + 4.0 * eps * (np.abs(x) + 1.0 + eps)) - 1.0) / (2.0 * eps)) ** 2 - 1.0)


# --- numpy reference with explicit loops -----------------------------------------------------------


def ref_targets(q_online, q_target, reward, terminated, truncated, discount, n, eps=1e-3):
    q_online, q_target, reward = (np.asarray(x, np.float64) for x in (q_online, q_target, reward))
    terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
    m = len(reward) - 1
    targets = np.zeros(m)
    for t in range(m):
        total, j = 0.0, 0
        while True:
            j += 1
            total += discount ** (j - 1) * reward[t + j]
            if terminated[t + j] or truncated[t + j] or j == n or t + j == m:
                break
        if not terminated[t + j]:
            a = np.argmax(q_online[t + j])
            total += discount**j * _h_inv(q_target[t + j, a], eps)
        targets[t] = _h(total, eps)
    return targets


class ValueRescalingTest(chex.TestCase):
    # A wide range: 0, tiny values, and up to 1e4 in magnitude, both signs.
    X = np.concatenate(
        [
            [0.0, 1e-30, -1e-30, 1e-20, 1e-8, -1e-8, 1e-4, -3e-3],
            np.linspace(-1e4, 1e4, 2001),
            np.geomspace(1e-6, 1e4, 200),
        ]
    ).astype(np.float32)

    @chex.variants(with_jit=True, without_jit=True)
    def test_hand_values(self):
        h = self.variant(signed_hyperbolic)
        # h(0) = 0;  h(3) = (2 - 1) + 0.003;  h(-8) = -(3 - 1) - 0.008.
        _close(h(jnp.array([0.0, 3.0, -8.0])), [0.0, 1.003, -2.008])
        # eps = 0: h(8) = 2, h^-1(2) = 3^2 - 1 = 8.
        _close(self.variant(functools.partial(signed_hyperbolic, eps=0.0))(jnp.array([8.0, -3.0])), [2.0, -1.0])
        _close(self.variant(functools.partial(signed_parabolic, eps=0.0))(jnp.array([2.0, -1.0])), [8.0, -3.0])
        hinv = self.variant(signed_parabolic)
        _close(hinv(jnp.array([0.0, 1.003, -2.008])), [0.0, 3.0, -8.0])

    @chex.variants(with_jit=True, without_jit=True)
    def test_matches_the_closed_forms(self):
        # The float64 closed form cancels below ~1e-4 (sqrt(1 + 1e-30) - 1 = 0); there its Taylor
        # series h(x) = (1/2 + eps) x - sign(x) x^2 / 8 + O(x^3) is exact to ~1e-9 relative.
        big = np.abs(self.X) >= 1e-4
        _close(self.variant(signed_hyperbolic)(self.X[big]), _h(self.X[big]), rtol=2e-6, atol=0)
        small = self.X[~big].astype(np.float64)
        taylor = 0.501 * small - np.sign(small) * small**2 / 8
        _close(self.variant(signed_hyperbolic)(self.X[~big]), taylor, rtol=2e-6, atol=0)
        y = np.linspace(-120.0, 120.0, 1001).astype(np.float32)
        _close(self.variant(signed_parabolic)(y), _h_inv(y), rtol=1e-5, atol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_round_trips(self):
        h, hinv = self.variant(signed_hyperbolic), self.variant(signed_parabolic)
        x = jnp.asarray(self.X)
        _close(hinv(h(x)), self.X, rtol=2e-6, atol=0)
        _close(h(hinv(x)), self.X, rtol=2e-6, atol=0)
        self.assertEqual(float(hinv(h(jnp.float32(0.0)))), 0.0)

    def test_gradients_at_zero(self):
        # h'(0) = 1/2 + eps; (h^-1)'(0) = 1 / h'(0).
        _close(jax.grad(signed_hyperbolic)(0.0), 0.501)
        _close(jax.grad(signed_parabolic)(0.0), 1 / 0.501)


# --- n-step double-Q targets: a hand-computed example ------------------------------------------------
#
# m = 5 (env steps 0..5, actions 0..4), n = 3, discount 0.5, 3 actions.
# Raw (unrescaled) Q tables; the test feeds h(Q) to the function (h is monotone, so argmaxes keep).
# The online argmax a*_k picks a target value v_k that is NOT the target's max (double Q matters):
#   step k:          0          1           2          3          4           5
#   online raw:  [1,0,0]    [0,1,0]     [0,0,1]    [1,0,0]    [0,1,0]     [0,0,1]
#   a*_k:            0          1           2          0          1           2
#   target raw:  [2,10,0]   [10,4,0]    [0,10,6]   [8,20,0]   [0,12,40]   [30,0,16]
#   v_k:             2          4           6          8         12          16
#   (max target:    10         10          10         20         40          30)
# Rewards r_k (arrive with env step k; r_0 = 7 is never used): [7, 1, 2, 3, 0, 4].
Q_ONLINE_RAW = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
Q_TARGET_RAW = np.array([[2, 10, 0], [10, 4, 0], [0, 10, 6], [8, 20, 0], [0, 12, 40], [30, 0, 16]], np.float32)
REWARDS = np.array([7, 1, 2, 3, 0, 4], np.float32)
NO_FLAGS = np.zeros(6, bool)
AT_3 = np.array([0, 0, 0, 1, 0, 0], bool)

# Case "terminated": env step 3 terminated, env step 4 the reset (reward 0).
#   t=0: steps 1, 2, 3; 3 is terminated (j = 3 = n): 1 + .5*2 + .25*3            = 2.75 (no bootstrap)
#   t=1: cut by the terminal, j = 2:                  2 + .5*3                    = 3.5  (no bootstrap)
#   t=2: j = 1:                                       3                           = 3    (no bootstrap)
#   t=3: out of the final step 3: masked by the caller, only required finite
#        (here r_4 + .5 r_5 + .25 v_5 = 6).
#   t=4: cut by the sequence end, j = 1, bootstraps from env step 5: 4 + .5*16   = 12
#        (single Q would use max 30: 4 + 15 = 19).
# Case "truncated": env step 3 truncated: windows as above but bootstrap from v_3 = 8:
#   t=0: 2.75 + .125*8 = 3.75;  t=1: 3.5 + .25*8 = 5.5;  t=2: 3 + .5*8 = 7;  t=3: masked;  t=4: 12.
# Case "no final step":
#   t=0: full n = 3 window: 1 + .5*2 + .25*3 + .125*v_3(8)       = 3.75
#   t=1: full window:       2 + .5*3 + .25*0 + .125*v_4(12)      = 5
#   t=2: j = 3 = m - t:     3 + .5*0 + .25*4 + .125*v_5(16)      = 6
#   t=3: cut by the sequence end, j = 2: 0 + .5*4 + .25*16       = 6
#   t=4: j = 1: 4 + .5*16                                        = 12
HAND_CASES = dict(
    terminated=(AT_3, NO_FLAGS, [2.75, 3.5, 3.0, np.nan, 12.0]),
    truncated=(NO_FLAGS, AT_3, [3.75, 5.5, 7.0, np.nan, 12.0]),
    no_final=(NO_FLAGS, NO_FLAGS, [3.75, 5.0, 6.0, 6.0, 12.0]),
)


def _random_sequence(seed, m, num_actions=4):
    rng = np.random.default_rng(seed)
    q_online = rng.normal(size=(m + 1, num_actions)).astype(np.float32) * 3
    q_target = rng.normal(size=(m + 1, num_actions)).astype(np.float32) * 3
    reward = rng.integers(-3, 4, size=m + 1).astype(np.float32)
    terminated = rng.random(m + 1) < 0.15
    truncated = rng.random(m + 1) < 0.1  # some steps both: they count as terminated
    return q_online, q_target, reward, terminated, truncated


class NStepDoubleQTargetsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(*((name, *case) for name, case in HAND_CASES.items()))
    def test_hand_example(self, terminated, truncated, expected_raw):
        f = self.variant(functools.partial(n_step_double_q_targets, discount=0.5, n=3))
        targets = f(signed_hyperbolic(Q_ONLINE_RAW), signed_hyperbolic(Q_TARGET_RAW), REWARDS, terminated, truncated)
        self.assertEqual(targets.shape, (5,))
        self.assertEqual(targets.dtype, jnp.float32)
        self.assertTrue(np.all(np.isfinite(targets)))
        expected_raw = np.asarray(expected_raw)
        valid = ~np.isnan(expected_raw)
        _close(np.asarray(targets)[valid], _h(expected_raw[valid]))
        _close(np.asarray(signed_parabolic(targets))[valid], expected_raw[valid], rtol=2e-5)

    @chex.variants(with_jit=True, without_jit=True)
    def test_terminated_and_truncated_counts_as_terminated(self):
        f = self.variant(functools.partial(n_step_double_q_targets, discount=0.5, n=3))
        targets = f(signed_hyperbolic(Q_ONLINE_RAW), signed_hyperbolic(Q_TARGET_RAW), REWARDS, AT_3, AT_3)
        _close(np.asarray(targets)[[0, 1, 2, 4]], _h([2.75, 3.5, 3.0, 12.0]))

    @chex.variants(with_jit=True, without_jit=True)
    def test_terminal_at_the_last_step(self):
        # Env step 5 terminated: t=4 gets r_5 = 4, no bootstrap; t=2 gets 3 + 0 + .25*4 = 4.
        terminated = np.array([0, 0, 0, 0, 0, 1], bool)
        f = self.variant(functools.partial(n_step_double_q_targets, discount=0.5, n=3))
        targets = f(signed_hyperbolic(Q_ONLINE_RAW), signed_hyperbolic(Q_TARGET_RAW), REWARDS, terminated, NO_FLAGS)
        _close(targets, _h([3.75, 5.0, 4.0, 2.0, 4.0]))

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.product(seed=[0, 1, 2, 3], n=[1, 3, 5])
    def test_matches_numpy_loop(self, seed, n):
        m = 20
        q_online, q_target, reward, terminated, truncated = _random_sequence(seed, m)
        f = self.variant(functools.partial(n_step_double_q_targets, discount=0.9, n=n))
        targets = np.asarray(f(q_online, q_target, reward, terminated, truncated))
        self.assertTrue(np.all(np.isfinite(targets)))
        expected = ref_targets(q_online, q_target, reward, terminated, truncated, 0.9, n)
        valid = ~(terminated[:-1] | truncated[:-1])
        self.assertGreater(valid.sum(), 5)
        self.assertLess(valid.sum(), m)
        _close(targets[valid], expected[valid], rtol=1e-5, atol=1e-5)

    @chex.variants(with_jit=True, without_jit=True)
    def test_n_longer_than_the_sequence(self):
        q_online, q_target, reward, terminated, truncated = _random_sequence(7, 6)
        f = self.variant(functools.partial(n_step_double_q_targets, discount=0.9, n=10))
        targets = np.asarray(f(q_online, q_target, reward, terminated, truncated))
        expected = ref_targets(q_online, q_target, reward, terminated, truncated, 0.9, 10)
        valid = ~(terminated[:-1] | truncated[:-1])
        _close(targets[valid], expected[valid], rtol=1e-5, atol=1e-5)

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(0, 1, 2)
    def test_n_equal_1_is_the_one_step_double_q_target(self, seed):
        q_online, q_target, reward, terminated, truncated = _random_sequence(seed, 20)
        targets = self.variant(functools.partial(n_step_double_q_targets, discount=0.9, n=1, eps=1e-2))(
            q_online, q_target, reward, terminated, truncated
        )
        # h(r_{t+1} + gamma (1 - terminated_{t+1}) h^-1(q_target[t+1, argmax q_online[t+1]])), every t.
        a = np.argmax(q_online[1:], axis=1)
        v = _h_inv(q_target[1:][np.arange(20), a], eps=1e-2)
        expected = _h(reward[1:] + 0.9 * (1.0 - terminated[1:]) * v, eps=1e-2)
        _close(targets, expected, rtol=1e-5, atol=1e-5)

    def test_vmaps_over_a_time_major_batch(self):
        seqs = [_random_sequence(s, 12) for s in range(3)]
        batch = [np.stack(x, axis=1) for x in zip(*seqs)]  # [m + 1, B, ...]
        fn = functools.partial(n_step_double_q_targets, discount=0.97, n=4)
        batched = jax.jit(jax.vmap(fn, in_axes=1, out_axes=1))(*batch)
        self.assertEqual(batched.shape, (12, 3))
        for b, seq in enumerate(seqs):
            _close(batched[:, b], fn(*seq))

    def test_targets_carry_no_gradient(self):
        q_online, q_target, reward, terminated, truncated = _random_sequence(0, 8)

        def f(qo, qt):
            return jnp.sum(n_step_double_q_targets(qo, qt, reward, terminated, truncated, 0.9, 3))

        g_online, g_target = jax.grad(f, argnums=(0, 1))(q_online, q_target)
        self.assertEqual(float(jnp.abs(g_online).sum() + jnp.abs(g_target).sum()), 0.0)

    def test_rejects_bad_inputs(self):
        q, r, d = np.zeros((6, 3), np.float32), np.zeros(6, np.float32), np.zeros(6, bool)
        with self.assertRaises(ValueError):
            n_step_double_q_targets(q, q, r, d, d, 0.9, 0)
        with self.assertRaises(AssertionError):
            n_step_double_q_targets(q, q, r[:5], d[:5], d[:5], 0.9, 3)
        with self.assertRaises(AssertionError):
            n_step_double_q_targets(q, q[:, :2], r, d, d, 0.9, 3)


class PriorityAndWeightsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_sequence_priority_by_hand(self):
        errors = jnp.array([1.0, 4.0, 2.0, 10.0])
        mask = jnp.array([True, True, True, False])  # the 10 is masked out
        # valid: max 4, mean 7/3 -> 0.9*4 + 0.1*7/3 = 3.8333...
        _close(self.variant(sequence_priority)(errors, mask), 0.9 * 4 + 0.1 * 7 / 3)
        # eta = 0.5 and a float mask: 0.5*4 + 0.5*7/3.
        f = self.variant(functools.partial(sequence_priority, eta=0.5))
        _close(f(errors, jnp.array([1.0, 1.0, 1.0, 0.0])), 0.5 * 4 + 0.5 * 7 / 3)
        # unmasked: max 10, mean 17/4.
        _close(self.variant(sequence_priority)(errors, jnp.ones(4, bool)), 0.9 * 10 + 0.1 * 17 / 4)
        # nothing valid -> 0.
        _close(self.variant(sequence_priority)(errors, jnp.zeros(4, bool)), 0.0)

    @chex.variants(with_jit=True, without_jit=True)
    def test_importance_weights_by_hand(self):
        p = jnp.array([0.1, 0.2, 0.4])
        # N = 10: N p = [1, 2, 4]; beta 0.5: [1, 1/sqrt(2), 1/2] (max is 1 already).
        _close(self.variant(importance_weights)(p, 10, 0.5), [1.0, 2**-0.5, 0.5])
        # beta 1, N = 5: N p = [.5, 1, 2] -> [2, 1, .5] / 2 = [1, .5, .25].
        _close(self.variant(importance_weights)(p, 5, 1.0), [1.0, 0.5, 0.25])
        # beta 0: all ones.
        _close(self.variant(importance_weights)(p, 10, 0.0), [1.0, 1.0, 1.0])
