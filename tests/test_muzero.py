"""MuZero on the loops (sebulba/agents/muzero): its config's rules, the search policies the actors
store, no retrace once warm on one and four learner devices, and the CartPole learning bar at a
small budget (the preset's full bar, seeds 0-2: benchmarks/bench_muzero.py)."""

import dataclasses
import signal
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mctx", reason="the planning extra is not installed: pip install -e '.[planning]'")

import envs  # noqa: E402
import sebulba  # noqa: E402
from sebulba.agents.muzero.agent import MuZero  # noqa: E402
from sebulba.agents.muzero.config import MuZeroConfig  # noqa: E402
from tests.support.cli import ROOT, child_env, last_metrics, run_experiment  # noqa: E402
from tests.test_off_policy_resume import TIMING  # noqa: E402
from tests.test_resume_drills import WAIT_S, final_row, wait_for_checkpoint  # noqa: E402

CARTPOLE = envs.make_spec("CartPole-v1")
SMALL = MuZeroConfig(hidden_sizes=(16,), latent_size=8, sequence_length=8, unroll_steps=3, td_steps=4, num_simulations=4,
                     batch_size=4, optims_per_cycle=2, replay_capacity=64, min_replay_size=4)


@pytest.mark.parametrize("kwargs, match", [
    ({"sequence_length": 7}, "sequence_length must be even"),
    ({"unroll_steps": 0}, "unroll_steps must be > 0"),
    ({"min_replay_size": 0}, "min_replay_size must be in"),
    ({"num_simulations": 0}, "num_simulations must be >= 1"),
    ({"value_loss_weight": -1.0}, "value_loss_weight must be >= 0"),
    ({"entropy_cost": -0.01}, "entropy_cost must be >= 0"),
    ({"epsilon_base": 1.5}, "epsilon_base must be in"),
    ({"value_target": "mcts"}, "value_target must be one of"),
    ({"consistency_weight": -2.0}, "consistency_weight must be >= 0"),
    ({"entropy_decay_steps": 0}, "entropy_decay_steps must be >= 1 or None"),
    ({"value_lambda": 1.5}, r"value_lambda must be in \[0, 1\]"),
])
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MuZeroConfig(**kwargs)
    with pytest.raises(TypeError):
        MuZeroConfig(num_simualtions=4)  # a misspelled key is an error


def _sequences(rng, b: int, length: int, terminated_at=(), truncated_at=(), obs_size: int = 4, num_actions: int = 2):
    """Random sequences [b, L + 1] of CartPole-shaped steps, episodes ending (terminated or
    truncated) at the steps given, the next step starting the next."""
    import jax
    import jax.numpy as jnp

    from sebulba.replay.sequences import Sequences
    from sebulba.types import EnvStep

    obs = jnp.asarray(rng.normal(size=(b, length + 1, obs_size)), jnp.float32)
    flags = jnp.zeros((b, length + 1), bool)
    terminated, truncated = flags.at[:, list(terminated_at)].set(True), flags.at[:, list(truncated_at)].set(True)
    first = flags.at[:, 0].set(True).at[:, [t + 1 for t in (*terminated_at, *truncated_at)]].set(True)
    env_step = EnvStep(obs, jnp.asarray(rng.normal(size=(b, length + 1)), jnp.float32), terminated, truncated, first)
    policy = jax.nn.softmax(jnp.asarray(rng.normal(size=(b, length, num_actions)), jnp.float32))
    actions = jnp.asarray(rng.integers(0, num_actions, (b, length)), jnp.int32)
    return Sequences(env_step, {"action": actions, "policy": policy}, ())


