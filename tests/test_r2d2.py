"""R2D2 agent: burn-in, stored state through the real loop, masking, CLI."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents.r2d2 import R2D2, R2D2Config
from sebulba.replay import sequences as rp
from tests.support.cli import last_metrics, run_experiment

CARTPOLE = envs.make_spec("CartPole-v1")
SMALL = dict(core_size=16, hidden_sizes=(16,), sequence_length=8, burn_in=3, n_step=2, discount=0.9, batch_size=4,
             replay_capacity=64, min_replay_size=4, target_update_period=5)


def loop_config(**kw):
    kw.setdefault("num_envs", 4)
    return sebulba.LoopConfig(steps_per_cycle=SMALL["sequence_length"] // 2, async_mode=False, inferencers_per_device=1,
                              log_every_s=1e3, **kw)


@pytest.mark.slow(seconds=10)
def test_stored_state_is_the_actors_state_at_the_sequence_start():
    agent = R2D2(CARTPOLE, R2D2Config(**SMALL))
    starts = []
    with sebulba.GymnasiumLoop(agent, loop_config()) as loop:
        def record(ctx):
            s = ctx.result.initial_step_state
            starts.append(jax.tree.map(np.asarray, (s.core, s.prev_action)))  # (not the typed RNG key)

        loop.run(max_cycles=3, middleware=[record])
        replay = jax.tree.map(lambda x: np.asarray(x[0]), loop.learner.experience.replay)  # device 0's shard
    # Cycles 0+1 and 1+2 made 4 sequences each, stored with the state at the start of cycles 0 and 1.
    assert int(replay.size) == 8
    (core, prev_action) = replay.sequences.state
    for seq_slot, cycle in ((0, 0), (4, 1)):
        for b in range(4):
            np.testing.assert_array_equal(core.h[seq_slot + b], starts[cycle][0].h[b])
            np.testing.assert_array_equal(core.c[seq_slot + b], starts[cycle][0].c[b])
            assert prev_action[seq_slot + b] == starts[cycle][1][b]
    assert np.abs(starts[1][0].h).sum() > 0  # a real, non-zero recurrent state was stored


@pytest.fixture(scope="session")  # session: its tests share a worker (xdist_group), built once
def filled():
    """A small R2D2 after 3 cycles of CartPole: its learned networks and device 0's replay shard,
    and a batch of 4 sequences sampled from it (one loop for the tests that read a replay)."""
    c = R2D2Config(**SMALL)
    with sebulba.GymnasiumLoop(R2D2(CARTPOLE, c), loop_config()) as loop:
        loop.run(max_cycles=3)
        replay = jax.tree.map(lambda x: x[0], loop.learner.experience.replay)
        nets = loop.learner.networks
    seqs, _, _ = rp.sample(replay, jax.random.key(1), 4)
    return c, nets, seqs


@pytest.mark.slow(seconds=15)
@pytest.mark.xdist_group("r2d2_filled")  # one loop for both
def test_burn_in_passes_no_gradient(filled):
    c, _, seqs = filled
    agent = R2D2(CARTPOLE, c)
    nets = agent.init_networks(jax.random.key(0))

    def loss_of_obs(obs):
        s = seqs._replace(env_step=seqs.env_step._replace(obs=obs))
        return agent._sequence_loss(nets.online, nets.target, s, jnp.ones(4))[0]

    g = np.asarray(jax.jit(jax.grad(loss_of_obs))(seqs.env_step.obs))  # [b, m + 1, 4]
    assert np.all(g[:, : c.burn_in] == 0)  # burn-in observations only warm up the state
    assert np.abs(g[:, c.burn_in :]).sum() > 0


@pytest.mark.slow(seconds=10)
@pytest.mark.xdist_group("r2d2_filled")
def test_td_reduction_sums_or_averages_each_sequence(filled):
    c, nets, seqs = filled
    losses = {r: jax.jit(R2D2(CARTPOLE, dataclasses.replace(c, td_reduction=r))._sequence_loss) for r in ("mean", "sum")}
    es = seqs.env_step
    valid = np.asarray(~(es.terminated | es.truncated)[:, c.burn_in : c.sequence_length]).sum(1)  # per sequence
    for b in range(4):  # weights that pick sequence b alone (the batch mean divides by 4)
        w = 4.0 * jax.nn.one_hot(b, 4)
        (mean, (_, p_mean)), (total, (_, p_sum)) = (losses[r](nets.online, nets.target, seqs, w) for r in ("mean", "sum"))
        assert float(mean) > 0
        np.testing.assert_allclose(float(total), float(mean) * valid[b], rtol=1e-5)
        np.testing.assert_array_equal(np.asarray(p_mean), np.asarray(p_sum))  # priorities do not depend on it
    with pytest.raises(ValueError, match="td_reduction"):
        R2D2Config(td_reduction="max")


@pytest.mark.slow(seconds=7)
def test_apex_epsilons_and_step_resets_state_on_first():
    agent = R2D2(CARTPOLE, R2D2Config(**SMALL))
    nets = agent.init_networks(jax.random.key(0))
    ss = agent.init_step_state(nets, 4, jax.random.key(1))
    np.testing.assert_allclose(np.asarray(ss.epsilon), [0.4 ** (1 + 7 * i / 3) for i in range(4)], rtol=1e-6)
    obs = jnp.ones((4, 4))
    es = sebulba.EnvStep(obs, jnp.zeros(4), jnp.zeros(4, bool), jnp.zeros(4, bool), jnp.array([True, False, True, False]))
    dirty = ss._replace(core=jax.tree.map(lambda x: x + 5.0, ss.core), prev_action=jnp.ones(4, jnp.int32))
    _, clean_out = agent.step(nets, ss, es)
    _, dirty_out = agent.step(nets, dirty, es)
    for i in (0, 2):  # episode starts: the old state is dropped
        np.testing.assert_array_equal(np.asarray(dirty_out.core.h[i]), np.asarray(clean_out.core.h[i]))
    assert not np.array_equal(np.asarray(dirty_out.core.h[1]), np.asarray(clean_out.core.h[1]))


@pytest.mark.parametrize(
    "kwargs, message",
    [({"sequence_length": 7}, "even"), ({"burn_in": 80}, "burn_in"), ({"core": "gru"}, "core"),
     ({"min_replay_size": 0}, "min_replay_size"), ({"n_step": 0}, "n_step")],
)
def test_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        R2D2Config(**kwargs)


def test_cycle_length_must_be_half_a_sequence():
    with pytest.raises(ValueError, match="cycles of sequence_length / 2 = 4"):
        sebulba.GymnasiumLoop(R2D2(CARTPOLE, R2D2Config(**SMALL)), sebulba.LoopConfig(num_envs=4, steps_per_cycle=5))


@pytest.mark.slow(seconds=18)
def test_cli_writes_a_run_directory(tmp_path):
    out = run_experiment("experiments.r2d2", "--total_env_steps=2000", f"--logdir={tmp_path}", "--noprogress", "--core=mlp",
                         "--td_reduction=sum")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, last = last_metrics(tmp_path)
    assert run_dir.name.startswith("r2d2-CartPole-v1-") and int(last["env_steps"]) >= 2000
    assert not (run_dir / "learning_curve.png").exists()  # --nolearning_curve (tests/support/cli.py)
    assert any(p.name.startswith("events.out.tfevents") for p in run_dir.iterdir())


# The CartPole bar (`python -m experiments.r2d2 --loop anakin`, the no-flag run bit for bit: mean return >= 400
# within the preset's 500k env steps, about 90 s on 2 cores) is benchmarks/bench_r2d2.py's, seeds 0-2
# (BENCHMARKS.md), as is the memory bar below, for the suite's 20 minutes; R2D2 learning in CI:
# tests/test_structured_learning.py (a Dict-observation task within 30k env steps).
# The memory bar (LSTM >= 3x MLP on CartPoleNoVelocity-v1, 500k steps each: about 5 minutes on 2 cores) is
# benchmarks/bench_r2d2.py's, over seeds 0-2 (BENCHMARKS.md): the suite must stay under 20 minutes.
