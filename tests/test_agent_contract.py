"""Contract of the compiled agent hooks: real arrays through every donated slot, donation really
happens (inputs are consumed), results stay correct, and nothing retraces once warm."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba import keys
from sebulba.agents import RandomAgent, SimplePolicyGradient, SPGConfig
from sebulba.episodes import episode_stats
from sebulba.loop.cycle import CycleFunctions
from sebulba.sharding import LEARNER_AXIS
from sebulba.types import EnvStep, ExperienceLayout, Trajectory
from tests.support.agents import CountingAgent
from tests.support.reference import ReferenceCycle

CARTPOLE = envs.make_spec("CartPole-v1")


def env_step(n, first=False):
    rng = np.random.default_rng(0)
    return EnvStep(rng.normal(size=(n, 4)).astype(np.float32), np.ones(n, np.float32),
                   np.zeros(n, bool), np.zeros(n, bool), np.full(n, first))


def test_donated_slots_are_consumed_and_results_correct():
    agent = CountingAgent(CARTPOLE)
    c = CycleFunctions(agent, steps=3)
    nets = agent.init_networks(jax.random.key(0))
    ss = jnp.arange(4, dtype=jnp.int32)
    es = env_step(4)
    nets = c.act_networks(nets, ss, (), es)
    bufs = c.new_buffers(nets, ss, (), es)
    for t in range(3):
        old_ss, old_bufs = ss, bufs
        action, ss, _, bufs = c.step_and_record(nets, ss, (), es, bufs, t)
        assert old_ss.is_deleted() and all(x.is_deleted() for x in jax.tree.leaves(old_bufs))
    running = (jnp.zeros(4), jnp.zeros(4, jnp.int32))
    traj, ret, length = c.finish(bufs, es, *running, jnp.int32(5), jnp.int32(1), ())
    assert all(x.is_deleted() for x in jax.tree.leaves(bufs)) and running[0].is_deleted()
    np.testing.assert_array_equal(np.asarray(traj.extras), [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]])
    np.testing.assert_array_equal(np.asarray(ss), [3, 4, 5, 6])
    assert traj.env_step.obs.shape == (4, 4, 4) and int(traj.policy_version) == 5 and int(traj.actor) == 1
    np.testing.assert_array_equal(np.asarray(ret), 3.0)  # three rewards of 1 since the cycle began


@pytest.mark.slow(seconds=7)
def test_the_cycle_gives_the_trajectories_of_a_plain_reference_cycle():
    """The donated, packed cycle with carried keys against `tests/support/reference.py`: jitted
    `Agent.step` per env step, the trajectory stacked and the episodes summed with numpy."""
    agent = SimplePolicyGradient(CARTPOLE, SPGConfig(hidden_sizes=(16,)))
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=12, async_mode=False, inferencers_per_device=1, seed=3)
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        inf, networks = loop.inferencers[0], loop.learner.networks
        got = [jax.tree.map(np.asarray, inf.run_cycle(0, networks).trajectory) for _ in range(3)]
        reference = ReferenceCycle(agent, jax.device_get(networks), "CartPole-v1", 4, cfg.seed, inf.key)
        want = [reference.run(12) for _ in range(3)]
        reference.close()
    assert sum(int(t.env_step.first[1:].sum()) for t in want) >= 1  # an episode restarts within the 36 steps
    jax.tree.map(np.testing.assert_array_equal, got, want)


@pytest.mark.slow(seconds=7)
def test_learner_donates_optimizer_and_experience_but_not_networks():
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=5, async_mode=False, inferencers_per_device=1, log_every_s=1e3)
    with sebulba.GymnasiumLoop(SimplePolicyGradient(CARTPOLE, SPGConfig(hidden_sizes=(16,))), cfg) as loop:
        loop.run(max_cycles=2)
        nets, opt = loop.learner.networks, loop.learner.opt_state
        loop.run(max_cycles=1)
        assert all(x.is_deleted() for x in jax.tree.leaves(opt) if isinstance(x, jax.Array))
        assert not any(x.is_deleted() for x in jax.tree.leaves(nets))  # inferencers may still read them
        assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(loop.learner.networks))


@pytest.mark.slow(seconds=6)
def test_no_retrace_once_warm():
    """The first cycles compile (the experience pytree changes once, from its initial value);
    after that neither the inference cycle nor the learner may retrace."""
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=5, async_mode=False, log_every_s=1e3)
    with sebulba.GymnasiumLoop(SimplePolicyGradient(CARTPOLE, SPGConfig(hidden_sizes=(16,))), cfg) as loop:
        loop.run(max_cycles=4)
        c = loop.cycle
        fns = [c.step_and_record, c.finish, c.new_buffers, c.cycle_start, c.from_carry, *(f for fs in loop.learner._compiled.values() for f in fs)]
        sizes = [f._cache_size() for f in fns]
        compiled = len(loop.learner._compiled)
        loop.run(max_cycles=6)
        assert [f._cache_size() for f in fns] == sizes
        assert len(loop.learner._compiled) == compiled


def test_episode_stats_by_hand():
    # one env: rewards after the first obs are 1, 1, (episode ends), reset, 1
    es = EnvStep(
        obs=jnp.zeros((5, 1, 1)),
        reward=jnp.array([[0.0], [1.0], [2.0], [0.0], [1.0]]),
        terminated=jnp.array([[False], [False], [True], [False], [False]]),
        truncated=jnp.zeros((5, 1), bool),
        first=jnp.array([[True], [False], [False], [True], [False]]),
    )
    ret, length, run_ret, run_len = episode_stats(es, jnp.array([0.0]), jnp.array([0]))
    np.testing.assert_array_equal(np.asarray(ret)[:, 0], [np.nan, 3.0, np.nan, np.nan])
    np.testing.assert_array_equal(np.asarray(length)[:, 0], [0, 2, 0, 0])
    assert float(run_ret[0]) == 1.0 and int(run_len[0]) == 1


def test_random_agent_actions_are_valid_for_box_spaces():
    spec = envs.make_spec("Pendulum-v1")
    agent = RandomAgent(spec)
    action, _ = jax.jit(agent.step)((), agent.init_step_state((), 64, jax.random.key(0)), None)
    a = np.asarray(action)
    assert a.shape == (64, 1) and (a >= -2).all() and (a <= 2).all() and a.std() > 0.5


def test_step_state_with_one_array_twice_is_donated_safely():
    """A step state may hold the same array in two leaves; donation must not trip over it."""

    class Aliased(CountingAgent):
        def init_step_state(self, networks, num_envs, key):
            zeros = jnp.zeros(num_envs, jnp.int32)
            return (zeros, zeros)

        def step(self, networks, step_state, env_step):
            a, b = step_state
            return jnp.zeros_like(a), (a + 1, b + 2)

        def update_experience(self, experience, initial_step_state, final_step_state, trajectory):
            return experience

    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=5, async_mode=False, inferencers_per_device=1, log_every_s=1e3)
    with sebulba.GymnasiumLoop(Aliased(CARTPOLE), cfg) as loop:
        inf = loop.inferencers[0]
        inf.run_cycle(0, loop.learner.networks)
        a, b = inf.step_state
        np.testing.assert_array_equal(np.asarray(a), 5)
        np.testing.assert_array_equal(np.asarray(b), 10)


def test_the_constructor_form_a_reloadable_agent_needs_is_checked_by_name():
    from sebulba.agent import reload_problem
    from sebulba.agents import RandomAgent
    from sebulba.agents.ppo import PPO

    assert reload_problem(PPO) is None and reload_problem(SimplePolicyGradient) is None

    class Local(CountingAgent):
        pass

    assert "cannot be imported by name (it is defined in a script or a function)" in reload_problem(Local)
    assert "RandomAgent takes no config dataclass: it cannot be rebuilt from config.json" in reload_problem(RandomAgent)


def test_per_env_step_state_is_what_follows_num_envs_not_what_happens_to_have_its_size():
    """Two envs and a step state holding a raw key (2 uint32s): the key is replicated, the
    per-env counter split over the two learner devices."""

    class RawKey(CountingAgent):
        def init_step_state(self, networks, num_envs, key):
            return {"count": jnp.zeros(num_envs, jnp.int32), "key": jax.random.key_data(key)}

    agent = RawKey(CARTPOLE)
    assert agent.step_state_env_axes(2) == {"count": 0, "key": -1}
    sharding = sebulba.LearnerSharding.create(jax.devices()[:2], 2)
    placed = agent.shard_step_state(agent.init_step_state((), 2, jax.random.key(0)), sharding)
    assert placed["count"].sharding.spec == jax.sharding.PartitionSpec(sebulba.LEARNER_AXIS)
    assert placed["key"].sharding.is_fully_replicated


def test_an_agent_with_the_default_optimize_and_no_loss_is_refused_naming_it():
    class NoLoss(CountingAgent):
        loss = sebulba.Agent.loss  # as if it had never written one

    with pytest.raises(TypeError, match="NoLoss neither writes loss.*write loss for the default optimizer step, or "
                                        "override optimize"):
        NoLoss(CARTPOLE)
    with pytest.raises(NotImplementedError, match="NoLoss neither writes loss"):  # one that skips Agent.__init__
        object.__new__(NoLoss).optimize({"w": jnp.zeros(())}, (), {}, jax.random.key(0))

    class OwnStep(NoLoss):  # an optimize of its own needs no loss
        def optimize(self, networks, opt_state, experience, key):
            return networks, opt_state, experience, {}

    OwnStep(CARTPOLE)
    from sebulba.agents.r2d2 import R2D2
    from sebulba.off_policy import OffPolicyAgent

    assert "loss" not in vars(OffPolicyAgent) and "loss" not in vars(R2D2)  # their optimize: gradient_step


def fake_cycle(rng, num_envs: int, steps: int, first: bool):
    """A cycle of CartPole-shaped trajectories with random observations, actions and rewards."""
    starts = np.zeros((steps + 1, num_envs), bool)
    starts[0] = first
    env_step = EnvStep(rng.normal(size=(steps + 1, num_envs, 4)).astype(np.float32),
                       rng.normal(size=(steps + 1, num_envs)).astype(np.float32),
                       np.zeros((steps + 1, num_envs), bool), np.zeros((steps + 1, num_envs), bool), starts)
    return Trajectory(env_step, rng.integers(0, 2, (steps, num_envs)).astype(np.int32), (),
                      np.full((steps, num_envs), np.nan, np.float32), np.zeros((steps, num_envs), np.int32),
                      np.int32(0), np.int32(0))


@pytest.mark.slow(seconds=5)
@pytest.mark.parametrize("name", ["dqn", "r2d2"])
def test_a_replay_agent_leaves_everything_untouched_until_its_replay_is_ready(name):
    """OffPolicyAgent (prioritized DQN) and R2D2 on two learner devices (vmap over LEARNER_AXIS):
    while the replays are not ready, `optimize` returns the networks, optimizer state and replay
    (priorities included) as they came and zero loss and gradient norm; once ready, one step."""
    from sebulba.agents.dqn import DQN, DQNConfig
    from sebulba.agents.r2d2 import R2D2, R2D2Config

    if name == "dqn":  # 4 envs x 4 steps x 2 devices a cycle, 2-step transitions: ready at the 3rd cycle
        agent, steps = DQN(CARTPOLE, DQNConfig(hidden_sizes=(8,), batch_size=4, replay_capacity=64,
                                                learning_starts=60, replay_ratio=1 / 32, n_step=2,
                                                target_update_period=1, priority_exponent=0.6)), 4
    else:  # a cycle is half a sequence: 4 sequences a device from the 2nd cycle on, ready at the 3rd
        agent, steps = R2D2(CARTPOLE, R2D2Config(core_size=8, hidden_sizes=(8,), sequence_length=8, burn_in=2,
                                                 n_step=2, batch_size=4, replay_capacity=16, min_replay_size=8,
                                                 target_update_period=1)), 4
    key = jax.random.key(0)
    nets = agent.init_networks(key)
    layout = ExperienceLayout(num_actors=1, num_envs=4, steps_per_cycle=steps, num_devices=2)
    state = jax.tree.map(lambda x: jnp.stack([x, x]), (nets, agent.init_optimizer_state(nets),
                                                       agent.init_experience(nets, layout, key)))
    step_state = agent.init_step_state(nets, 4, key)

    def learn(nets, opt_state, experience, trajectory, key):
        experience = agent.update_experience(experience, step_state, step_state, trajectory)
        return experience, agent.optimize(nets, opt_state, experience, key)

    learn = jax.jit(jax.vmap(learn, in_axes=(0, 0, 0, None, None), axis_name=LEARNER_AXIS))
    rng, learned = np.random.default_rng(0), []
    for cycle in range(3):
        filled, (nets, opt_state, experience, metrics) = learn(*state, fake_cycle(rng, 4, steps, cycle == 0), key)
        ready = bool(metrics["learning"][0])
        learned.append(ready)
        if not ready:
            jax.tree.map(np.testing.assert_array_equal, keys.raw((state[0], state[1], filled)),
                         keys.raw((nets, opt_state, experience)))
            assert float(metrics["loss"][0]) == 0 and float(metrics["grad_norm"][0]) == 0
        else:
            assert np.all(np.asarray(nets.updates) == 1) and float(metrics["grad_norm"][0]) > 0
            assert not np.array_equal(np.asarray(filled.replay.priorities), np.asarray(experience.replay.priorities))
        state = (nets, opt_state, experience)
    assert learned == [False, False, True]
