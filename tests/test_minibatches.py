"""On-policy minibatches (`Agent.num_minibatches`): each trajectory learned as minibatches of its
envs, one optimizer step each, in turn, each in its own jitted call."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents.impala import Impala, ImpalaConfig
from sebulba.loop.learner import Learner, NonFiniteError
from sebulba.sharding import LearnerSharding
from sebulba.types import ExperienceLayout
from tests.support.agents import CountingAgent, MinibatchSPG

CARTPOLE = envs.make_spec("CartPole-v1")
T = 6


def one_cycle(num_envs: int) -> tuple:
    """A real cycle of num_envs CartPoles (SPG's own trajectory), on the host (RNG keys aside)."""
    cfg = sebulba.LoopConfig(num_envs=num_envs, steps_per_cycle=T, async_mode=False, inferencers_per_device=1,
                             log_every_s=1000.0, seed=5)
    with sebulba.GymnasiumLoop(MinibatchSPG(CARTPOLE, 1), cfg) as loop:
        loop.start_inferencers()
        for _ in range(3):  # a few cycles in: some episodes have ended inside the trajectory
            r = loop.inferencers[0].run_cycle(loop.learner.version, loop.learner.networks)
        host = lambda x: x if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else np.asarray(x)  # noqa: E731
        return jax.tree.map(host, (r.initial_step_state, r.final_step_state, r.trajectory))


def place(cycle, sharding: LearnerSharding, agent=MinibatchSPG(CARTPOLE, 1)):
    initial, final, traj = cycle
    return agent.shard_step_state(initial, sharding), agent.shard_step_state(final, sharding), sharding.trajectory(traj)


def env_slice(cycle, envs_kept: list[int], num_envs: int):
    """The cycle restricted to some envs (per-env leaves: trajectory axis 1, step state axis 0)."""
    initial, final, traj = cycle
    state = lambda x: x[envs_kept] if x.ndim and x.shape[0] == num_envs else x  # noqa: E731
    per_step = lambda x: x[:, envs_kept] if x.ndim > 1 and x.shape[1] == num_envs else x  # noqa: E731
    return jax.tree.map(state, initial), jax.tree.map(state, final), jax.tree.map(per_step, traj)


@pytest.mark.slow(seconds=19)
@pytest.mark.parametrize("learners", [(0,), (1, 2)])
def test_minibatches_are_optimizer_steps_on_each_devices_env_slices_in_turn(learners):
    """2 minibatches of 8 envs equal two plain updates on the envs each minibatch holds: on each
    learner device, the first and the second half of its share."""
    n = 8
    cycle = one_cycle(n)
    devices = [jax.devices()[i] for i in learners]
    key = jax.random.key(11)
    split = Learner(MinibatchSPG(CARTPOLE, 2), LearnerSharding.create(devices, n), ExperienceLayout(1, n, T), key)
    metrics = split.update(*place(cycle, split.sharding))
    assert split.version == 1

    plain = Learner(MinibatchSPG(CARTPOLE, 1), LearnerSharding.create(devices, n // 2), ExperienceLayout(1, n // 2, T), key)
    share = n // len(devices)
    ref = []
    for mb in range(2):
        kept = [d * share + mb * share // 2 + j for d in range(len(devices)) for j in range(share // 2)]
        ref.append(plain.update(*place(env_slice(cycle, kept, n), plain.sharding)))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6),
                 split.networks, plain.networks)
    for k in ref[0]:
        np.testing.assert_allclose(float(metrics[k]), (float(ref[0][k]) + float(ref[1][k])) / 2, rtol=1e-5, atol=1e-6)
    moved = jax.tree.map(lambda a, b: float(np.abs(np.asarray(a) - np.asarray(b)).max()), split.networks,
                         Learner(MinibatchSPG(CARTPOLE, 1), split.sharding, ExperienceLayout(1, n, T), key).networks)
    assert max(jax.tree.leaves(moved)) > 0  # the comparison is not between two untouched networks


@pytest.mark.slow(seconds=11)
def test_impala_cartpole_learns_with_minibatches_in_a_loop():
    """The whole loop with minibatches: IMPALA on CartPole, 16 envs as 2 minibatches of 8 (sync: reproducible)."""
    agent = Impala(CARTPOLE, ImpalaConfig(learning_rate=6e-3, separate_value_torso=True, num_minibatches=2))
    cfg = sebulba.LoopConfig(num_envs=16, steps_per_cycle=20, learner_devices=(1, 2), async_mode=False,
                             inferencers_per_device=1, log_every_s=1000.0, seed=1)
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        ctx = loop.run(max_env_steps=30_000)
        assert ctx.learner_steps == loop.learner.version
        first = float(np.mean(list(loop.window.returns)))
    assert first > 60, f"mean return of the last 20 episodes after 30k steps: {first:.1f} (random play: ~22)"


class NaNInSecondMinibatch(CountingAgent):
    """Its loss turns NaN on the second minibatch it learns from."""

    def num_minibatches(self) -> int:
        return 2

    def loss(self, networks, experience, key):
        poison = jax.numpy.where(experience["cycles"] >= 2, jax.numpy.nan, 0.0)
        return (networks["w"] - 1.0) ** 2 + poison, {"w": networks["w"]}


def test_a_non_finite_minibatch_names_itself_and_keeps_the_state_before_it():
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=5, async_mode=False, inferencers_per_device=1, log_every_s=1000.0)
    with sebulba.GymnasiumLoop(NaNInSecondMinibatch(CARTPOLE), cfg) as loop:
        with pytest.raises(NonFiniteError, match=r"learner step 1 \(minibatch 2 of 2\): metric\(s\) \['loss'\] became "
                           r"NaN or Inf; .* kept as of learner step 0, plus 1 of its minibatches") as err:
            loop.run(max_cycles=3)
        assert err.value.step == 1 and loop.learner.version == 0
        assert float(loop.learner.networks["w"]) == pytest.approx(0.2)  # one SGD step (lr 0.1) from 0 towards 1


class OffPolicyMinibatches(CountingAgent):
    def num_off_policy_optims_per_cycle(self, layout) -> int:
        return 2

    def num_minibatches(self) -> int:
        return 2


def test_minibatches_are_validated():
    with pytest.raises(ValueError, match="num_minibatches must be a positive int, got 0"):
        ImpalaConfig(num_minibatches=0)
    cfg = sebulba.LoopConfig(num_envs=8, learner_devices=(1, 2), log_every_s=1000.0)
    with pytest.raises(ValueError, match=r"num_minibatches=3 must divide each learner device's 4 envs"):
        sebulba.GymnasiumLoop(MinibatchSPG(CARTPOLE, 3), cfg)
    with pytest.raises(ValueError, match=r"OffPolicyMinibatches: num_minibatches\(\) > 1 is for on-policy agents"):
        sebulba.GymnasiumLoop(OffPolicyMinibatches(CARTPOLE), cfg)
    with pytest.raises(ValueError, match=r"num_minibatches\(\) must be a positive int, got 1.5"):
        sebulba.GymnasiumLoop(MinibatchSPG(CARTPOLE, 1.5), cfg)


def test_the_schedule_states_each_rule_once_and_counts_optimizer_steps():
    """`Schedule.of` checks the agent's knobs without a loop, one error per broken rule, and says
    how many optimizer steps a learner step holds."""
    from sebulba.agents.ppo import PPO, PPOConfig
    from sebulba.loop.learner import Schedule

    layout = ExperienceLayout(num_actors=1, num_envs=8, steps_per_cycle=16)
    assert Schedule.of(MinibatchSPG(CARTPOLE, 4), layout).optimizer_steps == 4
    assert Schedule.of(MinibatchSPG(CARTPOLE, 4), layout).calls == 4
    ppo = Schedule.of(PPO(CARTPOLE, PPOConfig(num_epochs=3, num_minibatches=4)), layout)
    assert (ppo.calls, ppo.optimizer_steps) == (1, 12)

    class Negative(CountingAgent):
        def num_off_policy_optims_per_cycle(self, layout) -> int:
            return -1

    with pytest.raises(ValueError, match=r"Negative.num_off_policy_optims_per_cycle\(\) must be a non-negative int"):
        Schedule.of(Negative(CARTPOLE), layout)
    with pytest.raises(ValueError, match=r"num_minibatches=3 must divide the 16 steps of a trajectory"):
        Schedule.of(PPO(CARTPOLE, PPOConfig(num_minibatches=3)), layout)


@pytest.mark.slow(seconds=7)
def test_minibatches_compile_twice_and_never_retrace_once_warm():
    """As with one call per cycle, the learner compiles once per experience layout (initial, then
    steady); the minibatch index is an argument, not a constant, so no minibatch adds a program."""
    cfg = sebulba.LoopConfig(num_envs=8, steps_per_cycle=5, async_mode=False, inferencers_per_device=1, log_every_s=1e3)
    with sebulba.GymnasiumLoop(MinibatchSPG(CARTPOLE, 4), cfg) as loop:
        loop.run(max_cycles=3)
        fns = [*(f for fs in loop.learner._compiled.values() for f in fs), loop.learner._mean_metrics]
        assert len(fns) == 5 and [f._cache_size() for f in fns] == [1] * 5  # (fold, learn) per layout
        loop.run(max_cycles=5)
        assert len(loop.learner._compiled) == 2 and [f._cache_size() for f in fns] == [1] * 5


def test_default_learner_devices_leave_whole_minibatches_on_each():
    """With 4 devices, 6 envs go to 3 learner devices; as 3 minibatches they go to 2 (3 envs each)."""
    from experiments.impala import make_experiment
    from sebulba.experiment.devices import default_devices

    assert default_devices(6) == ((0,), (1, 2, 3))
    assert default_devices(6, 3) == ((0,), (1, 2))
    exp = make_experiment("CartPole-v1", num_envs=6, num_minibatches=3)
    assert exp.loop.learner_devices == (1, 2)


def test_optimizer_steps_are_unrolled_on_cpu_only_when_they_convolve():
    """XLA:CPU runs convolution gradients 10-15x slower inside a loop body (jax-ml/jax#12868): the
    learner unrolls a scan of optimizer steps that convolve, and keeps a loop for the others."""
    from sebulba.loop.learner import _unroll_for_cpu

    kernel = jnp.ones((2, 1, 3, 3))  # OIHW
    conv = lambda c, k: (jax.lax.conv_general_dilated(c, kernel, (1, 1), "SAME").sum(1, keepdims=True), k)  # noqa: E731
    dense = lambda c, k: (c * 2.0, k)  # noqa: E731
    x, key = jnp.ones((1, 1, 4, 4)), jax.random.key(0)
    if jax.default_backend() == "cpu":
        assert _unroll_for_cpu(conv, x, key) is True
    else:  # the GPU check runs this file on the GPU: loops stay loops there
        assert _unroll_for_cpu(conv, x, key) == 1
    assert _unroll_for_cpu(dense, x, key) == 1
