"""Compiling ahead: a loop's constructor compiles the act and the learner's update (while its env
pools build), and its first cycles and updates then compile none of them again."""

import dataclasses
import logging
import re

import jax
import pytest

import envs
import sebulba
from sebulba.agents.impala import Impala
from sebulba.agents.r2d2 import R2D2, R2D2Config
from tests.support.agents import MinibatchSPG

CARTPOLE = envs.make_spec("CartPole-v1")
# The loop's big compiled functions: the act, the cycle's end and the learner's update (jits of
# the shard_mapped `fold`, which folds the cycle into the experience state, and `learn_body`).
BIG = {"step_and_record", "finish", "fold", "learn_body"}
COMPILED = re.compile(r"Finished XLA compilation of jit\((\w+)\)")


@pytest.fixture
def compiles(caplog):
    """The names of the functions XLA compiles from here on, in any thread, read by calling it."""
    jax.config.update("jax_log_compiles", True)
    caplog.set_level(logging.WARNING)
    start = [0]

    def names() -> list[str]:
        records = caplog.records[start[0]:]
        start[0] = len(caplog.records)
        return [m.group(1) for r in records if (m := COMPILED.search(r.getMessage()))]

    yield names
    jax.config.update("jax_log_compiles", False)


def r2d2_agent(spec):
    return R2D2(spec, R2D2Config(core_size=16, hidden_sizes=(16,), sequence_length=8, burn_in=3, n_step=2, batch_size=4,
                                 replay_capacity=64, min_replay_size=4))


def impala_pong():
    from experiments import impala  # flags: imported once per test process

    exp = impala.make_experiment("Pong-v5", num_envs=2, stack_on_device=True)
    loop = dataclasses.replace(exp.loop, steps_per_cycle=4, async_mode=False, learner_devices=(0,))
    # the preset's loop and learner (RMSProp, 2 minibatches) with a small MLP torso: which functions
    # compile, and when, does not depend on the torso, and the ResNet's compile would take most of the time
    small = dataclasses.replace(exp.agent, torso="mlp", hidden_sizes=(8,))
    agent = Impala(envs.make_spec("Pong-v5", **loop.env_kwargs), small)
    return agent, loop


CASES = {
    "2 learner devices, 2 minibatches": lambda: (
        MinibatchSPG(CARTPOLE, 2),
        sebulba.LoopConfig(num_envs=8, steps_per_cycle=5, actor_devices=(0,), learner_devices=(1, 2),
                           async_mode=False)),
    "2 actor devices": lambda: (MinibatchSPG(CARTPOLE, 1), sebulba.LoopConfig(num_envs=4, steps_per_cycle=5,
                                                                             actor_devices=(0, 3), async_mode=False)),
    "R2D2 (recurrent, replay)": lambda: (r2d2_agent(CARTPOLE), sebulba.LoopConfig(num_envs=4, steps_per_cycle=4,
                                                                                    async_mode=False)),
    "IMPALA Pong, frames stacked on the device": impala_pong,
}


@pytest.mark.slow(seconds=10)
@pytest.mark.parametrize("case", CASES)
def test_first_cycles_and_updates_compile_nothing_the_constructor_compiled(case, compiles):
    agent, config = CASES[case]()
    with sebulba.GymnasiumLoop(agent, config) as loop:
        ahead = set(compiles()) & BIG
        assert ahead == BIG, f"the constructor compiled {sorted(ahead)}"
        loop.run(max_cycles=3)
        again = set(compiles()) & (ahead | {"finish"})
    assert not again, f"compiled again after the constructor: {sorted(again)}"