def test_the_entropy_bonus_is_the_loss_less_entropy_cost_times_the_priors_entropy():
    """The same sequences and networks: the loss with entropy_cost c is the loss without it less c
    times the prior's entropy (reported), which lies in (0, ln A]."""
    import jax
    import jax.numpy as jnp

    b, length = 2, SMALL.sequence_length
    seqs = _sequences(np.random.default_rng(0), b, length, terminated_at=(5,))
    plain = MuZero(CARTPOLE, SMALL)
    nets = plain.init_networks(jax.random.key(0))
    weights = jnp.ones(b)
    loss0, (m0, _) = plain._sequence_loss(nets.online, nets.target, seqs, weights)
    bonus = MuZero(CARTPOLE, dataclasses.replace(SMALL, entropy_cost=0.3))
    loss1, (m1, _) = bonus._sequence_loss(nets.online, nets.target, seqs, weights)
    assert float(m0["entropy"]) == float(m1["entropy"]) and 0.0 < float(m0["entropy"]) <= np.log(2) + 1e-6
    np.testing.assert_allclose(float(loss1), float(loss0) - 0.3 * float(m0["entropy"]), rtol=1e-6)

    # entropy_decay_steps N: the weight falls linearly from 0.3 at step 0 to 0 at step N, and stays there
    decaying = MuZero(CARTPOLE, dataclasses.replace(SMALL, entropy_cost=0.3, entropy_decay_steps=400))
    for updates, weight in ((0, 0.3), (100, 0.225), (200, 0.15), (400, 0.0), (1000, 0.0)):
        loss, _ = decaying._sequence_loss(nets.online, nets.target, seqs, weights, jnp.int32(updates))
        np.testing.assert_allclose(float(loss), float(loss0) - weight * float(m0["entropy"]), rtol=1e-6,
                                   err_msg=f"after {updates} updates")


