"""Both loops keep the `Loop` contract (sebulba/loop/contract.py), and `make_loop` is the one place
that chooses between them: whoever runs a loop never asks which it is."""

import pytest

import envs
import sebulba
from sebulba.agents import SimplePolicyGradient, SPGConfig
from sebulba.loop.anakin import AnakinLoop
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.contract import Loop, make_loop
from sebulba.loop.loop import GymnasiumLoop

CASES = [  # (config, the loop it gets, synchronous)
    (dict(env_id="CartPole-v1", async_mode=False), GymnasiumLoop, True),
    (dict(env_id="CartPole-v1", async_mode=True), GymnasiumLoop, False),
    (dict(env_id="CartPole-v1", loop="anakin"), AnakinLoop, True),  # the built-in task's stateless step
    (dict(env_id="gymnax/CartPole-v1"), AnakinLoop, True),  # auto: a JAX-native env
]


@pytest.mark.parametrize("kw, kind, synchronous", CASES, ids=["sync", "async", "anakin", "auto-jax"])
def test_make_loop_builds_the_loop_a_config_asks_for_and_both_keep_the_contract(kw, kind, synchronous, tmp_path):
    agent = SimplePolicyGradient(envs.make_spec(kw["env_id"]), SPGConfig(hidden_sizes=(8,)))
    config = sebulba.LoopConfig(num_envs=4, steps_per_cycle=4, inferencers_per_device=1, log_every_s=1e3, **kw)
    with make_loop(agent, config) as loop:
        assert type(loop) is kind and isinstance(loop, Loop)
        assert loop.synchronous is synchronous and not loop.closed and not loop.stop_requested
        assert loop.config is config and loop.staging is not None and loop.eval_device is not None
        loop.run(max_cycles=2)
        loop.request_stop()
        assert loop.stop_requested and len(loop.reports) >= 1
        checkpointer = Checkpointer(CheckpointConfig(str(tmp_path / "ckpt")))
        loop.save(checkpointer, 32, 2)
        assert checkpointer.latest_step() == 2 and loop.restore(checkpointer)["learner_steps"] == 2
        checkpointer.close()
    assert loop.closed
    with pytest.raises(RuntimeError, match="closed"):
        loop.run(max_cycles=1)


@pytest.mark.parametrize("start, steps, saved", [
    (0, range(1, 26), [10, 20]),  # the Sebulba loop: one learner step an iteration, a save at each multiple
    (0, [7, 14, 21, 28, 30], [14, 21, 30]),  # an Anakin call of 7 updates: at the first call past a multiple
    (20, range(21, 41), [30, 40]),  # a resume at 20 counts from there
])
def test_the_pipelines_checkpoints_come_where_the_learner_steps_reach_a_multiple(start, steps, saved):
    from sebulba.loop.middleware import LoopContext, save_checkpoints

    done = []
    save = save_checkpoints(lambda ctx: done.append(ctx.learner_steps), 10, start)
    for n in steps:
        ctx = LoopContext()
        ctx.learner_steps = n
        save(ctx)
    assert done == saved
