"""The search wrapper (sebulba/search.py) on mctx's own examples (its policies_test.py): a bandit
whose every action ends the episode with a known reward, so the chosen action, the improved
policy and the visit counts follow by hand from the rules of Gumbel MuZero and of PUCT."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("mctx", reason="the planning extra is not installed: pip install -e '.[planning]'")
import mctx  # noqa: E402

from sebulba.search import SearchConfig, search  # noqa: E402


def bandit(rewards):
    """mctx's bandit: every action ends the episode (discount 0) with rewards[b, action]."""

    def recurrent_fn(params, key, action, embedding):
        reward = rewards[jnp.arange(action.shape[0]), action]
        zeros = jnp.zeros_like(reward)
        return mctx.RecurrentFnOutput(reward=reward, discount=zeros, prior_logits=jnp.zeros_like(rewards), value=zeros), ()

    return recurrent_fn


# mctx's Gumbel example: actions 0 and 3 are invalid; 17 simulations, max depth 3
LOGITS, ROOT_VALUE = jnp.array([[0.0, -1.0, 2.0, 3.0]]), jnp.array([-5.0])
REWARDS, INVALID = jnp.array([[20.0, 3.0, -1.0, 10.0]]), jnp.array([[1.0, 0.0, 0.0, 1.0]])
GUMBEL = SearchConfig(num_simulations=17, max_depth=3, value_scale=0.05, maxvisit_init=60, gumbel_scale=0.0)


def gumbel_by_hand(num_simulations, value_scale, maxvisit_init, max_visits, rescale=True, size=1.0):
    """Gumbel MuZero's improved policy: softmax(logits + sigma(completed Q)), the unvisited
    (invalid) actions' Q completed by the mixed value, Q rescaled to [0, 1] (or as it is); the
    bandit's rewards and root value times `size`."""
    probs = np.asarray(jax.nn.softmax(jnp.where(INVALID, -jnp.inf, LOGITS)))[0]
    rewards, root_value = np.asarray(REWARDS)[0] * size, float(ROOT_VALUE[0]) * size
    mix = (root_value + num_simulations * (probs[1] * rewards[1] + probs[2] * rewards[2])) / (num_simulations + 1)
    completed = np.array([mix, rewards[1], rewards[2], mix])
    q = (completed - completed.min()) / (completed.max() - completed.min()) if rescale else completed
    sigma = (maxvisit_init + max_visits) * value_scale * q
    logits = np.where(np.asarray(INVALID)[0] > 0, -np.inf, np.asarray(LOGITS)[0] + sigma)
    return np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()


def test_gumbel_search_on_mctxs_bandit():
    root = mctx.RootFnOutput(prior_logits=LOGITS, value=ROOT_VALUE, embedding=())
    out = jax.jit(lambda key: search(GUMBEL, (), key, root, bandit(REWARDS), INVALID))(jax.random.key(0))
    # sequential halving over the two valid actions: 9 and 8 of the 17 simulations, none to invalid ones
    assert sorted(np.asarray(out.visit_counts)[0].tolist()) == [0, 0, 8, 9]
    assert np.asarray(out.visit_counts)[0, [0, 3]].tolist() == [0, 0]
    policy = gumbel_by_hand(17, 0.05, 60, max_visits=9)
    np.testing.assert_allclose(out.policy[0], policy, atol=1e-6)
    # with no Gumbel noise the action is the improved policy's argmax: action 1 (reward 3 beats the prior's 2)
    assert int(out.action[0]) == int(np.argmax(policy)) == 1
    # the root's search value: the root value and the 17 visited returns, averaged
    visits = np.asarray(out.visit_counts)[0]
    want = (float(ROOT_VALUE[0]) + visits[1] * 3.0 + visits[2] * -1.0) / 18
    np.testing.assert_allclose(out.value[0], want, rtol=1e-6)


def test_without_rescaling_the_improved_policy_leans_on_q_by_its_size():
    """rescale_values=False: sigma of the completed Q-values as they are. With the bandit's values
    a tenth as large, the rescaled policy is unchanged (its Q spans [0, 1] whatever their size) and
    the plain one tilts less towards the best action."""
    root = mctx.RootFnOutput(prior_logits=LOGITS, value=ROOT_VALUE / 10, embedding=())
    plain = dataclasses.replace(GUMBEL, rescale_values=False)
    out = jax.jit(lambda key: search(plain, (), key, root, bandit(REWARDS / 10), INVALID))(jax.random.key(0))
    max_visits = np.asarray(out.visit_counts)[0].max()
    np.testing.assert_allclose(out.policy[0], gumbel_by_hand(17, 0.05, 60, max_visits, rescale=False, size=0.1),
                               atol=1e-6)
    rescaled = jax.jit(lambda key: search(GUMBEL, (), key, root, bandit(REWARDS / 10), INVALID))(jax.random.key(0))
    np.testing.assert_allclose(rescaled.policy[0], gumbel_by_hand(17, 0.05, 60, 9), atol=1e-6)
    assert float(out.policy[0, 1]) < float(rescaled.policy[0, 1])


def test_gumbel_noise_changes_only_what_it_should():
    """With Gumbel noise the improved policy (the learning target) is the same function of the
    visited Q-values; the action is one of the valid actions, never an invalid one."""
    root = mctx.RootFnOutput(prior_logits=LOGITS, value=ROOT_VALUE, embedding=())
    noisy = dataclasses.replace(GUMBEL, gumbel_scale=1.0)
    run = jax.jit(lambda key: search(noisy, (), key, root, bandit(REWARDS), INVALID))  # one compile, eight keys
    for seed in range(8):
        out = run(jax.random.key(seed))
        assert int(out.action[0]) in (1, 2)
        visits = np.asarray(out.visit_counts)[0]
        np.testing.assert_allclose(out.policy[0], gumbel_by_hand(17, 0.05, 60, visits.max()), atol=1e-6)


def test_puct_search_on_mctxs_example():
    """mctx's PUCT example: one simulation, no Dirichlet noise: the prior's best valid action,
    which is then the whole visit-count policy."""
    root = mctx.RootFnOutput(prior_logits=jnp.array([[-1.0, 0.0, 2.0, 3.0]]), value=jnp.array([0.0]), embedding=())
    config = SearchConfig(algorithm="puct", num_simulations=1, dirichlet_fraction=0.0)
    out = search(config, (), jax.random.key(0), root, bandit(jnp.zeros((1, 4))), jnp.array([[0.0, 0.0, 0.0, 1.0]]))
    assert int(out.action[0]) == 2
    np.testing.assert_allclose(out.policy, [[0.0, 0.0, 1.0, 0.0]])
    assert np.asarray(out.visit_counts).tolist() == [[0, 0, 1, 0]]


@pytest.mark.parametrize("kwargs, match", [
    ({"algorithm": "alphago"}, "algorithm must be one of"),
    ({"num_simulations": 0}, "num_simulations must be >= 1"),
    ({"max_depth": 0}, "max_depth must be >= 1 or None"),
    ({"max_num_considered_actions": 0}, "max_num_considered_actions must be >= 1"),
    ({"gumbel_scale": -1.0}, "gumbel_scale must be >= 0"),
    ({"rescale_values": 1}, "rescale_values must be a bool"),
    ({"value_scale": 0.0}, "value_scale must be > 0"),
    ({"dirichlet_fraction": 1.5}, "dirichlet_fraction must be in"),
    ({"temperature": 0.0}, "pb_c_init and temperature must be > 0"),
])
def test_bad_search_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SearchConfig(**kwargs)
    with pytest.raises(TypeError):
        SearchConfig(num_simualtions=4)  # a misspelled knob is an error
