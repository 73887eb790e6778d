"""V-trace and IMPALA's losses: hand-computed examples, a loop-based numpy reference, masking at
episode boundaries, and the losses' gradients. Every check runs with and without jit."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import parameterized

from sebulba.agents.impala import losses
from sebulba.agents.impala.vtrace import vtrace, vtrace_td_error_and_advantage
from sebulba.distributions import DiagGaussian, MultiCategorical

# A T=3 trajectory used by the hand checks: V(x_0..x_3) = 1, 2, 3, 4; rewards 1, 2, 3; gamma 0.5.
# One-step TD errors r_s + gamma V(x_{s+1}) - V(x_s):
#   s=0: 1 + 0.5*2 - 1 = 1;  s=1: 2 + 0.5*3 - 2 = 1.5;  s=2: 3 + 0.5*4 - 3 = 2.
V = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
V_TM1, V_T = V[:-1], V[1:]
R_T = np.array([1.0, 2.0, 3.0], np.float32)
D_T = np.full(3, 0.5, np.float32)


def _rho(*x):
    return np.array(x, np.float32)


def _close(actual, expected, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected, np.float64), rtol=1e-5, atol=atol)


# --- numpy references with explicit loops ----------------------------------------------------------


def ref_vtrace_recursive(v_tm1, v_t, r_t, d_t, rho, lam, rho_bar, c_bar):
    """v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1})), v_T - V(x_T) = 0."""
    v_tm1, v_t, r_t, d_t, rho = (np.asarray(x, np.float64) for x in (v_tm1, v_t, r_t, d_t, rho))
    T = len(v_tm1)
    targets = np.zeros(T)
    diff_next = 0.0
    for s in reversed(range(T)):
        delta = min(rho_bar, rho[s]) * (r_t[s] + d_t[s] * v_t[s] - v_tm1[s])
        c = lam * min(c_bar, rho[s])
        diff = delta + d_t[s] * c * diff_next
        targets[s] = v_tm1[s] + diff
        diff_next = diff
    return targets


def ref_vtrace_sum(v_tm1, v_t, r_t, d_t, rho, lam, rho_bar, c_bar):
    """Eq. (1): v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i c_i) delta_t."""
    v_tm1, v_t, r_t, d_t, rho = (np.asarray(x, np.float64) for x in (v_tm1, v_t, r_t, d_t, rho))
    T = len(v_tm1)
    targets = np.zeros(T)
    for s in range(T):
        total, weight = 0.0, 1.0
        for t in range(s, T):
            delta = min(rho_bar, rho[t]) * (r_t[t] + d_t[t] * v_t[t] - v_tm1[t])
            total += weight * delta
            weight *= d_t[t] * lam * min(c_bar, rho[t])
        targets[s] = v_tm1[s] + total
    return targets


def ref_pg_advantage(v_tm1, v_t, r_t, d_t, rho, targets, pg_bar):
    v_tm1, v_t, r_t, d_t, rho = (np.asarray(x, np.float64) for x in (v_tm1, v_t, r_t, d_t, rho))
    T = len(v_tm1)
    q, adv = np.zeros(T), np.zeros(T)
    for s in range(T):
        v_next = targets[s + 1] if s + 1 < T else v_t[-1]
        q[s] = r_t[s] + d_t[s] * v_next
        adv[s] = min(pg_bar, rho[s]) * (q[s] - v_tm1[s])
    return q, adv


def _random_inputs(seed, T=20):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=T + 1).astype(np.float32)
    r_t = rng.normal(size=T).astype(np.float32)
    d_t = np.where(rng.random(T) < 0.15, 0.0, rng.uniform(0.8, 1.0, T)).astype(np.float32)
    d_t[T // 2] = 0.0  # at least one episode end inside the unroll
    rho = rng.uniform(0.1, 3.0, T).astype(np.float32)
    return values[:-1], values[1:], r_t, d_t, rho


class VTraceTest(chex.TestCase):
    # --- hand-computed examples ---

    @chex.variants(with_jit=True, without_jit=True)
    def test_on_policy_equals_n_step_return(self):
        # rho = 1 everywhere, lambda = 1: the bootstrapped Monte-Carlo return of the unroll.
        #   v_2 = 3 + 0.5 * V(x_3)=4 = 5
        #   v_1 = 2 + 0.5 * v_2 = 4.5
        #   v_0 = 1 + 0.5 * v_1 = 3.25
        out = self.variant(vtrace)(V_TM1, V_T, R_T, D_T, _rho(1, 1, 1))
        _close(out.targets, [3.25, 4.5, 5.0])
        _close(out.errors, [2.25, 2.5, 2.0])

    @chex.variants(with_jit=True, without_jit=True)
    def test_rho_above_threshold_is_clipped(self):
        # rho = 2 clipped to rho_bar = c_bar = 1: identical to the on-policy case.
        out = self.variant(vtrace)(V_TM1, V_T, R_T, D_T, _rho(2, 2, 2))
        _close(out.targets, [3.25, 4.5, 5.0])
        # rho_bar = 3 leaves rho = 2 in delta, c_bar = 1 still clips c to 1:
        #   deltas = 2 * (1, 1.5, 2) = (2, 3, 4)
        #   v_2 - V_2 = 4;  v_1 - V_1 = 3 + 0.5*1*4 = 5;  v_0 - V_0 = 2 + 0.5*1*5 = 4.5
        #   targets = (1 + 4.5, 2 + 5, 3 + 4) = (5.5, 7, 7)
        f = functools.partial(vtrace, clip_rho_threshold=3.0, clip_c_threshold=1.0)
        out = self.variant(f)(V_TM1, V_T, R_T, D_T, _rho(2, 2, 2))
        _close(out.targets, [5.5, 7.0, 7.0])

    @chex.variants(with_jit=True, without_jit=True)
    def test_rho_below_one(self):
        # rho = 0.5: deltas = 0.5 * (1, 1.5, 2) = (0.5, 0.75, 1); c = 0.5
        #   v_2 - V_2 = 1
        #   v_1 - V_1 = 0.75 + 0.5*0.5*1 = 1
        #   v_0 - V_0 = 0.5 + 0.5*0.5*1 = 0.75
        #   targets = (1.75, 3, 4)
        out = self.variant(vtrace)(V_TM1, V_T, R_T, D_T, _rho(0.5, 0.5, 0.5))
        _close(out.targets, [1.75, 3.0, 4.0])
        _close(out.errors, [0.75, 1.0, 1.0])

    @chex.variants(with_jit=True, without_jit=True)
    def test_lambda_scales_the_traces(self):
        # rho = 1, lambda = 0.5: deltas = (1, 1.5, 2), c = 0.5
        #   v_2 - V_2 = 2;  v_1 - V_1 = 1.5 + 0.5*0.5*2 = 2;  v_0 - V_0 = 1 + 0.25*2 = 1.5
        out = self.variant(functools.partial(vtrace, lambda_=0.5))(V_TM1, V_T, R_T, D_T, _rho(1, 1, 1))
        _close(out.targets, [2.5, 4.0, 5.0])

    # --- episode boundaries ---

    @chex.variants(with_jit=True, without_jit=True)
    def test_rho_zero_cuts_the_trace_at_a_final_state(self):
        # x_1 is a final (truncated) state; transition 1 is the auto-reset step, passed with rho 0.
        #   deltas = (1, 0, 2), c = (1, 0, 1)
        #   v_2 - V_2 = 2                     -> v_2 = 5 (the next episode, unaffected)
        #   v_1 - V_1 = 0 + 0.5*0*2 = 0       -> v_1 = V(x_1) = 2
        #   v_0 - V_0 = 1 + 0.5*1*0 = 1       -> v_0 = 2 = r_1 + gamma V(x_1): bootstraps (truncation)
        rho = _rho(1, 0, 1)
        f = self.variant(vtrace)
        out = f(V_TM1, V_T, R_T, D_T, rho)
        _close(out.targets, [2.0, 2.0, 5.0])
        _close(out.errors, [1.0, 0.0, 2.0])
        self.assertEqual(float(out.targets[1]), float(V_TM1[1]))
        # The discarded step's reward and discount do not matter.
        r2, d2 = R_T.copy(), D_T.copy()
        r2[1], d2[1] = 123.0, 0.99
        _close(f(V_TM1, V_T, r2, d2, rho).targets, [2.0, 2.0, 5.0])
        # A termination at x_1 (discount 0 into it): v_0 = r_1 = 1, nothing bootstrapped.
        d3 = D_T.copy()
        d3[0] = 0.0
        _close(f(V_TM1, V_T, R_T, d3, rho).targets, [1.0, 2.0, 5.0])
        # Without the cut (rho = 1) the trace would propagate across the boundary: v_0 = 3.25.
        self.assertAlmostEqual(float(f(V_TM1, V_T, R_T, D_T, _rho(1, 1, 1)).targets[0]), 3.25)

    # --- random inputs against the loop references ---

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.product(seed=[0, 1, 2, 3], lambda_=[1.0, 0.9])
    def test_matches_numpy_recursion(self, seed, lambda_):
        v_tm1, v_t, r_t, d_t, rho = _random_inputs(seed)
        rho[3] = 0.0  # an auto-reset step inside the unroll
        f = self.variant(functools.partial(vtrace_td_error_and_advantage, lambda_=lambda_, clip_pg_rho_threshold=1.5))
        out = f(v_tm1, v_t, r_t, d_t, rho)
        expected = ref_vtrace_recursive(v_tm1, v_t, r_t, d_t, rho, lambda_, 1.0, 1.0)
        by_sum = ref_vtrace_sum(v_tm1, v_t, r_t, d_t, rho, lambda_, 1.0, 1.0)
        np.testing.assert_allclose(expected, by_sum, rtol=1e-10, atol=1e-10)  # the two definitions agree
        _close(out.errors + v_tm1, expected, atol=1e-5)
        _close(out.errors, expected - v_tm1, atol=1e-5)
        q, adv = ref_pg_advantage(v_tm1, v_t, r_t, d_t, rho, expected, 1.5)
        _close(out.q_estimate, q, atol=1e-5)
        _close(out.pg_advantage, adv, atol=1e-5)

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(0, 1)
    def test_thresholds_and_vector_lambda_match_reference(self, seed):
        v_tm1, v_t, r_t, d_t, rho = _random_inputs(seed)
        f = self.variant(functools.partial(vtrace, clip_rho_threshold=2.0, clip_c_threshold=0.8))
        lam = np.full(20, 0.9, np.float32)
        out = f(v_tm1, v_t, r_t, d_t, rho, lam)
        _close(out.targets, ref_vtrace_recursive(v_tm1, v_t, r_t, d_t, rho, 0.9, 2.0, 0.8), atol=1e-5)
        # No clipping at all.
        g = self.variant(functools.partial(vtrace, clip_rho_threshold=None, clip_c_threshold=None))
        out = g(v_tm1, v_t, r_t, d_t, rho)
        _close(out.targets, ref_vtrace_recursive(v_tm1, v_t, r_t, d_t, rho, 1.0, np.inf, np.inf), atol=1e-4)

    def test_vmaps_over_a_time_major_batch(self):
        batch = [_random_inputs(s) for s in range(3)]
        stacked = [np.stack(x, axis=1) for x in zip(*batch)]  # [T, B]
        out = jax.jit(jax.vmap(vtrace, in_axes=1, out_axes=1))(*stacked)
        for b, inputs in enumerate(batch):
            _close(out.targets[:, b], ref_vtrace_recursive(*inputs, 1.0, 1.0, 1.0), atol=1e-5)

    # --- pg advantage ---

    @chex.variants(with_jit=True, without_jit=True)
    def test_pg_advantage_by_hand(self):
        # rho = (2, 0.5, 1), rho_bar = c_bar = 1: clipped rho = c = (1, 0.5, 1)
        #   deltas = (1*1, 0.5*1.5, 1*2) = (1, 0.75, 2)
        #   v_2 - V_2 = 2;  v_1 - V_1 = 0.75 + 0.5*0.5*2 = 1.25;  v_0 - V_0 = 1 + 0.5*1*1.25 = 1.625
        #   targets = (2.625, 3.25, 5)
        #   q = (1 + 0.5*v_1, 2 + 0.5*v_2, 3 + 0.5*V(x_3)) = (2.625, 4.5, 5)
        #   q - V(x_s) = (1.625, 2.5, 2)
        rho = _rho(2, 0.5, 1)
        out = self.variant(vtrace_td_error_and_advantage)(V_TM1, V_T, R_T, D_T, rho)
        _close(out.errors, [1.625, 1.25, 2.0])
        _close(out.q_estimate, [2.625, 4.5, 5.0])
        # rho_bar_pg = 1: advantages (1*1.625, 0.5*2.5, 1*2)
        _close(out.pg_advantage, [1.625, 1.25, 2.0])
        # rho_bar_pg = 2: rho 2 is no longer clipped: (2*1.625, 0.5*2.5, 1*2)
        f = functools.partial(vtrace_td_error_and_advantage, clip_pg_rho_threshold=2.0)
        _close(self.variant(f)(V_TM1, V_T, R_T, D_T, rho).pg_advantage, [3.25, 1.25, 2.0])

    @chex.variants(with_jit=True, without_jit=True)
    def test_pg_advantage_at_a_boundary(self):
        # Cut at step 1 (see test_rho_zero_cuts_the_trace_at_a_final_state): targets (2, 2, 5);
        #   q_0 = 1 + 0.5 * v_1 = 1 + 0.5 * V(x_1) = 2 -> adv_0 = 2 - 1 = 1
        #   adv_1 = 0 * (...) = 0;  q_2 = 3 + 0.5*4 = 5 -> adv_2 = 2
        out = self.variant(vtrace_td_error_and_advantage)(V_TM1, V_T, R_T, D_T, _rho(1, 0, 1))
        _close(out.pg_advantage, [1.0, 0.0, 2.0])

    @chex.variants(with_jit=True, without_jit=True)
    def test_gradients_flow_only_into_v_tm1(self):
        def f(v_tm1, v_t, rho):
            out = vtrace_td_error_and_advantage(v_tm1, v_t, R_T, D_T, rho)
            return jnp.sum(out.errors) + jnp.sum(out.pg_advantage) + jnp.sum(out.q_estimate)

        g_tm1, g_t, g_rho = self.variant(jax.grad(f, argnums=(0, 1, 2)))(V_TM1, V_T, _rho(2, 0.5, 1))
        _close(g_tm1, -np.ones(3))
        _close(g_t, np.zeros(3))
        _close(g_rho, np.zeros(3))


class LossesTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_baseline_loss_gradient_is_minus_masked_errors(self):
        mask = np.array([1.0, 0.0, 1.0], np.float32)
        rho = _rho(2, 0.5, 1)

        def loss(v_tm1):
            return losses.baseline_loss(vtrace(v_tm1, V_T, R_T, D_T, rho).errors, mask)

        errors = vtrace(V_TM1, V_T, R_T, D_T, rho).errors
        value, grad = self.variant(jax.value_and_grad(loss))(V_TM1)
        _close(value, 0.5 * np.sum(mask * np.asarray(errors) ** 2))
        _close(grad, -mask * np.asarray(errors))

    @chex.variants(with_jit=True, without_jit=True)
    def test_policy_gradient_loss(self):
        logits = jnp.array([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0], [3.0, -1.0, 0.0], [0.2, 0.1, -0.3]])
        a = jnp.array([1, 0, 2, 2])
        adv = jnp.array([1.5, -2.0, 0.5, 3.0])
        mask = jnp.array([1.0, 1.0, 0.0, 1.0])
        f = self.variant(jax.value_and_grad(losses.policy_gradient_loss, argnums=(0, 2)))
        value, (g_logits, g_adv) = f(logits, a, adv, mask)
        logp = jax.nn.log_softmax(logits)
        _close(value, -np.sum(mask * logp[np.arange(4), a] * adv), atol=1e-5)
        _close(g_adv, np.zeros(4))  # the advantage is a constant
        expected = -(mask * adv)[:, None] * (jax.nn.one_hot(a, 3) - jax.nn.softmax(logits))
        _close(g_logits, expected, atol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_entropy_loss(self):
        A, T = 5, 4
        uniform = jnp.zeros((T, A))
        _close(self.variant(losses.entropy_loss)(uniform, jnp.ones(T)), -T * np.log(A), atol=1e-5)
        _close(self.variant(losses.entropy_loss)(uniform, jnp.array([1.0, 0.0, 1.0, 0.0])), -2 * np.log(A), atol=1e-5)
        # A near-deterministic policy has entropy ~0.
        peaked = jnp.array([[100.0, 0.0, 0.0, 0.0, 0.0]] * T)
        _close(self.variant(losses.entropy_loss)(peaked, jnp.ones(T)), 0.0, atol=1e-5)

    @chex.variants(with_jit=True, without_jit=True)
    def test_impala_loss_composes_the_terms(self):
        rng = np.random.default_rng(0)
        T, A = 6, 3
        target = rng.normal(size=(T + 1, A)).astype(np.float32)
        behaviour = rng.normal(size=(T, A)).astype(np.float32)
        actions = rng.integers(0, A, T)
        values = rng.normal(size=T + 1).astype(np.float32)
        rewards = rng.normal(size=T).astype(np.float32)
        discounts = np.full(T, 0.9, np.float32)
        discounts[1] = 0.0  # terminated at x_2 ...
        mask = np.ones(T, bool)
        mask[2] = False  # ... so transition 2 is the auto-reset step
        behaviour[2] = 1e4 * np.eye(A)[(actions[2] + 1) % A]  # garbage there: log rho would be +1e4
        kw = dict(lambda_=0.9, baseline_cost=0.5, entropy_cost=0.01)
        total, metrics, count = self.variant(functools.partial(losses.impala_loss, **kw))(
            target, behaviour, actions, values, rewards, discounts, mask
        )
        self.assertTrue(np.isfinite(float(total)))
        self.assertEqual(float(count), T - 1)

        logp_t = np.asarray(jax.nn.log_softmax(target[:T]))[np.arange(T), actions]
        logp_b = np.asarray(jax.nn.log_softmax(behaviour))[np.arange(T), actions]
        rho = np.where(mask, np.exp(np.where(mask, logp_t - logp_b, 0.0)), 0.0)
        targets = ref_vtrace_recursive(values[:-1], values[1:], rewards, discounts, rho, 0.9, 1.0, 1.0)
        _, adv = ref_pg_advantage(values[:-1], values[1:], rewards, discounts, rho, targets, 1.0)
        m = mask.astype(np.float64)
        pg = -np.sum(m * logp_t * adv)
        base = 0.5 * np.sum(m * (targets - values[:-1]) ** 2)
        p = np.asarray(jax.nn.softmax(target[:T]))
        ent = -np.sum(p * np.log(p), -1)
        _close(metrics["pg_loss"], pg, atol=1e-5)
        _close(metrics["baseline_loss"], base, atol=1e-5)
        _close(metrics["entropy"], np.sum(m * ent), atol=1e-5)
        _close(metrics["rho"], np.sum(m * rho), atol=1e-5)
        _close(total, pg + 0.5 * base - 0.01 * np.sum(m * ent), atol=1e-5)
        # [T, A] target logits give the same result.
        total2, _, _ = self.variant(functools.partial(losses.impala_loss, **kw))(
            target[:T], behaviour, actions, values, rewards, discounts, mask
        )
        _close(total2, total, atol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_impala_loss_on_gaussian_policies(self):
        """Continuous IMPALA: rho from Gaussian log-probs of the (unclipped) sampled actions, summed
        over action dims; the numpy reference writes the densities out."""
        rng = np.random.default_rng(3)
        T, D = 6, 2
        mean_t, mean_b = rng.normal(size=(T + 1, D)).astype(np.float32), rng.normal(size=(T, D)).astype(np.float32)
        log_std_t = np.full((T + 1, D), -0.3, np.float32)
        log_std_b = rng.normal(0.0, 0.2, (T, D)).astype(np.float32)
        actions = rng.normal(size=(T, D)).astype(np.float32) * 2.0
        values = rng.normal(size=T + 1).astype(np.float32)
        rewards = rng.normal(size=T).astype(np.float32)
        discounts = np.full(T, 0.9, np.float32)
        discounts[3] = 0.0
        mask = np.ones(T, bool)
        mask[4] = False
        target, behaviour = DiagGaussian(mean_t, log_std_t), DiagGaussian(mean_b, log_std_b)
        kw = dict(lambda_=0.95, baseline_cost=0.5, entropy_cost=0.01)
        total, metrics, count = self.variant(functools.partial(losses.impala_loss, **kw))(
            target, behaviour, actions, values, rewards, discounts, mask)

        def logp(mean, log_std, a):
            return np.sum(-0.5 * ((a - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi), -1)

        logp_t = logp(mean_t[:T].astype(np.float64), log_std_t[:T], actions)
        rho = np.where(mask, np.exp(logp_t - logp(mean_b.astype(np.float64), log_std_b, actions)), 0.0)
        targets = ref_vtrace_recursive(values[:-1], values[1:], rewards, discounts, rho, 0.95, 1.0, 1.0)
        _, adv = ref_pg_advantage(values[:-1], values[1:], rewards, discounts, rho, targets, 1.0)
        m = mask.astype(np.float64)
        ent = np.sum(log_std_t[:T] + 0.5 + 0.5 * np.log(2 * np.pi), -1)
        pg, base = -np.sum(m * logp_t * adv), 0.5 * np.sum(m * (targets - values[:-1]) ** 2)
        self.assertEqual(float(count), T - 1)
        _close(metrics["rho"], np.sum(m * rho), atol=1e-4)
        _close(metrics["pg_loss"], pg, atol=1e-4)
        _close(metrics["baseline_loss"], base, atol=1e-4)
        _close(total, pg + 0.5 * base - 0.01 * np.sum(m * ent), atol=1e-4)

    @chex.variants(with_jit=True, without_jit=True)
    def test_impala_loss_on_multi_categorical_policies(self):
        """MultiDiscrete IMPALA: rho is the joint ratio, prod_d pi_d(a_d|x) / mu_d(a_d|x), one
        categorical per dim (nvec 2, 3: the 2-valued dim's logits padded), clipped once; the
        numpy reference takes each dim's softmax of its own slice of the flat logits."""
        rng = np.random.default_rng(7)
        T, nvec = 6, (2, 3)
        flat_t = rng.normal(size=(T + 1, 5)).astype(np.float32)
        flat_b = (flat_t[:T] + rng.normal(0.0, 0.7, (T, 5))).astype(np.float32)
        actions = np.stack([rng.integers(0, 2, T), rng.integers(0, 3, T)], -1)
        values = rng.normal(size=T + 1).astype(np.float32)
        rewards = rng.normal(size=T).astype(np.float32)
        discounts = np.full(T, 0.9, np.float32)
        discounts[2] = 0.0
        mask = np.ones(T, bool)
        mask[3] = False
        target = MultiCategorical.from_flat(jnp.asarray(flat_t), nvec)
        behaviour = MultiCategorical.from_flat(jnp.asarray(flat_b), nvec)
        kw = dict(lambda_=0.95, baseline_cost=0.5, entropy_cost=0.01)
        total, metrics, count = self.variant(functools.partial(losses.impala_loss, **kw))(
            target, behaviour, actions, values, rewards, discounts, mask)

        def log_softmax(x):
            x = x.astype(np.float64)
            return x - np.log(np.sum(np.exp(x), -1, keepdims=True))

        def joint(flat):  # (log pi(a) summed over dims, entropy summed over dims) per step
            logp_dims = [log_softmax(flat[:, :2]), log_softmax(flat[:, 2:])]
            logp = sum(lp[np.arange(len(flat)), actions[:len(flat), d]] for d, lp in enumerate(logp_dims))
            return logp, sum(-np.sum(np.exp(lp) * lp, -1) for lp in logp_dims)

        (logp_t, ent), (logp_b, _) = joint(flat_t[:T]), joint(flat_b)
        rho = np.where(mask, np.exp(logp_t - logp_b), 0.0)
        self.assertTrue(np.any(rho[mask] > 1.0) and np.any(rho[mask] < 1.0))  # the clip matters
        targets = ref_vtrace_recursive(values[:-1], values[1:], rewards, discounts, rho, 0.95, 1.0, 1.0)
        _, adv = ref_pg_advantage(values[:-1], values[1:], rewards, discounts, rho, targets, 1.0)
        m = mask.astype(np.float64)
        pg, base = -np.sum(m * logp_t * adv), 0.5 * np.sum(m * (targets - values[:-1]) ** 2)
        self.assertEqual(float(count), T - 1)
        _close(metrics["rho"], np.sum(m * rho), atol=1e-5)
        _close(metrics["rho_clipped"], np.sum(m * (rho > 1.0)))
        _close(metrics["entropy"], np.sum(m * ent), atol=1e-5)
        _close(metrics["pg_loss"], pg, atol=1e-5)
        _close(metrics["baseline_loss"], base, atol=1e-5)
        _close(total, pg + 0.5 * base - 0.01 * np.sum(m * ent), atol=1e-5)

    def test_impala_loss_gradients_are_finite_and_skip_masked_steps(self):
        rng = np.random.default_rng(1)
        T, A = 5, 4
        target = jnp.asarray(rng.normal(size=(T + 1, A)), jnp.float32)
        behaviour = rng.normal(size=(T, A)).astype(np.float32)
        behaviour[3] = 1e4  # garbage at the masked step
        actions = rng.integers(0, A, T)
        values = jnp.asarray(rng.normal(size=T + 1), jnp.float32)
        rewards = rng.normal(size=T).astype(np.float32)
        discounts = np.full(T, 0.9, np.float32)
        mask = np.array([1, 1, 1, 0, 1], bool)
        fn = lambda lg, v: losses.impala_loss(lg, behaviour, actions, v, rewards, discounts, mask)[0]
        g_logits, g_values = jax.jit(jax.grad(fn, argnums=(0, 1)))(target, values)
        self.assertTrue(np.all(np.isfinite(g_logits)) and np.all(np.isfinite(g_values)))
        _close(g_logits[3], np.zeros(A))  # the auto-reset step's action is not learned from
        _close(g_logits[T], np.zeros(A))  # the bootstrap observation's logits are unused
        _close(g_values[3], 0.0)  # its value has no baseline error (nothing else regresses to it: rho 0)

    def test_impala_loss_vmaps_over_a_time_major_batch(self):
        rng = np.random.default_rng(2)
        T, B, A = 4, 3, 2
        args = (
            rng.normal(size=(T + 1, B, A)).astype(np.float32),
            rng.normal(size=(T, B, A)).astype(np.float32),
            rng.integers(0, A, (T, B)),
            rng.normal(size=(T + 1, B)).astype(np.float32),
            rng.normal(size=(T, B)).astype(np.float32),
            np.full((T, B), 0.99, np.float32),
            rng.random((T, B)) > 0.3,
        )
        fn = functools.partial(losses.impala_loss, lambda_=1.0, entropy_cost=0.01)
        total, metrics, count = jax.jit(jax.vmap(fn, in_axes=1))(*args)
        self.assertEqual(total.shape, (B,))
        self.assertEqual(count.shape, (B,))
        self.assertEqual(float(count.sum()), float(args[-1].sum()))
        for b in range(B):
            tb, mb, _ = fn(*(x[:, b] for x in args))
            _close(total[b], tb, atol=1e-5)
            _close(metrics["pg_loss"][b], mb["pg_loss"], atol=1e-5)