def test_the_consistency_loss_is_efficientzeros_by_hand_and_stops_its_targets_gradient():
    """EfficientZero's consistency term, one (t, k) at a time by the networks' own functions: minus
    the cosine of predictor(project(g^k(h(x_t), a_t..))) and project(h(x_{t+k})); the sequence loss
    is the plain one plus the weight times its masked mean (the steps of t's episode only); no
    gradient reaches the parameters through the target side; without the weight there are no
    projection parameters at all."""
    import jax
    import jax.numpy as jnp

    from sebulba.agents.muzero.networks import MuZeroNet, unroll

    b, length, big_k = 2, SMALL.sequence_length, SMALL.unroll_steps
    seqs = _sequences(np.random.default_rng(1), b, length, truncated_at=(4,))  # x_5 starts the next episode
    agent = MuZero(CARTPOLE, dataclasses.replace(SMALL, consistency_weight=2.0))
    nets = agent.init_networks(jax.random.key(3))
    plain = MuZero(CARTPOLE, SMALL)
    assert not any("projection" in k or "predictor" in k for k in plain.init_networks(jax.random.key(3)).online["params"])
    assert {"projection_0", "projection_1", "predictor_0", "predictor_1"} <= set(nets.online["params"])

    params, net = nets.online, agent.net
    obs, actions = np.asarray(seqs.env_step.obs), np.asarray(seqs.action["action"])
    starts = jnp.asarray(obs[:, :length].reshape(b * length, -1))
    unrolled_actions = np.zeros((b, length, big_k), np.int32)
    for t in range(length):
        for k in range(big_k):
            unrolled_actions[:, t, k] = actions[:, t + k] if t + k < length else 0
    out = unroll(net, params, starts, jnp.asarray(unrolled_actions.reshape(b * length, big_k)))
    got = np.asarray(agent._consistency(params, seqs.env_step.obs, out.latents, b, length))
    want = np.zeros((b, length, big_k))
    for i in range(b):
        for t in range(length):
            for k in range(1, big_k + 1):
                latent = out.latents[i * length + t, k]
                x = net.apply(params, net.apply(params, latent, method=MuZeroNet.project), method=MuZeroNet.predict_projection)
                y = net.apply(params, net.apply(params, jnp.asarray(obs[i, min(t + k, length)])[None],
                                                method=MuZeroNet.represent), method=MuZeroNet.project)[0]
                want[i, t, k - 1] = -float(jnp.dot(x, y) / (jnp.linalg.norm(x) * jnp.linalg.norm(y)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

    # in the sequence loss: the plain loss plus 2 x the mean over the steps of t's episode
    weights = jnp.ones(b)
    loss, (metrics, _) = agent._sequence_loss(params, nets.target, seqs, weights)
    base = MuZero(CARTPOLE, SMALL)
    base.net = net  # the same networks (their extra heads unused by the plain loss)
    loss0, _ = base._sequence_loss(params, nets.target, seqs, weights)
    mask = np.zeros((b, length, big_k), bool)
    for t in range(length):  # x_4 truncated: starts 0-3 see up to x_4, start 4 is not a start, 5-7 to the sequence's end
        if t == 4:
            continue
        last = 4 if t < 4 else length
        for k in range(1, big_k + 1):
            mask[:, t, k - 1] = t + k <= last
    per_seq = (want * mask).sum((1, 2)) / mask.sum((1, 2))
    np.testing.assert_allclose(float(metrics["consistency_loss"]), per_seq.mean(), rtol=1e-5)
    np.testing.assert_allclose(float(loss), float(loss0) + 2.0 * per_seq.mean(), rtol=1e-5)

    # the targets' side carries no gradient: the same as with them computed beforehand as constants
    flat_actions = jnp.asarray(unrolled_actions.reshape(b * length, big_k))

    def constant_targets(p):
        projected = net.apply(params, net.apply(params, jnp.asarray(obs.reshape(-1, 4)), method=MuZeroNet.represent),
                              method=MuZeroNet.project).reshape(b, length + 1, -1)
        s = np.minimum(np.arange(length)[:, None] + np.arange(1, big_k + 1)[None, :], length)
        latents = unroll(net, p, starts, flat_actions).latents[:, 1:]
        x = net.apply(p, net.apply(p, latents, method=MuZeroNet.project), method=MuZeroNet.predict_projection)
        x, y = x.reshape(b, length, big_k, -1), projected[:, s]
        unit = lambda v: v / jnp.linalg.norm(v, axis=-1, keepdims=True)  # noqa: E731
        return -jnp.sum(unit(x) * unit(y))

    grads = jax.grad(lambda p: agent._consistency(p, seqs.env_step.obs, unroll(net, p, starts, flat_actions).latents,
                                                  b, length).sum())(params)
    fixed = jax.grad(constant_targets)(params)
    jax.tree.map(lambda g, f: np.testing.assert_allclose(g, f, rtol=1e-4, atol=1e-6), grads, fixed)


def test_search_value_targets_bootstrap_from_the_stored_root_values():
    """value_target="search": the n-step targets bootstrap from the values stored beside the search
    policies (x_0..x_{L-1}) and the target network's at x_L. Stored values equal to the target
    network's own give the "network" loss exactly; other stored values change it. The actors store
    the search's root value."""
    import jax
    import jax.numpy as jnp

    from sebulba.agents.muzero.networks import MuZeroNet
    from sebulba.agents.r2d2.returns import signed_parabolic
    from sebulba.replay.sequences import Sequences
    from sebulba.types import EnvStep

    b, length = 2, SMALL.sequence_length
    seqs = _sequences(np.random.default_rng(0), b, length, terminated_at=(7,))  # an episode ends mid-sequence
    obs, env_step, action = seqs.env_step.obs, seqs.env_step, seqs.action
    flags = jnp.zeros((b, length + 1), bool)
    network = MuZero(CARTPOLE, SMALL)
    searched = MuZero(CARTPOLE, dataclasses.replace(SMALL, value_target="search"))
    nets = network.init_networks(jax.random.key(0))
    nets = nets._replace(target=jax.tree.map(lambda x: x * 1.5, nets.target))  # a target unlike the online networks
    net = network.net
    latent = net.apply(nets.target, obs.reshape(-1, 4), method=MuZeroNet.represent)
    own = signed_parabolic(net.apply(nets.target, latent, method=MuZeroNet.predict).value, SMALL.rescaling_eps)
    own = own.reshape(b, length + 1)
    weights = jnp.ones(b)
    want, (m_want, _) = network._sequence_loss(nets.online, nets.target, Sequences(env_step, action, ()), weights)
    same = Sequences(env_step, {**action, "value": own[:, :length]}, ())
    got, (m_got, _) = searched._sequence_loss(nets.online, nets.target, same, weights)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    other = Sequences(env_step, {**action, "value": own[:, :length] + 5.0}, ())
    _, (m_other, _) = searched._sequence_loss(nets.online, nets.target, other, weights)
    assert abs(float(m_other["value_loss"]) - float(m_want["value_loss"])) > 1e-3
    # the actors store the search's root value beside its policy
    step_state = searched.init_step_state(nets, b, jax.random.key(1))
    out, _ = searched.step(nets, step_state, EnvStep(obs[:, 0], jnp.zeros(b), flags[:, 0], flags[:, 0], flags[:, 0]))
    assert set(out.extras) == {"policy", "value"} and out.extras["value"].shape == (b,)
    assert set(network.step(nets, step_state, EnvStep(obs[:, 0], jnp.zeros(b), flags[:, 0], flags[:, 0],
                                                      flags[:, 0]))[0].extras) == {"policy"}


def test_q_lambda_value_targets_bootstrap_from_the_target_networks_greedy_lookahead():
    """value_target="q_lambda": the greedy value of x is max_a r(x, a) + gamma v(g(h(x), a)) of the
    target network (by hand here); with lambda 1 and an episode terminated at the sequence's last
    step the targets are the discounted rewards, as the n-step targets over the whole sequence are
    (the same loss); with no episode end the bootstraps count, through the target's dynamics: a
    change of them moves the q_lambda loss and leaves the network one's."""
    import jax
    import jax.numpy as jnp

    from sebulba.agents.muzero.networks import MuZeroNet, one_step_q
    from sebulba.agents.r2d2.returns import signed_parabolic

    b, length, eps = 2, SMALL.sequence_length, SMALL.rescaling_eps
    network = MuZero(CARTPOLE, dataclasses.replace(SMALL, td_steps=length))
    greedy = MuZero(CARTPOLE, dataclasses.replace(SMALL, value_target="q_lambda", value_lambda=1.0))
    nets = network.init_networks(jax.random.key(0))
    nets = nets._replace(target=jax.tree.map(lambda x: x * 1.5, nets.target))
    net = network.net
    latent = net.apply(nets.target, jnp.asarray(np.random.default_rng(1).normal(size=(5, 4)), jnp.float32),
                       method=MuZeroNet.represent)
    by_hand = []
    for a in range(2):
        next_latent, reward = net.apply(nets.target, latent, jnp.full(5, a), method=MuZeroNet.dynamics)
        value = net.apply(nets.target, next_latent, method=MuZeroNet.predict).value
        by_hand.append(signed_parabolic(reward, eps) + SMALL.discount * signed_parabolic(value, eps))
    np.testing.assert_allclose(one_step_q(net, nets.target, latent, 2, SMALL.discount, eps), jnp.stack(by_hand, -1),
                               rtol=1e-5, atol=1e-6)

    weights = jnp.ones(b)
    ended = _sequences(np.random.default_rng(0), b, length, terminated_at=(length,))
    want, _ = network._sequence_loss(nets.online, nets.target, ended, weights)
    got, _ = greedy._sequence_loss(nets.online, nets.target, ended, weights)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)

    running = _sequences(np.random.default_rng(0), b, length)
    moved = {**nets.target, "params": {**nets.target["params"], "reward_out": jax.tree.map(
        lambda x: x + 0.5, nets.target["params"]["reward_out"])}}
    for agent, moves in ((greedy, True), (network, False)):
        before, _ = agent._sequence_loss(nets.online, nets.target, running, weights)
        after, _ = agent._sequence_loss(nets.online, moved, running, weights)
        assert (abs(float(after) - float(before)) > 1e-4) == moves


def test_the_exploration_floor_acts_at_random_and_keeps_the_search_policy():
    """epsilon_base 1: every env acts uniformly at random while the stored policy is still the
    search's (the same as without the floor, same key); evaluation ignores the floor; 0: the
    search's action. Ape-X's spread: env i of N has epsilon_base ** (1 + alpha i / (N - 1))."""
    import jax
    import jax.numpy as jnp

    from sebulba.types import EnvStep

    n = 256
    obs = jnp.asarray(np.random.default_rng(1).normal(size=(n, 4)), jnp.float32)
    flags = jnp.zeros(n, bool)
    env_step = EnvStep(obs, jnp.zeros(n), flags, flags, flags)
    greedy = MuZero(CARTPOLE, SMALL)
    floor = MuZero(CARTPOLE, dataclasses.replace(SMALL, epsilon_base=1.0))
    nets = greedy.init_networks(jax.random.key(0))
    s0, s1 = greedy.init_step_state(nets, n, jax.random.key(3)), floor.init_step_state(nets, n, jax.random.key(3))
    assert float(s0.epsilon.max()) == 0.0 and float(s1.epsilon.min()) == 1.0
    (a0, _), (a1, _) = greedy.step(nets, s0, env_step), floor.step(nets, s1, env_step)
    np.testing.assert_array_equal(a0.extras["policy"], a1.extras["policy"])  # the same search
    searched = np.asarray(a0.extras["policy"]).argmax(-1)
    assert np.mean(np.asarray(a0.action) == searched) > 0.9  # Gumbel's sample mostly the improved policy's best
    random = np.asarray(a1.action)
    assert set(random.tolist()) == {0, 1} and 0.35 < random.mean() < 0.65  # uniform, whatever the search chose
    e0, _ = greedy.evaluation_step(nets, s0, env_step)
    e1, _ = floor.evaluation_step(nets, s1, env_step)
    np.testing.assert_array_equal(e0.action, e1.action)
    spread = MuZero(CARTPOLE, dataclasses.replace(SMALL, epsilon_base=0.4, epsilon_alpha=7.0)).init_step_state(nets, 3, jax.random.key(0))
    np.testing.assert_allclose(spread.epsilon, [0.4, 0.4 ** 4.5, 0.4 ** 8], rtol=1e-6)


def test_continuous_actions_are_refused():
    with pytest.raises(ValueError, match="MuZero needs a Discrete action space"):
        MuZero(envs.make_spec("Pendulum-v1"), SMALL)


@pytest.mark.slow(seconds=12)
@pytest.mark.parametrize("learner_devices, value_target, consistency_weight",
                         [((0,), "q_lambda", 0.0), ((0, 1, 2, 3), "search", 2.0)])
def test_learns_from_its_search_policies_with_no_retrace_once_warm(learner_devices, value_target, consistency_weight):
    """The actors' search policies reach the replay (a distribution per step, the action taken
    among the searched ones; with search value targets, their root values too), the learner learns
    (finite losses, the consistency loss's too where it is on), and after the first cycles neither
    the inference cycle nor the learner's calls compile again."""
    cfg = sebulba.LoopConfig(num_envs=8, steps_per_cycle=SMALL.cycle_length, async_mode=False, log_every_s=1e3,
                             learner_devices=learner_devices)
    config = dataclasses.replace(SMALL, value_target=value_target, consistency_weight=consistency_weight)
    with sebulba.GymnasiumLoop(MuZero(CARTPOLE, config), cfg) as loop:
        loop.run(max_cycles=6)
        c = loop.cycle
        fns = [c.step_and_record, c.finish, c.new_buffers, c.cycle_start, c.from_carry,
               *(f for fs in loop.learner._compiled.values() for f in fs)]
        sizes, compiled = [f._cache_size() for f in fns], len(loop.learner._compiled)
        metrics = loop.run(max_cycles=10).train_metrics
        assert [f._cache_size() for f in fns] == sizes and len(loop.learner._compiled) == compiled
        replay = loop.learner.experience.replay
        filled = np.asarray(replay.priorities) > 0
        policy = np.asarray(replay.sequences.action["policy"])[filled]
        action = np.asarray(replay.sequences.action["action"])[filled]
        stored = {k: np.asarray(v)[filled] for k, v in replay.sequences.action.items() if k == "value"}
    assert set(stored) == ({"value"} if value_target == "search" else set())
    assert all(np.isfinite(v).all() and v.std() > 0 for v in stored.values())
    assert filled.sum() >= 8 * 4  # sequences from every cycle after the first
    np.testing.assert_allclose(policy.sum(-1), 1.0, rtol=1e-5)
    assert (np.take_along_axis(policy, action[..., None], -1) > 0).all()  # the action was one the search weighed
    assert float(metrics["learning"]) == 1.0
    for name in ("loss", "value_loss", "reward_loss", "policy_loss", *(["consistency_loss"] * bool(consistency_weight))):
        assert np.isfinite(float(metrics[name])), name
    assert ("consistency_loss" in metrics) == bool(consistency_weight)
    assert 0.0 < float(metrics["entropy"]) <= np.log(2) + 1e-6  # the prior's, over CartPole's two actions


@pytest.mark.slow(seconds=60)
@pytest.mark.timeout(900)
def test_learning_bar_cartpole_at_a_small_budget_and_an_exact_resume(tmp_path):
    """The preset on CartPole-v1 (seed 0) cut at 40k env steps: >= 120 over the last 20 episodes
    (a random policy: ~22; the full bar, >= 475 at 100k on seeds 0-2, is the benchmark's). The same
    run stopped by SIGTERM after a checkpoint and resumed ends in the straight run's last metrics
    row (its replay, search keys and target network come back with the checkpoint)."""
    args = ("--seed=0", "--total_env_steps=40000", "--noprogress")
    out = run_experiment("experiments.muzero", *args, f"--logdir={tmp_path / 'straight'}")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path / "straight")
    assert int(last["env_steps"]) >= 40_000
    assert float(last["episode_return_mean"]) >= 120, last
    # its policy, loaded with the search it was trained with or another simulation count
    obs = np.zeros((3, 4), np.float32)
    for sims in (16, 3):
        policy = sebulba.load_policy(run_dir, agent_config={"num_simulations": sims})
        assert policy.agent.config.num_simulations == sims
        action, _ = policy.act(obs)
        assert action.shape == (3,) and set(action.tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="agent_config: MuZeroConfig has no num_simualtions"):
        sebulba.load_policy(run_dir, agent_config={"num_simualtions": 8})

    logdir = tmp_path / "stopped"
    proc = subprocess.Popen([sys.executable, "-m", "experiments.muzero", *args, "--checkpoint_every=10",
                             f"--logdir={logdir}"], cwd=ROOT, env=child_env(XLA_FLAGS=""), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stopped = wait_for_checkpoint(proc, logdir, at_least=20)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 143, stderr[-3000:]
    assert int(final_row(stopped)["learner_steps"]) < int(last["learner_steps"])
    out = run_experiment("experiments.muzero", "--resume", str(stopped), "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    final = final_row(stopped)
    differ = {k: (final[k], last[k]) for k in last if k not in TIMING and final[k] != last[k]}
    assert not differ, differ


def test_a_run_on_continuous_actions_is_refused_in_one_line(tmp_path):
    out = run_experiment("experiments.muzero", "--env=Pendulum-v1", f"--logdir={tmp_path}")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "error: MuZero needs a Discrete action space; Pendulum-v1 has Box(-2.0, 2.0, (1,), float32) "
        "(--debug shows the traceback)"), out.stderr
    assert not any(tmp_path.iterdir())  # a refused run leaves no directory


def test_a_video_of_an_episode_played_with_its_search(tmp_path):
    """One CartPole-v1 episode of an untrained MuZero's search (the search in each frame's action),
    recorded as a GIF and decoded: the reset frame and one per step, the pole moving."""
    pytest.importorskip("imageio_ffmpeg")
    pytest.importorskip("pygame")
    import imageio.v3 as iio
    import jax

    from sebulba.experiment import video

    agent = MuZero(CARTPOLE, SMALL)
    path = tmp_path / "episode.gif"
    ret, length = video.record(path, agent, agent.init_networks(jax.random.key(0)), "CartPole-v1", {}, seed=0)
    frames = iio.imread(path)
    assert ret == length >= 8 and frames.shape == (length + 1, 400, 600, 3), frames.shape
    assert not np.array_equal(frames[0, 40:], frames[-1, 40:])  # below the label: the cart and pole moved
